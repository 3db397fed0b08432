"""One query's cost on a built cache, two versions of its SQL interleaved: CPU seconds and peak RSS, each run a fresh
process.

    python bench/bench_query.py EXPORT.sqlite --cache-dir DIR --sql A.sql --sql B.sql [--runs 2] [--query ID] [--threads N]

Opens EXPORT with nsysql (building the cache in DIR on the first run, not timed), then for each run and each SQL
file starts a fresh Python process that opens the cache, runs the statement to the end (a count and a hash over
every column, so nothing is skipped) and reports its CPU time (user + system) and peak RSS. A query file from
`git show REV:queries/...` gives the old version. With --query (the catalog id the files are versions of, e.g.
analysis.layers) the analyses it reads are made first (not timed) and its parameters take their header defaults;
--threads sets DuckDB's threads (1: the CPU seconds barely move with other load on the machine). Prints Markdown
with the machine and date.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

CHILD = r"""
import json, resource, sys, time
import nsysql
from nsysql import catalog, views
ex = nsysql.open(sys.argv[1], cache_dir=sys.argv[2])
sql = open(sys.argv[3]).read().rstrip().rstrip(';')
params = {}
if sys.argv[4]:
    q = catalog.get(sys.argv[4])
    ex.con  # every table built first: one built on first use later would close the connection, and its TEMP tables
    ex._materialize_inputs(q)  # the analyses it reads, as a command makes them (not timed)
    params = q.bound_params(q.stated_defaults())
if sys.argv[5]:
    ex.con.execute(f"SET threads = {int(sys.argv[5])}")
before = resource.getrusage(resource.RUSAGE_SELF)
wall = time.perf_counter()
digest_sql = f"SELECT count(*), hash(list(hash(r) ORDER BY hash(r))) FROM ({sql}) AS r"  # every column, any row order
rows, digest = ex.con.execute(digest_sql, params).fetchall()[0][:2]
after = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"rows": rows, "digest": str(digest), "wall_s": time.perf_counter() - wall,
                  "cpu_s": after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime,
                  "peak_mib": after.ru_maxrss // 1024}))
"""


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("export", type=Path)
    p.add_argument("--cache-dir", type=Path, required=True)
    p.add_argument("--sql", type=Path, action="append", required=True, help="a query file (give two to compare)")
    p.add_argument("--runs", type=int, default=2)
    p.add_argument("--query", default="", help="catalog id of the query the files are versions of")
    p.add_argument("--threads", default="", help="DuckDB threads for the timed statement")
    a = p.parse_args()
    subprocess.run([sys.executable, "-c", "import nsysql, sys; nsysql.open(sys.argv[1], cache_dir=sys.argv[2])",
                    str(a.export), str(a.cache_dir)], check=True)
    print(f"{time.strftime('%Y-%m-%d %H:%M')}, {platform.node()}, {os.cpu_count()} cores, load "
          f"{os.getloadavg()[0]:.1f}; {a.export.name}\n")
    print("| query file | run | rows | CPU s | wall s | peak RSS MiB |\n|---|---:|---:|---:|---:|---:|")
    rows_of: dict[Path, int] = {}
    digest_of: dict[Path, str] = {}
    for run in range(1, a.runs + 1):
        for sql in a.sql:
            out = subprocess.run([sys.executable, "-c", CHILD, str(a.export), str(a.cache_dir), str(sql), a.query, a.threads],
                                 check=True, capture_output=True, text=True).stdout
            r = json.loads(out.strip().splitlines()[-1])
            rows_of.setdefault(sql, r["rows"])
            digest_of.setdefault(sql, r["digest"])
            print(f"| {sql} | {run} | {r['rows']:,} | {r['cpu_s']:.2f} | {r['wall_s']:.2f} | {r['peak_mib']:,} |")
    if len(set(rows_of.values())) > 1:
        print("\nrow counts differ between the query files")
    if len(set(digest_of.values())) > 1:
        print("\nthe rows differ between the query files (a digest over every column of every row)")


if __name__ == "__main__":
    main()
