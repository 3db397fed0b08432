"""Where a first open's CPU goes: each stage timed on one thread, so its seconds are its CPU cost.

    python bench/bench_stages.py EXPORT.sqlite [--workdir DIR] [--top 30]

Runs `nsysql summarize EXPORT` on an empty cache with one build statement at a time (NSYSQL_BUILD_WORKERS=1),
one DuckDB thread (NSYSQL_THREADS=1) and the answers ahead in the command (NSYSQL_AHEAD=foreground, so that all
of a first open's work is timed), and reads the stage log (NSYSQL_STAGE_LOG, nsysql/core/progress.py). Wall-clock
timings on a shared 2-core machine swing with whatever else runs; one thread's stage times swing much less, and
their sum is the CPU a two-core first open has to spread over its cores (docs/performance.md uses it to say what a
target needs). Prints Markdown: the phases (build, answers ahead, summarize's sections) and the slowest stages,
the critical path's Python work (graph build, walk, what-if replays) among them as stages of their own.
"""
from __future__ import annotations

import argparse
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("export", type=Path)
    p.add_argument("--workdir", type=Path, default=None)
    p.add_argument("--nsysql", default=str(Path(sys.executable).with_name("nsysql")))
    p.add_argument("--top", type=int, default=30, help="how many of the slowest stages to list")
    p.add_argument("--ahead", choices=("foreground", "off"), default="foreground",
                   help="foreground: the answers ahead timed too (all of a first open's work); off: only what "
                        "summarize computes before it prints")
    a = p.parse_args()
    work = a.workdir or Path(tempfile.mkdtemp(prefix="nsysql-stages-"))
    work.mkdir(parents=True, exist_ok=True)
    cache, log = work / "cache-stages", work / "stages.tsv"
    if cache.exists():
        sys.exit(f"{cache} exists: give an empty --workdir (the first open must build the cache)")
    log.unlink(missing_ok=True)
    env = dict(os.environ, NSYSQL_CACHE_DIR=str(cache), NSYSQL_STAGE_LOG=str(log),
               NSYSQL_BUILD_WORKERS="1", NSYSQL_THREADS="1", NSYSQL_AHEAD=a.ahead, COLUMNS="100")
    started = time.perf_counter()
    done = subprocess.run([a.nsysql, "summarize", str(a.export)], env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"nsysql summarize failed: {done.stderr.strip()}")
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    rows = [line.split("\t") for line in log.read_text().splitlines()]
    print(f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}, {time.strftime('%Y-%m-%d %H:%M')}; export {a.export.name}")
    print(f"one thread: {wall:.2f} s wall, {usage.ru_utime + usage.ru_stime:.1f} CPU s, "
          f"peak RSS {usage.ru_maxrss // 1024:,} MiB\n")
    phases: dict[str, float] = {}
    for title, _, seconds, *_ in rows:
        phases[title] = phases.get(title, 0.0) + float(seconds)
    print("| phase | stage s |\n|---|---:|")
    for title, seconds in sorted(phases.items(), key=lambda kv: -kv[1]):
        print(f"| {title} | {seconds:.2f} |")
    staged = sum(phases.values())
    print(f"| not in a stage (start-up, SQLite's integrity check, rendering) | {wall - staged:.2f} |\n")
    print("| phase | stage | s | rows |\n|---|---|---:|---:|")
    for title, stage, seconds, rows_done, *_ in sorted(rows, key=lambda r: -float(r[2]))[: a.top]:
        count = f"{int(rows_done):,}" if rows_done else ""
        print(f"| {title} | {stage} | {float(seconds):.2f} | {count} |")


if __name__ == "__main__":
    main()
