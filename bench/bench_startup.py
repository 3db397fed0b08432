"""The floor of a cached command: issue 12's "≤ 1 s once cached" rows, each run again and again on a cache whose
answers are all stored, so that what is timed is starting Python, importing, opening the cache and printing.

    python bench/bench_startup.py EXPORT.sqlite [--cache-dir DIR] [--nsysql PATH ...] [--runs 7]

Prepares the cache once (a first `summarize` with the answers ahead in the command, then each command once so
its answer is stored), then runs every command `--runs` times per nsysql executable, the executables interleaved
(two versions compare fairly on a shared machine: give `--nsysql` twice, e.g. a wrapper that runs another
environment). Each run is a fresh process, output to /dev/null; prints the median and the lowest wall and CPU
(user + system) seconds per command as Markdown, with the machine and date.
"""
from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMMANDS = [
    ("summarize", ["summarize"]),
    ("steps", ["steps"]),
    ("layers", ["layers"]),
    ("memcpy", ["memcpy"]),
    ("report nvtx_gpu_proj_sum", ["report", "nvtx_gpu_proj_sum"]),
    ("gaps", ["gaps"]),
    ("overhead", ["overhead"]),
]


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds (user + system of the child) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("export", type=Path)
    p.add_argument("--cache-dir", type=Path, default=None, help="a cache directory to use (kept); default: a new one")
    p.add_argument("--nsysql", action="append", default=[], help="an nsysql executable (repeat to compare)")
    p.add_argument("--runs", type=int, default=7)
    a = p.parse_args()
    executables = a.nsysql or [str(Path(sys.executable).with_name("nsysql"))]
    cache = a.cache_dir or Path(tempfile.mkdtemp(prefix="nsysql-startup-"))
    env = dict(os.environ, NSYSQL_CACHE_DIR=str(cache), NSYSQL_AHEAD="foreground", COLUMNS="100")
    # bytecode: without it every process compiles each module it imports again (0.1-0.2 s a process where the
    # environment sets PYTHONDONTWRITEBYTECODE, as this project's machine does, and a tree is fresh or edited)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    for _, args in COMMANDS:  # every answer stored before anything is timed
        subprocess.run([executables[0], *args, str(a.export)], env=env, stdout=subprocess.DEVNULL, check=True)
    runs: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for _ in range(a.runs):
        for label, args in COMMANDS:
            for exe in executables:
                runs.setdefault((label, exe), []).append(timed([exe, *args, str(a.export)], env))
    print(f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}, {time.strftime('%Y-%m-%d %H:%M')}, load {os.getloadavg()[0]:.1f}; "
          f"export {a.export.name}; {a.runs} runs each, interleaved")
    print("\n| command | nsysql | median wall s | lowest wall s | median CPU s | lowest CPU s |")
    print("|---|---|---:|---:|---:|---:|")
    for (label, exe), got in runs.items():
        walls, cpus = [w for w, _ in got], [c for _, c in got]
        print(f"| {label} | {exe} | {statistics.median(walls):.2f} | {min(walls):.2f} | "
              f"{statistics.median(cpus):.2f} | {min(cpus):.2f} |")


if __name__ == "__main__":
    main()
