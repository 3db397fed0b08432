"""Communication against compute per rank and step (analysis.comm), and the straggler of each step: the rank whose
compute takes longest, which the others wait for at the next collective, with how far it is behind the median rank.
Ranks are (pid, device_id), and the export as well when several exports (one per rank) are compared."""
from __future__ import annotations

import polars as pl

from .catalog import Column

RANK_KEYS = ("export", "pid", "device_id")
# the columns with_stragglers adds to analysis.comm's
STRAGGLER_COLUMNS = (Column("behind_median_ns", "BIGINT", "ns (compute time minus the median rank's in the step)"),
                     Column("slowest", "BOOLEAN", "flag (the step's straggler)"))


def with_stragglers(frame: pl.DataFrame) -> pl.DataFrame:
    """`frame` (rows of analysis.comm, of one export or several) with `behind_median_ns`: the rank's compute time in
    the step minus the median over the step's ranks (0 with one rank), and `slowest`: the rank(s) with the most
    compute in a step of several ranks, when that is more than the median."""
    ranks = pl.len().over("step")
    behind = (pl.col("compute_ns") - pl.col("compute_ns").median().over("step")).round(0).cast(pl.Int64)
    out = frame.with_columns(
        pl.when(ranks > 1).then(behind).otherwise(0).alias("behind_median_ns"),
    ).with_columns(
        ((ranks > 1) & (pl.col("behind_median_ns") > 0)
         & (pl.col("compute_ns") == pl.col("compute_ns").max().over("step"))).alias("slowest"),
    )
    return out
