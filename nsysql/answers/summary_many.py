"""`nsysql summarize A B ...`: several exports (ranks or runs) side by side — per-export totals with the
ones whose GPU time deviates, per-range spread (min/median/max), and the slowest export of every step."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import polars as pl

from nsysql.answers import multi
from nsysql.answers.summary import Section
from nsysql.core import units
from nsysql.errors import MissingDataError, NsysqlError
from nsysql.store.open_many import open_all


def build(paths: list[Path], opener: Callable, top: int = 10, deviation_pct: float = 10.0) -> list[Section]:
    names = multi.labels(paths)
    totals: list[dict] = []
    ranges: list[pl.DataFrame] = []
    steps: list[pl.DataFrame] = []
    failures: list[tuple[str, str]] = []
    for path, name, ex in zip(paths, names, open_all(paths, names, opener)):  # several at a time
        if isinstance(ex, NsysqlError):  # cannot be opened: skipped and named; the command fails only when none succeeds
            failures.append((name, str(ex)))
            continue
        try:
            _one(ex, name, multi.rank_of(path), totals, ranges, steps)
        except MissingDataError as exc:  # skipped and named likewise
            failures.append((name, str(exc)))
    if not totals:  # one error line naming them all
        raise NsysqlError("every export failed: " + "; ".join(f"{name}: {reason}" for name, reason in failures))
    for name, reason in failures:
        multi.note_skipped(name, reason)
    sections = [_totals(pl.DataFrame(totals), deviation_pct)]
    if ranges:
        sections.append(_range_spread(pl.concat(ranges), len(totals), top))
    if steps and pl.concat(steps).height:
        sections.append(_slowest_per_step(pl.concat(steps)))
    return sections


def _one(ex, name: str, rank: int | None, totals: list, ranges: list, steps: list) -> None:
    """One export's rows, appended only once all of them are computed (a failure leaves no partial rows)."""
    r = s = None
    with ex:
        tag = dict(export=name, rank=rank)
        t = ex.run("analysis.export_totals").row(0, named=True)
        if ex.has("nvtx_range") and ex.has("kernel"):
            r = (ex.gpu_time_by_range().filter(~pl.col("is_op_marker"))  # user ranges only
                 .select("range_name", "inclusive_busy_ns"))
        if ex.has("nvtx_range"):
            s = ex.steps().select("step", "wall_ns", "gpu_busy_ns")
    totals.append({**tag, **{k: t[k] for k in ("duration_ns", "kernels", "kernel_ns", "gpu_busy_ns")}})
    for frame, into in ((r, ranges), (s, steps)):
        if frame is not None:
            into.append(frame.with_columns(pl.lit(name).alias("export"), pl.lit(tag["rank"], pl.Int64).alias("rank")))


def _totals(df: pl.DataFrame, deviation_pct: float) -> Section:
    median = df["gpu_busy_ns"].median() or 0
    df = df.with_columns(
        (100.0 * (pl.col("gpu_busy_ns") - median) / median if median else pl.lit(None, pl.Float64))
        .alias("busy_vs_median_pct"))
    df = df.with_columns((pl.col("busy_vs_median_pct").abs() > deviation_pct).alias("deviates"))
    odd = df.filter(pl.col("deviates"))["export"].to_list()
    note = (f"median GPU busy {units.duration(median)}; exports more than {deviation_pct:g}% from it: "  # type: ignore[arg-type]
            + (", ".join(odd) if odd else "none"))
    return Section("Exports", df, note, key="exports", optional=("rank",), own_decimals={"busy_vs_median_pct": 1},
                   own_units={"duration_ns": "ns", "kernels": "count", "kernel_ns": "ns", "gpu_busy_ns": "ns",
                              "busy_vs_median_pct": "pct"})


def _range_spread(df: pl.DataFrame, n_exports: int, top: int) -> Section:
    slowest = (df.sort(["inclusive_busy_ns", "export"], descending=[True, False])
                 .group_by("range_name", maintain_order=True).first()
                 .select("range_name", pl.col("export").alias("slowest_export"), pl.col("rank").alias("slowest_rank")))
    spread = (df.group_by("range_name")
                .agg(pl.len().alias("exports"), pl.col("inclusive_busy_ns").min().alias("min_ns"),
                     pl.col("inclusive_busy_ns").median().alias("median_ns"),
                     pl.col("inclusive_busy_ns").max().alias("max_ns"))
                .with_columns((pl.col("max_ns") / pl.col("min_ns")).alias("max_over_min"))
                .join(slowest, on="range_name")
                .sort(["median_ns", "range_name"], descending=[True, False]).head(top))
    note = (f"GPU busy time (union of intervals) of the ops launched inside each range, over {n_exports} exports; "
            "`nsysql report nvtx_gpu_proj_sum A B ...` gives NVIDIA's projection per export")
    return Section(f"Top {top} ranges: spread across exports", spread, note, key="range_spread",
                   optional=("slowest_rank", "exports"), own_decimals={"median_ns": 1, "max_over_min": 2},
                   own_units={"exports": "count", "min_ns": "ns", "median_ns": "ns", "max_ns": "ns"})


def _slowest_per_step(df: pl.DataFrame) -> Section:
    slowest = (df.sort(["wall_ns", "export"], descending=[True, False]).group_by("step", maintain_order=True).first()
                 .select("step", pl.col("export").alias("slowest_export"), pl.col("rank").alias("slowest_rank")))
    per_step = (df.group_by("step")  # an export of several processes has a step N in each of them
                  .agg(pl.col("export").n_unique().alias("exports"), pl.col("wall_ns").min().alias("min_wall_ns"),
                       pl.col("wall_ns").median().alias("median_wall_ns"), pl.col("wall_ns").max().alias("max_wall_ns"))
                  .join(slowest, on="step").sort("step"))
    return Section("Steps: slowest export per step", per_step,
                   "steps as `nsysql steps` finds them, matched by their index in each export (and process)",
                   key="slowest_per_step", optional=("slowest_rank",), own_decimals={"median_wall_ns": 1},
                   own_units={"exports": "count", "min_wall_ns": "ns", "median_wall_ns": "ns", "max_wall_ns": "ns"})
