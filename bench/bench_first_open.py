"""First open of one export by input format: the SQLite export, and the same rows as a parquetdir in nsys's layout.

    python bench/bench_first_open.py EXPORT.sqlite [--workdir DIR] [--runs 3]

Writes EXPORT as a parquetdir (bench/parquetdir_of.py: one <TABLE>.parquet per table, SQLite's columns, rows in
rowid order), then times the first open of each, alternating, `--runs` times: one fresh `nsysql sql EXPORT
'SELECT count(*) FROM kernel'` on an empty cache with the answers ahead off (NSYSQL_AHEAD=off), so that only
the normalize build is timed. From SQLite that build reads through DuckDB's SQLite scanner (a page decode per row)
with SQLite's own integrity check beside it (nsysql/store/sqlite_check.py); from Parquet DuckDB reads the columns
itself and the files' marks are checked (nsysql/store/formats_in.py). Prints Markdown: wall seconds (min / median), CPU
seconds (user + system of the nsysql process and its children, median) and peak RSS of the largest process.
"""
from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))


def first_open(nsysql: str, export: Path, cache: Path) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MiB) of one first open."""
    shutil.rmtree(cache, ignore_errors=True)
    env = dict(os.environ, NSYSQL_CACHE_DIR=str(cache), NSYSQL_AHEAD="off", NSYSQL_NO_PROGRESS="1")
    started = time.perf_counter()
    proc = subprocess.Popen([nsysql, "sql", str(export), "SELECT count(*) AS n FROM kernel", "-f", "csv"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"nsysql failed on {export}: {proc.stderr.read().decode() if proc.stderr else ''}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("export", type=Path)
    p.add_argument("--workdir", type=Path, default=None)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--nsysql", default=str(Path(sys.executable).with_name("nsysql")))
    a = p.parse_args()
    work = a.workdir or Path(tempfile.mkdtemp(prefix="nsysql-first-open-"))
    work.mkdir(parents=True, exist_ok=True)
    parquetdir = work / f"{a.export.stem}_pqtdir"
    if not parquetdir.exists():
        from parquetdir_of import convert
        started = time.perf_counter()
        convert(a.export, parquetdir)
        print(f"parquetdir written in {time.perf_counter() - started:.1f} s: {parquetdir}", file=sys.stderr)
    sizes = {"SQLite": a.export.stat().st_size, "parquetdir": sum(f.stat().st_size for f in parquetdir.iterdir())}
    runs: dict[str, list[tuple[float, float, float]]] = {"SQLite": [], "parquetdir": []}
    for i in range(a.runs):
        for name, export in (("SQLite", a.export), ("parquetdir", parquetdir)):
            runs[name].append(first_open(a.nsysql, export, work / "cache"))
            print(f"run {i + 1} {name}: {runs[name][-1][0]:.2f} s", file=sys.stderr)
    shutil.rmtree(work / "cache", ignore_errors=True)
    print(f"{platform.node()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"{time.strftime('%Y-%m-%d')}; {a.export.name}, {a.runs} runs each\n")
    print("| input | size MB | first open s (min / median) | CPU s (median) | peak RSS MiB (median) |")
    print("|---|---:|---:|---:|---:|")
    for name, rows in runs.items():
        walls = [r[0] for r in rows]
        print(f"| {name} | {sizes[name] / 1e6:,.0f} | {min(walls):.2f} / {statistics.median(walls):.2f} | "
              f"{statistics.median(r[1] for r in rows):.1f} | {statistics.median(r[2] for r in rows):,.0f} |")


if __name__ == "__main__":
    main()
