"""Time and peak memory of the job analyses on N simulated per-rank exports (bench/simulate_ranks.py).

    python bench/bench_ranks.py WORK_DIR [--ranks 8 64 512] [--only link,comm,...]

For each N: WORK_DIR/simN holds the simulated exports (written when missing) and WORK_DIR/cacheN their caches,
built first, one export after another, untimed but reported (a rank's first open is one export's, linear by
construction). Then each analysis runs in a fresh process on the warm caches (its peak RSS its own, from
getrusage), timed wall s (CPU s):

- link: the exports opened as one job (nsysql.open_job): clocks aligned and collectives matched
  (nsysql/answers/job.py link);
- comm: wait/transfer per rank and step, the straggler of each step over every rank (Job.comm);
- straggler: the straggler finding (findings.straggler over the job's rows, as nsysql findings gives it first);
- critical-path: the job's critical path of one analysed step, the ranks' graphs merged (Job.critical_path).

Each later analysis includes `link` (a process opens the job first); the row gives its own time after it. Prints
Markdown with the machine, the date and the load; checks that the straggler is the planted rank.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
STAGES = ("link", "comm", "straggler", "critical-path")


def child(work: Path, n: int, stage: str) -> None:
    """One stage in this process: prints one JSON line."""
    import resource

    import polars as pl

    import nsysql
    paths = sorted((work / f"sim{n}").glob("rank_*.sqlite"))
    cache = work / f"cache{n}"
    late = json.loads((work / f"sim{n}" / "ranks.json").read_text())["late_rank"]
    out: dict = {"n": n, "stage": stage}

    def timed(fn):
        wall, cpu = time.perf_counter(), time.process_time()
        got = fn()
        return got, time.perf_counter() - wall, time.process_time() - cpu

    job, out["link_s"], out["link_cpu_s"] = timed(lambda: nsysql.open_job(paths, cache_dir=cache))
    answer = None
    if stage == "comm":
        comm, out["s"], out["cpu_s"] = timed(job.comm)
        answer = sorted(set(comm.filter(pl.col("straggler"))["rank"].to_list()))
    elif stage == "straggler":
        from nsysql.answers.job_views import straggler_finding
        found, out["s"], out["cpu_s"] = timed(lambda: straggler_finding(job.exports))
        answer = found["title"].to_list()[:1]
    elif stage == "critical-path":
        from nsysql.answers import critical_path
        steps = sorted(set(critical_path.steps(job.exports[0])["step"].to_list()))
        step = steps[len(steps) // 2]
        comp, out["s"], out["cpu_s"] = timed(lambda: job.critical_path(step=step))
        out["step"] = step
        answer = comp.height
    else:
        out["s"], out["cpu_s"] = out["link_s"], out["link_cpu_s"]
        answer = job.alignment.collectives
    job.close()
    out["answer"], out["late_rank"] = answer, late
    out["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(out))


def prepare(work: Path, n: int) -> float:
    """The simulated exports (when missing) and their caches, one export at a time; seconds spent building."""
    sim = work / f"sim{n}"
    if not (sim / "ranks.json").exists():
        subprocess.run([sys.executable, str(HERE / "simulate_ranks.py"), str(sim), "--ranks", str(n)], check=True)
    import nsysql
    start = time.perf_counter()
    for p in sorted(sim.glob("rank_*.sqlite")):
        with nsysql.open(p, cache_dir=work / f"cache{n}") as ex:
            ex.run("analysis.comm_instances")
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("work", type=Path)
    ap.add_argument("--ranks", type=int, nargs="+", default=[8, 64, 512])
    ap.add_argument("--only", default=",".join(STAGES), help="comma-separated stages")
    ap.add_argument("--child", nargs=2, metavar=("N", "STAGE"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.work, int(args.child[0]), args.child[1])
        return
    stages = [s for s in args.only.split(",") if s]
    load = os.getloadavg()
    print(f"{platform.node()}, {os.cpu_count()} cores, {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} "
          f"UTC, load {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} at the start (a shared machine)\n")
    print("| ranks | analysis | wall s | CPU s | + link wall s | peak RSS MB | answer |")
    print("|---|---|---|---|---|---|---|")
    for n in args.ranks:
        built = prepare(args.work, n)
        print(f"| {n} | caches built (untimed before, one at a time) | {built:.1f} | | | | |", flush=True)
        for stage in stages:
            res = subprocess.run([sys.executable, __file__, str(args.work), "--child", str(n), stage],
                                 capture_output=True, text=True)
            if res.returncode != 0:
                print(f"| {n} | {stage} | failed: {res.stderr.strip().splitlines()[-1:]} | | | | |", flush=True)
                continue
            r = json.loads(res.stdout.strip().splitlines()[-1])
            link = "" if stage == "link" else f"{r['link_s']:.1f}"
            print(f"| {n} | {stage} | {r['s']:.2f} | {r['cpu_s']:.2f} | {link} | {r['rss_mb']:.0f} | "
                  f"{r['answer']} (late rank {r['late_rank']}) |", flush=True)
    load = os.getloadavg()
    print(f"\nload {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} at the end")


if __name__ == "__main__":
    main()
