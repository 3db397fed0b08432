"""Several exports of one multi-GPU job (one nsys per rank): put them on one clock and match their collectives.

Each export counts time from its own session start. The exports are shifted onto the first one's clock by the UTC
session starts (TARGET_INFO_SESSION_START_TIME), then the shift is refined with the ends of matched collectives,
which finish together on every rank (the last arrival releases them all). The collectives are matched by the same
SQL that matches the ranks of one export (analysis.comm_waits) run over every export's instances, and each export
then reads its own rows of that answer, in its own clock, wherever its queries read analysis.comm_waits: the wait
and transfer of `comm`, the step breakdown, the overview and the findings come out as for one export of the job.
"""
from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import polars as pl

from nsysql.core import units
from nsysql.errors import NsysqlError
from nsysql.sql import catalog
from nsysql.sql.engine import connect, quote_ident

WAITS = "comm_waits"
T = TypeVar("T")


@dataclass(frozen=True)
class Alignment:
    """How the exports of a job were put on one clock: per export (in the order given) the shift added to its
    timestamps, and how well the matched collective ends then agree."""
    shifts_ns: tuple[int, ...]
    residual_ns: int  # the largest median |end difference| of an export's matched collectives after the shift
    collectives: int  # matched collectives
    unmatched: int  # instances left unmatched (a rank lacks them, or the operations differ)
    mismatched: int  # collectives whose ranks name different operations

    def line(self, names: list[str]) -> str:
        """One line for stderr: the shifts and the residual."""
        shifts = ", ".join(f"{n} {'+' if s >= 0 else '-'}{units.duration(abs(s))}"
                           for n, s in zip(names[1:], self.shifts_ns[1:]))
        text = (f"note: {len(names)} exports of one job, put on {names[0]}'s clock ({shifts}; matched collectives "
                f"then end {units.duration(self.residual_ns)} apart, median); {self.collectives:,} collectives matched")
        if self.unmatched:
            text += f", {self.unmatched:,} instances unmatched"
        if self.mismatched:
            text += f", {self.mismatched:,} with different operations on different ranks"
        return text


KEEP_OPEN = 16  # a job of up to this many exports keeps their DuckDB connections open between analyses


def each(exports: list, fn: Callable[[Any], T]) -> list[T]:
    """`fn(ex)` of every export in turn. Past KEEP_OPEN exports, each export's DuckDB connection is released after
    it (Export.release; ~12 MB each, ~60 ms CPU to open again): the memory of a job's analyses then grows with its
    rows, not with one open connection per rank."""
    out = []
    for ex in exports:
        try:
            out.append(fn(ex))
        finally:
            release = getattr(ex, "release", None)
            if release is not None and len(exports) > KEEP_OPEN:
                release()
    return out


def _utc_start(ex) -> int | None:
    try:
        return ex.sql("SELECT utc_start_ns FROM session").item()
    except NsysqlError:
        return None


def run_over(query_id: str, tables: dict[str, pl.DataFrame], **params) -> pl.DataFrame:
    """Query `query_id` in a fresh DuckDB whose tables `tables` (name -> rows) stand for the analyses it reads: the
    same SQL over the rows of every export of a job (through Parquet: DuckDB reads Polars frames only with pyarrow)."""
    from nsysql.sql import macros
    from nsysql.sql.engine import to_polars
    q = catalog.get(query_id)
    con = connect()
    try:
        macros.install(con)
        with tempfile.TemporaryDirectory(prefix="nsysql-job-") as tmp:
            for name, frame in tables.items():
                path = Path(tmp) / f"{name}.parquet"
                frame.write_parquet(path)
                con.execute(f"CREATE TABLE {quote_ident(name)} AS SELECT * FROM read_parquet($p)", {"p": str(path)})
            bound = q.bound_params({**q.stated_defaults(), **params})
            return to_polars(con.sql(q.sql, params=bound))
    finally:
        con.close()


def _match(instances: pl.DataFrame) -> pl.DataFrame:
    """analysis.comm_waits over `instances` (every export's, on one clock)."""
    return run_over("analysis.comm_waits", {"comm_instances": instances})


def match_counts(waits: pl.DataFrame) -> tuple[int, int, int]:
    """(collectives matched, instances left unmatched, collectives whose ranks name different operations)."""
    matched = waits.filter(pl.col("matched"))["collective"].n_unique()
    mismatched = (waits.group_by("collective").agg(pl.col("operation").n_unique().alias("ops"))
                  .filter(pl.col("ops") > 1).height)
    return matched, waits.filter(~pl.col("matched")).height, mismatched


def _end_gaps(waits: pl.DataFrame, n: int) -> list[pl.Series]:
    """Per export, (the first export's end - its end) of each matched collective they share: one join of every
    export's collective ends with the first export's (no pass over the rows per export: thousands of ranks)."""
    ends = (waits.filter(pl.col("matched")).group_by("source", "collective").agg(pl.col("end_ns").max())
            .sort("source", "collective"))
    ref = ends.filter(pl.col("source") == 0).select("collective", pl.col("end_ns").alias("ref"))
    gaps = ends.join(ref, on="collective").select("source", (pl.col("ref") - pl.col("end_ns")).alias("gap"))
    by = {k[0]: g["gap"] for k, g in gaps.filter(pl.col("source") > 0).partition_by("source", as_dict=True).items()}
    return [pl.Series([0], dtype=pl.Int64)] + [by.get(i, pl.Series([], dtype=pl.Int64)) for i in range(1, n)]


def _refine(waits: pl.DataFrame, n: int) -> list[int]:
    """Per export, the median gap of its matched collective ends to the first export's (0 where none is shared)."""
    return [int(g.median()) if len(g) else 0 for g in _end_gaps(waits, n)]  # type: ignore[arg-type]


def link(exports: list) -> Alignment | None:
    """When `exports` (opened, two or more) are the ranks of one job - each has communication kernels and their
    capture sessions overlap in time - match their collectives and give each export its rows of the job's
    analysis.comm_waits; else None (separate runs, compared side by side)."""
    if len(exports) < 2:
        return None

    def clock(ex) -> tuple[int | None, int]:  # one connection per export for both
        start = _utc_start(ex)
        return start, ex.sql("SELECT COALESCE(MAX(end_ns), 0) AS e FROM gpu_op").item() if start is not None else 0
    starts, spans = (list(col) for col in zip(*each(exports, clock)))
    if any(s is None for s in starts):
        return None
    ends = [s + e for s, e in zip(starts, spans)]
    if max(starts) >= min(ends):
        return None  # the sessions do not overlap: not one job
    frames = each(exports, lambda ex: ex.run("analysis.comm_instances"))
    if any(f.height == 0 for f in frames):
        return None
    coarse = [s - starts[0] for s in starts]

    def shifted(shifts: list[int]) -> pl.DataFrame:
        return pl.concat([f.with_columns(pl.lit(i, pl.Int64).alias("source"),
                                         pl.col("start_ns") + sh, pl.col("end_ns") + sh)
                          for i, (f, sh) in enumerate(zip(frames, shifts))])

    waits = _match(shifted(coarse))
    shifts = [c + r for c, r in zip(coarse, _refine(waits, len(frames)))]
    waits = _match(shifted(shifts))
    # what is left after the shift: per export the median |gap| of its collective ends to the first export's
    residual = max(int(g.abs().median()) if len(g) else 0 for g in _end_gaps(waits, len(frames)))  # type: ignore[arg-type]
    time_cols = ["start_ns", "end_ns", "first_start_ns", "last_start_ns", "wait_end_ns"]
    for i, ex in enumerate(exports):
        own = (waits.filter(pl.col("source") == i)
               .with_columns([pl.col(c) - shifts[i] for c in time_cols]))
        ex.inject(WAITS, own)
        ex.clock_shift_ns = shifts[i]  # what puts its timestamps on the job's clock (nsysql/answers/tracedata.py reads it)
    return Alignment(tuple(shifts), residual, *match_counts(waits))


def match_note(waits: pl.DataFrame) -> str | None:
    """One line on how well the collectives of one export's ranks matched (analysis.comm_waits), when something
    did not: instances left unmatched, collectives whose ranks name different operations; None when all matched
    or there is one rank."""
    ranks = waits.select("source", "pid", "device_id").unique().height
    if ranks < 2:
        return None
    _, unmatched, mismatched = match_counts(waits)
    if not unmatched:
        return None
    text = (f"note: {unmatched:,} of {waits.height:,} communication kernels of {ranks} ranks were not matched across "
            "ranks (a rank lacks them")
    return text + (f", or {mismatched:,} collectives name different operations on different ranks)" if mismatched
                   else ")") + "; they count as transfer, with no wait"


def restraggle(df: pl.DataFrame) -> pl.DataFrame:
    """analysis.comm's `straggler` over the rows of every export of the job (each export's SQL saw its own ranks
    only): the same rule, true for the rank with the largest late_ns of the step when that is more than 0."""
    if "straggler" not in df.columns or "late_ns" not in df.columns:
        return df
    return df.with_columns(((pl.len().over("step") > 1) & (pl.col("late_ns") > 0)
                            & (pl.col("late_ns") == pl.col("late_ns").max().over("step"))).alias("straggler"))
