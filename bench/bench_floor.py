"""The least a first open can cost on this machine: issue 12's first-open targets against what any build must do.

    python bench/bench_floor.py EXPORT.sqlite [--runs 5]

Measures, on the export itself (nothing of nsysql's build or cache is used), the parts every first open of the
nine NVIDIA reports (bench_commands.py's `NINE`) and of `summarize` has to pay, each a lower bound:

- start: a process that starts Python and imports DuckDB and nothing else (`python -c "import duckdb"`), the least
  one `nsysql` call costs; the nine reports are nine calls.
- decode: SQLite itself touching the columns those reports read (a `total()` per column inside SQLite, no row
  leaving it): what any reader of the export pays, however clever.
- scan: the same columns read by DuckDB's SQLite scanner (the reader nsysql's query layer has), one table per
  connection, on one thread each; and the same four reads on two connections at once (wall).
- check: SQLite's integrity check of the tables a build reads, as every first open runs it (nsysql/store/sqlite_check.py,
  its worker process: issue 17's guard against damaged pages, before the first answer).
- compute: the nine reports' grouping on those columns already in memory (DuckDB, one thread): the per-name
  count / total / average / median / minimum / maximum / deviation of osrt_sum, cuda_api_sum, cuda_gpu_kern_sum,
  nvtx_sum and the two copy reports, cuda_kern_exec_sum's join of kernels to their launches, and for
  nvtx_gpu_proj_sum and nvtx_kern_sum only the part they share with it plus one ASOF join of each CUDA call to the
  latest range begun on its thread (a strict subset of the enclosing-range work those reports do).

CPU seconds of one thread add up to what two cores must share, so a first open's wall time is at least
CPU / cores. Prints Markdown with the machine and date.
"""
from __future__ import annotations

import argparse
import os
import platform
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from nsysql.sql.engine import sqlite_scanner_path  # noqa: E402
from nsysql.store import (
    readonly,
    sqlite_check,  # noqa: E402  (the repository's own, not an installed copy)
)

# raw table -> the columns the nine reports read from it (with summarize's: the same tables)
COLUMNS = {
    "CUPTI_ACTIVITY_KIND_KERNEL": ["start", "end", "deviceId", "streamId", "correlationId", "globalPid",
                                   "demangledName", "shortName"],
    "CUPTI_ACTIVITY_KIND_RUNTIME": ["start", "end", "globalTid", "correlationId", "nameId"],
    "NVTX_EVENTS": ["start", "end", "globalTid", "eventType", "textId", "text"],
    "OSRT_API": ["start", "end", "globalTid", "nameId", "eventClass"],
    "CUPTI_ACTIVITY_KIND_MEMCPY": ["start", "end", "copyKind", "bytes"],
}
SHORT = {"CUPTI_ACTIVITY_KIND_KERNEL": "kernel", "CUPTI_ACTIVITY_KIND_RUNTIME": "runtime", "NVTX_EVENTS": "nvtx",
         "OSRT_API": "osrt", "CUPTI_ACTIVITY_KIND_MEMCPY": "memcpy"}

STATS = ("COUNT(*), SUM(d), AVG(d), MEDIAN(d), MIN(d), MAX(d), STDDEV_SAMP(d)")
COMPUTE = {
    "osrt_sum": f"SELECT nameId, {STATS} FROM (SELECT nameId, \"end\" - start AS d FROM osrt "
                "WHERE eventClass NOT IN (31, 32)) GROUP BY nameId",
    "cuda_api_sum": f"SELECT nameId, {STATS} FROM (SELECT nameId, \"end\" - start AS d FROM runtime) GROUP BY nameId",
    "cuda_gpu_kern_sum": f"SELECT demangledName, {STATS} FROM (SELECT demangledName, \"end\" - start AS d FROM kernel) "
                         "GROUP BY demangledName",
    "nvtx_sum": f"SELECT textId, text, {STATS} FROM (SELECT textId, text, \"end\" - start AS d FROM nvtx "
                "WHERE \"end\" IS NOT NULL) GROUP BY ALL",
    "cuda_gpu_mem_time_sum + mem_size_sum": f"SELECT copyKind, {STATS}, SUM(bytes), MEDIAN(bytes) FROM "
                                            "(SELECT copyKind, bytes, \"end\" - start AS d FROM memcpy) GROUP BY copyKind",
    "cuda_kern_exec_sum (the kernel-to-launch join the NVTX reports share)":
        "SELECT r.globalTid, k.deviceId, r.nameId, k.demangledName, COUNT(*), AVG(k.\"end\" - k.start), "
        "MEDIAN(k.\"end\" - k.start), MEDIAN(r.\"end\" - r.start), MEDIAN(k.start - r.\"end\") "
        "FROM kernel AS k JOIN runtime AS r USING (correlationId) GROUP BY ALL",
    "nvtx_gpu_proj_sum + nvtx_kern_sum (lower bound: one ASOF join per call)":
        "SELECT COUNT(*), SUM(n.textId) FROM runtime AS r ASOF JOIN (SELECT globalTid, start, textId FROM nvtx "
        "WHERE \"end\" IS NOT NULL) AS n ON r.globalTid = n.globalTid AND r.start >= n.start",
}


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def quoted(column: str) -> str:
    return f'"{column}"'


def present(export: Path) -> dict[str, list[str]]:
    """COLUMNS limited to the tables and columns the export has."""
    con = sqlite3.connect(f"file:{export}?mode=ro", uri=True)
    have = {}
    for table, columns in COLUMNS.items():
        got = {r[1] for r in con.execute(f"PRAGMA table_info({table})")}
        if got:
            have[table] = [c for c in columns if c in got]
    con.close()
    return have


def measure_start(runs: int) -> tuple[float, float]:
    """Median wall and CPU s of `python -c "import duckdb"`."""
    walls, cpus = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import duckdb"], check=True)
        walls.append(time.perf_counter() - started)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def measure_decode(export: Path, tables: dict[str, list[str]]) -> dict[str, float]:
    """CPU s of SQLite touching each table's columns, nothing leaving it."""
    con = sqlite3.connect(f"file:{export}?mode=ro", uri=True)
    out = {}
    for table, columns in tables.items():
        touch = ", ".join(f"total(length({quoted(c)}))" if c == "text" else f"total({quoted(c)})" for c in columns)
        before = cpu()
        con.execute(f"SELECT COUNT(*), {touch} FROM {table}").fetchall()
        out[table] = cpu() - before
    con.close()
    return out


def measure_check(export: Path) -> tuple[float, float]:
    """Wall and CPU s of SQLite's integrity check as a first open runs it (its worker process)."""
    before, started = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch, readonly.sqlite_path(export, Path(scratch)) as link:
        sqlite_check.run(link)
    wall, after = time.perf_counter() - started, resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def scanner(threads: int) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(config={"allow_unsigned_extensions": True, "autoinstall_known_extensions": False})
    con.execute(f"LOAD '{sqlite_scanner_path()}'")
    con.execute(f"SET threads = {threads}")
    return con


def copy_table(con: duckdb.DuckDBPyConnection, export: Path, table: str, columns: list[str]) -> None:
    con.execute(f"CREATE OR REPLACE TABLE {SHORT[table]} AS SELECT {', '.join(map(quoted, columns))} "
                f"FROM sqlite_scan($p, '{table}')", {"p": str(export)})


def measure_scan(export: Path, tables: dict[str, list[str]]) -> tuple[dict[str, float], duckdb.DuckDBPyConnection]:
    """CPU s of DuckDB's scanner copying each table's columns into memory, one thread; the copies are kept for
    the compute step."""
    con = scanner(1)
    out = {}
    for table, columns in tables.items():
        before = cpu()
        copy_table(con, export, table, columns)
        out[table] = cpu() - before
    return out, con


def measure_scan_parallel(export: Path, tables: dict[str, list[str]]) -> tuple[float, float]:
    """Wall and CPU s of the same copies on two connections at once (the big tables split between them)."""
    halves = [["OSRT_API", "NVTX_EVENTS", "CUPTI_ACTIVITY_KIND_MEMCPY"],
              ["CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME"]]
    halves = [[t for t in h if t in tables] for h in halves]

    def work(part: list[str]) -> None:
        con = scanner(1)
        for table in part:
            copy_table(con, export, table, tables[table])
        con.close()

    before, started = cpu(), time.perf_counter()
    workers = [threading.Thread(target=work, args=(h,)) for h in halves]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return time.perf_counter() - started, cpu() - before


def measure_compute(con: duckdb.DuckDBPyConnection, tables: dict[str, list[str]]) -> dict[str, float]:
    out = {}
    for label, sql in COMPUTE.items():
        if "memcpy" in sql and "CUPTI_ACTIVITY_KIND_MEMCPY" not in tables:
            continue
        before = cpu()
        con.execute(sql).fetchall()
        out[label] = cpu() - before
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("export", type=Path)
    p.add_argument("--runs", type=int, default=5, help="process starts to take the median of")
    p.add_argument("--cores", type=int, default=os.cpu_count() or 1)
    a = p.parse_args()
    export = a.export.resolve()
    tables = present(export)
    start_wall, start_cpu = measure_start(a.runs)
    decode = measure_decode(export, tables)
    check_wall, check_cpu = measure_check(export)
    scan, con = measure_scan(export, tables)
    compute = measure_compute(con, tables)
    par_wall, par_cpu = measure_scan_parallel(export, tables)
    rows = {t: con.execute(f"SELECT COUNT(*) FROM {SHORT[t]}").fetchone()[0] for t in tables}  # type: ignore[index]

    print(f"machine: {platform.node()} {platform.machine()}, {a.cores} cores, Python {platform.python_version()}, "
          f"DuckDB {duckdb.__version__}, {time.strftime('%Y-%m-%d %H:%M')}; export {a.export.name}\n")
    print("| part | what | CPU s |\n|---|---|---:|")
    print(f"| start | `python -c \"import duckdb\"`, median of {a.runs} ({start_wall:.2f} s wall) | {start_cpu:.2f} |")
    for t in tables:
        print(f"| decode | SQLite touching {SHORT[t]}'s {len(tables[t])} columns ({rows[t]:,} rows) | {decode[t]:.2f} |")
    for t in tables:
        print(f"| scan | DuckDB's SQLite scanner copying {SHORT[t]}'s columns into memory | {scan[t]:.2f} |")
    print(f"| scan | all of them on two connections at once: {par_wall:.2f} s wall | {par_cpu:.2f} |")
    print(f"| check | SQLite's integrity check of the tables a build reads ({check_wall:.2f} s wall) | {check_cpu:.2f} |")
    for label, seconds in compute.items():
        print(f"| compute | {label} | {seconds:.2f} |")
    total_compute = sum(compute.values())
    for reader, read in (("DuckDB's scanner", sum(scan.values())), ("SQLite alone (no reader can do less)",
                                                                     sum(decode.values()))):
        reports = 9 * start_cpu + read + total_compute
        checked = reports + check_cpu
        print(f"\nThe nine reports, 9 calls, reading with {reader}: at least {reports:.1f} CPU s, so at least "
              f"{reports / a.cores:.1f} s on {a.cores} cores; with the integrity check every first open runs, "
              f"{checked:.1f} CPU s, {checked / a.cores:.1f} s (issue 12's target: 7 s).")


if __name__ == "__main__":
    main()
