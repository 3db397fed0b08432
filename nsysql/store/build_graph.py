"""Run the normalize statements as a graph: each as soon as the tables it reads exist, several at a time.

DuckDB's SQLite scanner reads an attached table on one thread, so a build that runs one statement at a time
leaves the other cores idle while the big raw tables are read. Here up to `workers` statements run at once,
each on its own cursor of the one DuckDB database; those that start the longest chains of dependent
statements go first (docs/performance-history.md has the measurements).
"""
from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

import duckdb

from nsysql.core import progress
from nsysql.errors import NsysqlError
from nsysql.sql import catalog, macros
from nsysql.sql.engine import quote_ident

WORKERS_ENV = "NSYSQL_BUILD_WORKERS"


def build_workers() -> int:
    """Statements run at once: NSYSQL_BUILD_WORKERS, else one per two cores but two on two cores, 1 to 4. The big
    raw reads (kernels, runtime calls, OS-runtime calls, NVTX) each run on one thread (DuckDB's SQLite scanner
    reads an attached file single-threaded), so a second statement uses the core the first leaves idle; with
    names stored as ENUMs two at once fit the memory limit. The first summarize of the 1.7M-kernel benchmark
    export measured with this default is in docs/performance-history.md (2026-11-25); the gain of the second worker
    alone was a one-off timing on a shared machine, not a bench/ run. With more cores each statement still
    gets two threads."""
    wanted = os.environ.get(WORKERS_ENV, "").strip()
    if not wanted:
        cores = os.cpu_count() or 1
        return max(1, min(4, max(min(cores, 2), cores // 2)))
    if not wanted.isdigit() or int(wanted) < 1:
        raise NsysqlError(f"{WORKERS_ENV}={wanted!r} is not a positive whole number; use e.g. {WORKERS_ENV}=2, "
                          "or unset it for the default (two on two cores, one per two cores above)")
    return int(wanted)


def chain_lengths(needs: dict[str, set[str]]) -> dict[str, int]:
    """For each statement, the number of statements on the longest chain that waits for it (itself included)."""
    waiting: dict[str, set[str]] = {name: set() for name in needs}
    for name, inputs in needs.items():
        for needed in inputs:
            waiting[needed].add(name)
    lengths: dict[str, int] = {}
    visiting: set[str] = set()

    def length(name: str) -> int:
        if name in visiting:  # a cycle: build_graph reports it when nothing can start
            return 0
        if name not in lengths:
            visiting.add(name)
            lengths[name] = 1 + max((length(w) for w in waiting[name]), default=0)
            visiting.discard(name)
        return lengths[name]

    for name in needs:
        length(name)
    return lengths


def build_graph(con: duckdb.DuckDBPyConnection, queries: Sequence[catalog.Query], *, workers: int,
                failed: Callable[[catalog.Query, duckdb.Error], Exception]) -> None:
    """Execute every query (each creates the table named after it). `failed` turns a DuckDB error into the
    exception to raise; the statements still running are interrupted first."""
    by_name = {q.name: q for q in queries}
    needs = {q.name: {r for r in q.requires if r in by_name} for q in queries}
    rank = chain_lengths(needs)
    pending = sorted(by_name, key=lambda n: (-rank[n], n))
    done: set[str] = set()
    running: dict[Future, duckdb.DuckDBPyConnection] = {}
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="nsysql-build") as pool:
        try:
            while pending or running:
                for name in [n for n in pending if needs[n] <= done][: workers - len(running)]:
                    pending.remove(name)
                    cursor = con.cursor()
                    running[pool.submit(_execute, cursor, by_name[name], failed)] = cursor
                if not running:  # a cycle would leave statements that can never start
                    raise ValueError(f"normalize statements wait on each other: {', '.join(pending)}")
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in finished:
                    running.pop(future).close()
                    done.add(future.result())
        except BaseException:  # an error or Ctrl-C: stop the others before the half-built file is removed
            while running:  # again and again: an interrupt that comes before its statement starts is lost
                for cursor in running.values():
                    cursor.interrupt()
                finished, _ = wait(running, timeout=0.1)
                for future in finished:
                    running.pop(future).close()
            raise


def _execute(cursor: duckdb.DuckDBPyConnection, q: catalog.Query,
             failed: Callable[[catalog.Query, duckdb.Error], Exception]) -> str:
    with progress.stage(q.name) as stage:
        try:
            macros.install(cursor, only=q.requires)  # TEMP macros are per cursor: those it calls (gpu_busy's)
            cursor.execute(q.sql)
            if stage is not None and "CREATE VIEW" not in q.sql:  # counting a view would run it
                stage.rows = cursor.execute(f"SELECT count(*) FROM {quote_ident(q.name)}").fetchone()[0]  # type: ignore[index]
        except duckdb.Error as exc:
            raise failed(q, exc) from None
    return q.name
