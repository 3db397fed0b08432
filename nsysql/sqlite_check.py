"""SQLite's own integrity check of the tables nsysql reads, run once per export when its cache is built.

A damaged page does not always stop a read: a page referenced twice repeats its rows, a wrong cell count drops
some, and the sums come out wrong without a sign. `PRAGMA quick_check(TABLE)` walks the table's b-tree and
finds these. It runs once, before DuckDB reads the export, and only over the tables the normalize SQL reads
(not OSRT_CALLCHAINS and the like); its findings are kept in the cache (normalized table `sqlite_check`), so
later commands only read them back. Memory-mapped reads make it cheap: about 3 s on a 790 MB export whose cold
`summarize` takes about 25 s, against 17 s with SQLite's default reads (docs/performance.md).
"""
from __future__ import annotations

import re
import sqlite3
import threading
from pathlib import Path
from urllib.parse import quote

from . import catalog, readonly
from .engine import quote_ident

MMAP_BYTES = 1 << 40  # SQLite clamps it to its build's maximum (2 GB by default); beyond, it reads as usual
Finding = tuple[str, int, "str | None"]  # (raw table, problems, first problem)


def read_tables() -> set[str]:
    """The raw tables the normalize SQL reads: those with an empty stand-in in raw_stubs, and those a shim reads."""
    stubs = re.findall(r"CREATE TABLE raw\.(\w+)", catalog.get("normalize.nsys3.raw_stubs").sql)
    shims = [r.removeprefix("nsys.") for shim in catalog.group("normalize.shims") for r in shim.requires]
    return set(stubs) | set(shims)


def run(link: Path) -> list[Finding]:
    """One finding per table read that `link` (nsysql/readonly.py's private name of the export) holds; empty when
    SQLite cannot read the file at all (the importer then says why). Nothing is written beside the export:
    a rollback-journal file is opened immutable, a WAL-mode one is a link in a private directory."""
    uri = f"file:{quote(str(link))}?mode=ro" + ("" if readonly.is_wal(link) else "&immutable=1")
    try:
        con = sqlite3.connect(uri, uri=True, check_same_thread=False)
    except sqlite3.Error:
        return []
    try:
        return _interruptible(con, lambda: _check(con))
    finally:
        con.close()


def _check(con: sqlite3.Connection) -> list[Finding]:
    con.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")  # 17 s -> 2.6 s at 790 MB: page reads were system calls
    try:
        present = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.Error:
        return []
    found = []
    for table in sorted(present & read_tables()):  # our own names only: a PRAGMA takes no bound parameter
        try:
            lines = [line for row in con.execute(f"PRAGMA quick_check({quote_ident(table)})")
                     for line in str(row[0]).splitlines()]
        except sqlite3.DatabaseError as exc:  # e.g. "database disk image is malformed": a page it cannot parse
            lines = [str(exc)]
        problems = [line for line in lines if line != "ok" and not line.startswith("*** in database")]
        found.append((table, len(problems), problems[0] if problems else None))
    return found


def _interruptible(con: sqlite3.Connection, work):
    """`work()` in a thread, so that Ctrl-C / SIGTERM (raised in the main thread while it waits) stop SQLite at
    once instead of after a table's whole check: a PRAGMA is one step that no Python signal handler interrupts."""
    result: dict = {}

    def target():
        try:
            result["value"] = work()
        except BaseException as exc:  # handed to the caller's thread
            result["error"] = exc

    worker = threading.Thread(target=target, name="nsysql-sqlite-check", daemon=True)
    worker.start()
    try:
        worker.join()
    except BaseException:
        con.interrupt()
        worker.join()
        raise
    if "error" in result:
        raise result["error"]
    return result["value"]


def stage(con, found: list[Finding]) -> None:
    """The findings as raw.nsysql_sqlite_check, which normalize.nsys3.sqlite_check keeps in the cache."""
    con.execute("CREATE TABLE raw.nsysql_sqlite_check (raw_table VARCHAR, problems BIGINT, first_problem VARCHAR)")
    if found:
        con.executemany("INSERT INTO raw.nsysql_sqlite_check VALUES (?, ?, ?)", found)


def describe(problems: int, first: str | None) -> str:
    """`2 problems (first: On tree page 87 cell 0: 2nd reference to page 88)`."""
    many = "100 or more problems" if problems >= 100 else f"{problems} problem{'s' * (problems != 1)}"
    return f"{many} (first: {first})" if first else many


def failure(export, found: list[Finding]) -> str | None:
    """The one error line when normalizing failed and the check found damage: which tables, what SQLite says."""
    hurt = [(t, n, first) for t, n, first in found if n]
    if not hurt:
        return None
    where = "; ".join(f"{t}: {describe(n, first)}" for t, n, first in hurt)
    return (f"{export}: the SQLite file is damaged; SQLite's integrity check finds {where}; export it again "
            "from the .nsys-rep (nsys export --type sqlite)")
