"""Replicate an nsys SQLite export N times into a new file, for benchmarks.

Copy k (0..N-1) of every timed table is shifted by k * (span + 1 ms) and its
correlationIds are offset by k * (max correlationId + 1), so copies neither overlap in
time nor collide on correlationId. Processes, threads and strings are shared, as in one
long run of the same program. The input is opened read-only.

    python bench/replicate.py IN.sqlite OUT.sqlite --copies 200 [--skip OSRT_API]
"""
from __future__ import annotations

import argparse
import shutil
import sqlite3
import sys
from pathlib import Path

# table -> columns holding timestamps / correlation ids (the rest is copied as is)
TIMED_TABLES = {
    "CUPTI_ACTIVITY_KIND_KERNEL": ("start", "end", "correlationId"),
    "CUPTI_ACTIVITY_KIND_RUNTIME": ("start", "end", "correlationId"),
    "CUPTI_ACTIVITY_KIND_MEMCPY": ("start", "end", "correlationId"),
    "CUPTI_ACTIVITY_KIND_MEMSET": ("start", "end", "correlationId"),
    "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION": ("start", "end", "correlationId"),
    "NVTX_EVENTS": ("start", "end", None),
    "OSRT_API": ("start", "end", None),
}


def replicate(src: Path, dst: Path, copies: int, skip: set[str]) -> None:
    if dst.exists():
        dst.unlink()
    shutil.copyfile(src, dst)
    db = sqlite3.connect(dst)
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    present = [t for t in TIMED_TABLES if t in tables]
    lo, hi = db.execute(
        "SELECT MIN(s), MAX(e) FROM ("
        + " UNION ALL ".join(f'SELECT MIN(start) AS s, MAX(COALESCE("end", start)) AS e FROM {t}' for t in present)
        + ")"
    ).fetchone()
    shift = (hi - lo) + 1_000_000
    max_corr = max(
        db.execute(f"SELECT COALESCE(MAX(correlationId), 0) FROM {t}").fetchone()[0]
        for t in present if TIMED_TABLES[t][2]
    ) + 1
    for table in present:
        if table in skip:
            continue
        start, end, corr = TIMED_TABLES[table]
        cols = [r[1] for r in db.execute(f"PRAGMA table_info({table})")]
        # Copies are made from the original rows only (rowid range), never from earlier copies.
        n_rows = db.execute(f"SELECT MAX(rowid) FROM {table}").fetchone()[0] or 0

        def expr(c: str) -> str:  # used in this iteration only, so the loop variables are the current ones
            if c in (start, end):  # noqa: B023
                return f'"{c}" + :shift'
            if c == corr:  # noqa: B023
                return f'"{c}" + :corr'
            return f'"{c}"'

        sql = (f'INSERT INTO {table} ({", ".join(chr(34) + c + chr(34) for c in cols)}) '
               f'SELECT {", ".join(expr(c) for c in cols)} FROM {table} WHERE rowid <= :n')
        for k in range(1, copies):
            db.execute(sql, {"shift": k * shift, "corr": k * max_corr, "n": n_rows})
        db.commit()
        print(f"{table}: {n_rows} x {copies}", file=sys.stderr)
    if "ANALYSIS_DETAILS" in tables:
        db.execute("UPDATE ANALYSIS_DETAILS SET stopTime = stopTime + ?, duration = duration + ?",
                   ((copies - 1) * shift, (copies - 1) * shift))
    db.commit()
    db.execute("VACUUM")
    db.close()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("src", type=Path)
    p.add_argument("dst", type=Path)
    p.add_argument("--copies", type=int, required=True)
    p.add_argument("--skip", action="append", default=[], help="timed table to copy only once")
    a = p.parse_args()
    if a.dst.resolve() == a.src.resolve():
        sys.exit("Error: output must differ from the input export")
    replicate(a.src, a.dst, a.copies, set(a.skip))


if __name__ == "__main__":
    main()
