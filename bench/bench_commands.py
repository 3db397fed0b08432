"""Time each command of issue 12's table on one replicated export: wall, CPU and peak RSS per call.

    python bench/bench_commands.py EXPORT.sqlite [--workdir DIR] [--repeat 2]

EXPORT is a replicated export (bench/replicate.py; bench/bench_summarize.py leaves one as DIR/x220.sqlite).
Each measurement is a fresh `nsysql` child process, output to /dev/null (or a file for -f parquet):
- `summarize, first open`: empty cache directory (normalize + every section).
- `first open, 9 reports`: empty cache directory, then the nine NVIDIA reports one call each (csv),
  timed together as issue 12 counts them.
- every other row: twice, `first use` (the first time that command runs on an export another command opened
  first: the cache as `nsysql report nvtx_sum` left it, restored from a copy before each row; what the first open
  answers ahead, nsysql/answers/ahead.py, is read there) and `kept` (the same command again, reading its stored answer).
  Issue 12's tiers: summarize, steps, layers, memcpy and report nvtx_gpu_proj_sum are answered on the first open,
  so their target applies to `first use`; gaps, overhead (by range) and the full kernel table are built on
  first use and kept, so theirs applies to `kept`.
The first open answers the common commands ahead in a background process after the command returns
(nsysql/answers/ahead.py): its time and CPU are not in the first-open rows; the script waits for it to end before the
next row (and says how long after the command it ended), so each `first use` row starts from the cache with
every answer ahead stored. The rows print as a Markdown table for docs/performance.md.
"""
from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

NINE = ["cuda_api_sum", "cuda_gpu_kern_sum", "cuda_gpu_mem_size_sum", "cuda_gpu_mem_time_sum", "cuda_kern_exec_sum",
        "nvtx_gpu_proj_sum", "nvtx_kern_sum", "nvtx_sum", "osrt_sum"]
# (label, arguments); {export} is the export, {out} a scratch file
CACHED = [
    ("summarize", ["summarize", "{export}"]),
    ("gaps (default)", ["gaps", "{export}"]),
    ("kernels -f parquet", ["kernels", "{export}", "-f", "parquet", "-o", "{out}"]),
    ("kernels -f csv", ["kernels", "{export}", "-f", "csv", "-o", "{out}.csv"]),
    ("steps", ["steps", "{export}"]),
    ("overhead", ["overhead", "{export}"]),
    ("report nvtx_gpu_proj_sum", ["report", "nvtx_gpu_proj_sum", "{export}"]),
    ("layers", ["layers", "{export}"]),
    ("memcpy", ["memcpy", "{export}"]),
]


def measured(cmds: list[list[str]], env: dict) -> tuple[float, float, int]:
    """Run the commands one after another in a wrapper process; wall s, CPU s and the largest child peak RSS."""
    script = ("import json, resource, subprocess, sys, time\n"
              "cmds = json.loads(sys.argv[1]); t = time.perf_counter()\n"
              "for c in cmds:\n"
              "    r = subprocess.run(c, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)\n"
              "    if r.returncode: sys.exit(' '.join(c) + ': ' + r.stderr)\n"
              "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
              "print(time.perf_counter() - t, u.ru_utime + u.ru_stime, u.ru_maxrss)\n")
    import json
    out = subprocess.run([sys.executable, "-c", script, json.dumps(cmds)], env=env, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"benchmark command failed: {out.stderr}")
    wall, cpu, rss_kb = out.stdout.split()
    return float(wall), float(cpu), int(rss_kb) // 1024


def wait_for_answers_ahead(cache: Path) -> float:
    """Wait until no background run answers ahead in `cache` (its marker file names a live pid); seconds waited."""
    started = time.perf_counter()
    while True:
        alive = False
        for marker in cache.glob("*.answers/.ahead-running"):
            try:
                os.kill(int(marker.read_text().strip()), 0)
                alive = True
            except (OSError, ValueError):
                pass
        if not alive:
            return time.perf_counter() - started
        time.sleep(0.2)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("export", type=Path)
    p.add_argument("--workdir", type=Path, default=None)
    p.add_argument("--nsysql", default=str(Path(sys.executable).with_name("nsysql")))
    p.add_argument("--only", action="append", default=[], help="run only rows whose label starts with this")
    a = p.parse_args()
    work = a.workdir or Path(tempfile.mkdtemp(prefix="nsysql-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    cache = work / "cache-commands"
    out = work / "out.parquet"
    env = dict(os.environ, NSYSQL_CACHE_DIR=str(cache), COLUMNS="100")
    # bytecode: without it every process compiles each module it imports again (0.1-0.2 s a process where the
    # environment sets PYTHONDONTWRITEBYTECODE, as this project's machine does, and a tree is fresh or edited)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    export = str(a.export)

    def command(args: list[str]) -> list[str]:
        return [a.nsysql] + [x.replace("{export}", export).replace("{out}", str(out)) for x in args]

    def wanted(label: str) -> bool:
        return not a.only or any(label.startswith(o) for o in a.only)

    print(f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"{time.strftime('%Y-%m-%d')}")
    ahead_ends: list[tuple[str, float]] = []
    print("| command | state | wall s | CPU s | peak RSS MiB |")
    print("|---|---|---:|---:|---:|")
    if wanted("first open, 9 reports"):
        shutil.rmtree(cache, ignore_errors=True)
        wall, cpu, rss = measured([command(["report", r, "{export}", "-f", "csv"]) for r in NINE], env)
        print(f"| the nine NVIDIA reports, 9 calls | first open | {wall:.2f} | {cpu:.1f} | {rss:,} |", flush=True)
        ahead_ends.append(("the nine reports", wait_for_answers_ahead(cache)))
    shutil.rmtree(cache, ignore_errors=True)
    wall, cpu, rss = measured([command(["summarize", "{export}"])], env)
    print(f"| summarize | first open | {wall:.2f} | {cpu:.1f} | {rss:,} |", flush=True)
    ahead_ends.append(("summarize", wait_for_answers_ahead(cache)))
    # the cache as another command's first open leaves it (what that open answers ahead, e.g. summarize's
    # sections, included), kept as a copy so that every `cached` row starts from the same state
    shutil.rmtree(cache, ignore_errors=True)
    wall, cpu, rss = measured([command(["report", "nvtx_sum", "{export}"])], env)
    print(f"| report nvtx_sum | first open | {wall:.2f} | {cpu:.1f} | {rss:,} |", flush=True)
    ahead_ends.append(("report nvtx_sum", wait_for_answers_ahead(cache)))
    opened = work / "cache-opened"
    shutil.rmtree(opened, ignore_errors=True)
    shutil.copytree(cache, opened)
    for label, args in CACHED:
        if not wanted(label):
            continue
        shutil.rmtree(cache)
        shutil.copytree(opened, cache)
        wall, cpu, rss = measured([command(args)], env)
        print(f"| {label} | first use | {wall:.2f} | {cpu:.1f} | {rss:,} |", flush=True)
        wall, cpu, rss = measured([command(args)], env)
        print(f"| {label} | kept | {wall:.2f} | {cpu:.1f} | {rss:,} |", flush=True)
    print("\nThe answers ahead (a background process) ended " + "; ".join(
        f"{waited:.1f} s after {what} returned" for what, waited in ahead_ends) + ".")


if __name__ == "__main__":
    main()
