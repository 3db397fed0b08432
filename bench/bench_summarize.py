"""Time `nsysql summarize` cold (empty cache), warm and answered on an export replicated N times.

    python bench/bench_summarize.py BASE.sqlite[.xz] --copies 20 200 [--skip OSRT_API] [--workdir DIR]

For each N: bench/replicate.py builds the N-copy export, then `nsysql summarize` runs in a child process
three times: with a fresh cache directory (cold: normalize + summarize), with the normalized cache but its
stored answers removed (warm: every section recomputed from the tables), and once more (answered: the
sections read from the answers the warm run stored, nsysql/store/stored.py). Wall time and the child's peak RSS
(ru_maxrss) are printed as a Markdown table, with the row counts of the replicated export, for
docs/performance.md.
"""
from __future__ import annotations

import argparse
import lzma
import os
import platform
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def measured(cmd: list[str], env: dict) -> tuple[float, int]:
    """Run cmd under a fresh Python wrapper so its own peak RSS is reported."""
    wrapper = [sys.executable, "-c",
               "import resource, subprocess, sys, time;"
               "t=time.perf_counter(); r=subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL);"
               "w=time.perf_counter()-t;"
               "print(w, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.exit(r.returncode)"] + cmd
    out = subprocess.run(wrapper, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"benchmark command failed: {' '.join(cmd)}\n{out.stderr}")
    wall, rss_kb = out.stdout.split()
    return float(wall), int(rss_kb) // 1024


def counts(path: Path) -> dict[str, int]:
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    out = {}
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    for label, table in (("kernels", "CUPTI_ACTIVITY_KIND_KERNEL"), ("runtime", "CUPTI_ACTIVITY_KIND_RUNTIME"),
                         ("nvtx", "NVTX_EVENTS"), ("osrt", "OSRT_API")):
        out[label] = db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] if table in tables else 0
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("base", type=Path)
    p.add_argument("--copies", type=int, nargs="+", default=[20, 200])
    p.add_argument("--skip", action="append", default=[])
    p.add_argument("--workdir", type=Path, default=None)
    p.add_argument("--nsysql", default=str(Path(sys.executable).with_name("nsysql")))
    a = p.parse_args()
    work = a.workdir or Path(tempfile.mkdtemp(prefix="nsysql-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    base = a.base
    if base.suffix == ".xz":
        plain = work / "base.sqlite"
        with lzma.open(base) as src, plain.open("wb") as dst:
            shutil.copyfileobj(src, dst)
        base = plain
    env = dict(os.environ, NSYSQL_AHEAD="foreground")  # all of a first open timed in it, as when these rows were recorded
    # bytecode: without it every process compiles each module it imports again (0.1-0.2 s a process where the
    # environment sets PYTHONDONTWRITEBYTECODE, as this project's machine does, and a tree is fresh or edited)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    print(f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print("| copies | kernels | runtime calls | NVTX events | OS runtime calls | cold s | cold peak RSS MiB | warm s "
          "| warm peak RSS MiB | answered s | answered peak RSS MiB |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    results = {}
    stages: dict[int, Path] = {}
    for n in a.copies:
        export = work / f"x{n}.sqlite"
        if not export.exists():
            subprocess.run([sys.executable, str(HERE / "replicate.py"), str(base), str(export), "--copies", str(n)]
                           + [x for s in a.skip for x in ("--skip", s)], check=True, stderr=subprocess.DEVNULL)
        c = counts(export)
        cache = work / f"cache{n}"
        shutil.rmtree(cache, ignore_errors=True)
        cmd = [a.nsysql, "summarize", str(export), "--format", "json", "--cache-dir", str(cache)]
        stage_log = work / f"stages{n}.tsv"
        stage_log.unlink(missing_ok=True)
        cold, cold_rss = measured(cmd, dict(env, NSYSQL_STAGE_LOG=str(stage_log)))  # nsysql/core/progress.py
        stages[n] = stage_log
        for stored in cache.glob("*.answers"):
            shutil.rmtree(stored)
        warm, warm_rss = measured(cmd, env)
        answered, answered_rss = measured(cmd, env)
        results[n] = cold
        print(f"| {n} | {c['kernels']} | {c['runtime']} | {c['nvtx']} | {c['osrt']} | {cold:.2f} | {cold_rss} "
              f"| {warm:.2f} | {warm_rss} | {answered:.2f} | {answered_rss} |", flush=True)
    if len(results) >= 2:
        lo, hi = min(results), max(results)
        print(f"\ncold time ratio {hi}x/{lo}x = {results[hi] / results[lo]:.1f} (linear would be {hi / lo:.0f})")
    for n, log in stages.items():
        print_stages(n, log)


def print_stages(copies: int, log: Path, top: int = 12) -> None:
    """The cold run's slowest stages: normalize statements and summarize queries (NSYSQL_STAGE_LOG)."""
    rows = [line.split("\t") for line in log.read_text().splitlines()] if log.exists() else []
    by_phase: dict[str, float] = {}
    for title, _, seconds, *_ in rows:
        by_phase[title] = by_phase.get(title, 0.0) + float(seconds)
    print(f"\ncold run at {copies} copies, seconds per phase (sum of its stages): "
          + ", ".join(f"{t} {s:.2f}" for t, s in by_phase.items()))
    print("| phase | stage | s | rows |\n|---|---|---:|---:|")
    for title, stage, seconds, rows_done, *_ in sorted(rows, key=lambda r: -float(r[2]))[:top]:
        print(f"| {title} | {stage} | {float(seconds):.2f} | {int(rows_done):,} |" if rows_done
              else f"| {title} | {stage} | {float(seconds):.2f} | |")


if __name__ == "__main__":
    main()
