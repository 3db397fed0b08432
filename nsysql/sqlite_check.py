"""SQLite's own integrity check of the tables nsysql reads, run once per export when its cache is built.

A damaged page does not always stop a read: a page referenced twice repeats its rows, a wrong cell count drops
some, and the sums come out wrong without a sign. `PRAGMA quick_check(TABLE)` walks the table's b-tree and
finds these. It runs once per cache build, before DuckDB reads the export, and only over the tables the normalize
SQL reads (not OSRT_CALLCHAINS and the like); it runs in a thread so that Ctrl-C stops it at once. Its findings are kept in the cache (normalized table
`sqlite_check`), so later commands only read them back. Memory-mapped reads make it cheap: about 3 s on a 790 MB export whose cold
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
    return start(link).result()


class Running:
    """The check of one export, running in its own thread while the caller goes on (the importer builds the cache
    meanwhile: DuckDB's SQLite scanner reads a table on one core, which leaves a core for the check)."""

    def __init__(self, link: Path):
        self._found: list[Finding] | None = None
        self._error: BaseException | None = None
        self._cancelled = False
        uri = f"file:{quote(str(link))}?mode=ro" + ("" if readonly.is_wal(link) else "&immutable=1")
        self._thread: threading.Thread | None = None
        try:
            self._con = sqlite3.connect(uri, uri=True, check_same_thread=False)
        except sqlite3.Error:  # SQLite cannot read the file at all: nothing to check, the importer says why
            self._found = []
            return
        self._thread = threading.Thread(target=self._work, name="nsysql-sqlite-check", daemon=True)
        self._thread.start()

    def _work(self) -> None:
        try:
            self._found = _check(self._con, lambda: self._cancelled)
        except BaseException as exc:  # handed to the thread that asks for the result
            self._error = exc
        finally:
            self._con.close()

    def result(self) -> list[Finding]:
        """The findings, once the check is done. Ctrl-C / SIGTERM while waiting (raised in the main thread) stop
        SQLite at once: a PRAGMA is one step that no Python signal handler interrupts."""
        if self._thread is not None:
            try:
                self._thread.join()
            except BaseException:
                self.cancel()
                raise
        if self._error is not None:
            raise self._error
        return list(self._found or [])

    def cancel(self) -> None:
        """Stop a check still running (the build failed or was interrupted) and wait for its thread."""
        self._cancelled = True
        if self._thread is not None and self._thread.is_alive():
            try:
                self._con.interrupt()
            except sqlite3.ProgrammingError:  # closed meanwhile: the check had just finished
                pass
            self._thread.join()


def start(link: Path) -> Running:
    """Start the check of `link` in a thread; `.result()` gives run()'s findings."""
    return Running(link)


def _check(con: sqlite3.Connection, stopped=lambda: False) -> list[Finding]:
    con.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")  # 17 s -> 2.6 s at 790 MB: page reads were system calls
    try:
        present = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.Error:
        return []
    found = []
    for table in sorted(present & read_tables()):  # our own names only: a PRAGMA takes no bound parameter
        if stopped():  # cancelled: an interrupted table would read as damaged, and nobody waits for the rest
            break
        try:
            lines = [line for row in con.execute(f"PRAGMA quick_check({quote_ident(table)})")
                     for line in str(row[0]).splitlines()]
        except sqlite3.DatabaseError as exc:  # e.g. "database disk image is malformed": a page it cannot parse
            lines = [str(exc)]
        problems = [line for line in lines if line != "ok" and not line.startswith("*** in database")]
        found.append((table, len(problems), problems[0] if problems else None))
    return found


def stage(con, found: list[Finding]) -> None:
    """The findings as raw.nsysql_sqlite_check (importer.CHECK_TABLE), which normalize.nsys3.sqlite_check keeps in
    the cache."""
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
