"""How long the critical path and what-if take on one export, stage by stage (docs/critical-path.md).

    python bench/bench_critical_path.py EXPORT [--cache-dir DIR]

Opens EXPORT (the cache built first, untimed), then times, in this process, wall s (CPU s): the graph's queries
(analysis._cp_*), one step walked and replayed on the graph of its span (`--step N`, the middle analysed step),
the graph built in Python, the walk of every analysed step, an unchanged replay of every analysed
step, and what summarize and findings add on their first run: the sampled walk (critical_path.SUMMARY_BUDGET) and
the findings' predicted gains (one replay per fired rule that has a model). Prints Markdown with the machine, the
date and the graph's size. On the bench export: `python bench/replicate.py` as docs/performance.md says.
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import time
from pathlib import Path

QUERIES = ("_cp_steps", "_cp_calls", "_cp_ops", "_cp_ranges", "_cp_os_waits", "_cp_event_waits", "_cp_threads")


def timed(label: str, rows: list, fn):
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    rows.append((label, time.perf_counter() - wall, time.process_time() - cpu))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("export", type=Path)
    ap.add_argument("--cache-dir", type=Path)
    args = ap.parse_args()
    import nsysql
    from nsysql.answers import critical_path as cp
    from nsysql.answers import what_if
    from nsysql.answers.findings import run_findings
    from nsysql.errors import MissingDataError

    ex = nsysql.open(args.export, cache_dir=args.cache_dir)
    ex.run("analysis.steady_steps")  # the cache and the steps, untimed
    rows: list = []

    def queries():
        for q in QUERIES:
            try:
                ex.run(f"analysis.{q}")
            except MissingDataError:
                pass
    timed("graph queries (analysis._cp_*)", rows, queries)
    numbers = sorted(set(cp.steps(ex)["step"].to_list()))
    middle = numbers[len(numbers) // 2] if numbers else None  # `--step N`: the graph of the step's span only
    timed(f"one step (--step {middle}): graph of its span and walk", rows, lambda: cp.composition(ex, step=middle))
    timed(f"one step (--step {middle}): unchanged replay", rows, lambda: what_if.step_times(ex, [], step=middle))
    g = timed("graph built (Python)", rows, lambda: cp.graph(ex))
    comp = timed("walk, every analysed step", rows, lambda: cp.composition(ex))
    timed("replay, every analysed step", rows, lambda: what_if.step_times(ex, []))
    sample = timed("summarize's sampled walk (first run)", rows,
                   lambda: cp.composition(ex, budget=cp.SUMMARY_BUDGET))
    findings = run_findings(ex)  # with its gains kept from an earlier run or not: the gains are timed alone below
    timed("findings' predicted gains (first run)", rows, lambda: what_if.predicted_gains(ex, findings))
    print(f"# bench_critical_path: {args.export.name}\n")
    print(f"{platform.node()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, load {os.getloadavg()[0]:.1f}; "
          f"graph {len(g):,} nodes, {comp.height} analysed steps, summarize's sample {sample['step'].n_unique()} "
          f"steps, {findings.height} findings\n")
    print("| stage | wall s | CPU s |\n|---|---|---|")
    for label, wall, cpu in rows:
        print(f"| {label} | {wall:.2f} | {cpu:.2f} |")


if __name__ == "__main__":
    main()
