#!/usr/bin/env python3
"""An export whose StringIds holds one API name under two ids, as a 2022 export (schema 2.9.1, MPI + CUDA) does:
`cudaMemcpy_v3020` is id A for some runtime calls and id B for others. NVIDIA's cuda_api_sum groups by the id
(`GROUP BY nameId`), so it prints two `cudaMemcpy` rows; a report grouping by the text would merge them.
A synthetic edge case (scripts/make_synthetic.py's builder, then the second id written in).

Numbers: cudaMemcpy 5 calls, 3 under the first id (100, 200, 300 ns) and 2 under the second (1000, 3000 ns);
cudaLaunchKernel 2 calls (10, 20 ns); one kernel per launch; OS runtime: read 3 calls (400, 700 ns under the
first id, 900 ns under the second), poll 1 call (50 ns).

Library use (tests/test_duplicate_names.py):  path = build(out_dir)
CLI:  python scripts/make_duplicate_names.py OUTDIR
"""
from __future__ import annotations

import argparse
import sqlite3
import sys
from pathlib import Path

NAME = "cudaMemcpy_v3020"
FIRST_ID_CALLS = (100, 200, 300)
SECOND_ID_CALLS = (1000, 3000)
OSRT_NAME = "read"  # NVIDIA's osrt_sum groups by nameId too: the same split for an OS runtime call
OSRT_NAMES = ((OSRT_NAME, 400), ("poll", 50), (OSRT_NAME, 700), (OSRT_NAME, 900))  # the last read: second id


sys.path.insert(0, str(Path(__file__).resolve().parent))  # the builder beside this script, however it is run
import make_synthetic  # noqa: E402


def build(out_dir: Path) -> Path:
    synthetic = make_synthetic
    b = synthetic.SyntheticExport().thread(100, 100, "python3")
    t, corr = 1000, 1
    for d in FIRST_ID_CALLS + SECOND_ID_CALLS:
        b.runtime(NAME, t, t + d, tid=100, pid=100, correlation_id=corr)
        t, corr = t + d + 500, corr + 1
    for d in (10, 20):
        b.launch(start=t, end=t + d, tid=100, pid=100, correlation_id=corr, kernel=("k", t + 50, t + 150, 7, 0))
        t, corr = t + 1000, corr + 1
    for name, d in OSRT_NAMES:
        b.osrt(name, t, t + d, tid=100, pid=100)
        t += d + 500
    out_dir.mkdir(parents=True, exist_ok=True)
    path = b.write(out_dir / "duplicate-names.sqlite")
    con = sqlite3.connect(path)
    try:
        (first,) = con.execute("SELECT id FROM StringIds WHERE value = ?", (NAME,)).fetchone()
        second = con.execute("SELECT max(id) + 1 FROM StringIds").fetchone()[0]
        con.execute("INSERT INTO StringIds VALUES (?, ?)", (second, NAME))
        # the calls after the first ones take the second id
        rows = [r for (r,) in con.execute("SELECT rowid FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE nameId = ? "
                                          "ORDER BY start", (first,))]
        con.executemany("UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET nameId = ? WHERE rowid = ?",
                        [(second, r) for r in rows[len(FIRST_ID_CALLS):]])
        (first,) = con.execute("SELECT id FROM StringIds WHERE value = ?", (OSRT_NAME,)).fetchone()
        con.execute("INSERT INTO StringIds VALUES (?, ?)", (second + 1, OSRT_NAME))
        (last,) = con.execute("SELECT max(rowid) FROM OSRT_API WHERE nameId = ?", (first,)).fetchone()
        con.execute("UPDATE OSRT_API SET nameId = ? WHERE rowid = ?", (second + 1, last))
        con.commit()
    finally:
        con.close()
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir", type=Path)
    print(build(ap.parse_args().out_dir))


if __name__ == "__main__":
    main()
