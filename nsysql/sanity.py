"""Rows no profiler writes, found in the normalized tables: each a warning naming the raw table and the count.

An export edited or merged by hand can hold them, and every sum over it is then wrong without a sign: an event
that ends before it starts adds negative time; a duplicated row counts twice; a StringIds table with duplicate
ids repeats every row that looks a name up in it; without StringIds every name is unknown. These checks run in
DuckDB over the cached tables (milliseconds on millions of rows).
"""
from __future__ import annotations

import hashlib
from pathlib import Path

# what the remembered warnings of a cached export are keyed by: these checks' own code
CHECKS_KEY = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]

# normalized table -> (raw table, its id column, the columns that make a row unique)
_TABLES = {
    "kernel": ("CUPTI_ACTIVITY_KIND_KERNEL", "kernel_id", "device_id, stream_id, start_ns, end_ns, correlation_id"),
    "runtime": ("CUPTI_ACTIVITY_KIND_RUNTIME", "runtime_id", "global_tid, start_ns, end_ns, correlation_id"),
    "memcpy": ("CUPTI_ACTIVITY_KIND_MEMCPY", "memcpy_id", "device_id, stream_id, start_ns, end_ns, correlation_id"),
    "memset": ("CUPTI_ACTIVITY_KIND_MEMSET", "memset_id", "device_id, stream_id, start_ns, end_ns, correlation_id"),
    "sync": ("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", None, None),
    "nvtx_range": ("NVTX_EVENTS", "range_id", None),
    "osrt": ("OSRT_API", None, None),
}
NAMED = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS")


def check(ex) -> list[str]:
    """Warnings about `ex` (an open nsysql.Export), one line each; empty for every export nsys writes."""
    out = []
    for table, (raw, id_col, unique) in _TABLES.items():
        if not ex.has(table):
            continue
        parts = ["COUNT(*) FILTER (WHERE end_ns < start_ns)"]
        parts.append(f"COUNT(*) - COUNT(DISTINCT {id_col})" if id_col else "0")
        parts.append(f"COUNT(*) - COUNT(DISTINCT ({unique}))" if unique else "0")
        try:
            backwards, repeated, duplicates = ex.con.execute(f"SELECT {', '.join(parts)} FROM {table}").fetchone()
        except Exception:  # noqa: BLE001 - a check that cannot run must not stop the analysis it guards
            continue
        if backwards:
            out.append(f"{raw}: {backwards:,} rows end before they start (negative durations); times summed over "
                       "this table are not to be trusted")
        if repeated:
            out.append(f"{raw}: {repeated:,} rows repeated by the join on StringIds (duplicate ids in StringIds?); "
                       "counts and times over this table include them twice")
        elif duplicates:
            out.append(f"{raw}: {duplicates:,} duplicate rows (same stream or thread, times and correlationId); "
                       "counts and times over this table include them twice")
    if "StringIds" not in ex._tables and any(t in ex._tables for t in NAMED):
        out.append("StringIds: missing, so kernel, API and range names are unknown")
    return out
