"""Rows no profiler writes, found in the normalized tables: each a warning naming the raw table and the count.

An export edited or merged by hand can hold them, and every sum over it is then wrong without a sign: an event
that ends before it starts adds negative time; a duplicated row counts twice; a StringIds table with duplicate
ids repeats every row that looks a name up in it; without StringIds every name is unknown. These checks run in
DuckDB over the cached tables (milliseconds on millions of rows).
"""
from __future__ import annotations

NAMED = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS")


def check(ex) -> list[str]:
    """Warnings about `ex` (an open nsysql.Export), one line each; empty for every export nsys writes. The counts
    are queries/analysis/sanity.sql (kept with the export's answers, so they are read once)."""
    from .errors import NsysqlError
    from .export import SOURCES
    out = []
    try:
        counts = ex.run("analysis.sanity").iter_rows(named=True)
    except NsysqlError:  # a check that cannot run must not stop the analysis it guards
        counts = iter(())
    for row in counts:
        raw = SOURCES.get(row["table_name"], (row["table_name"],))[0]
        if row["negative"]:
            out.append(f"{raw}: {row['negative']:,} rows end before they start (negative durations); times summed "
                       "over this table are not to be trusted")
        if row["repeated"]:
            out.append(f"{raw}: {row['repeated']:,} rows repeated by the join on StringIds (duplicate ids in "
                       "StringIds?); counts and times over this table include them twice")
        elif row["duplicates"]:
            out.append(f"{raw}: {row['duplicates']:,} duplicate rows (same stream or thread, times and "
                       "correlationId); counts and times over this table include them twice")
    if "StringIds" not in ex._tables and any(t in ex._tables for t in NAMED):
        out.append("StringIds: missing, so kernel, API and range names are unknown")
    return out
