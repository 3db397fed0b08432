"""SQLite's own integrity check of the tables nsysql reads, run once per export when its cache is built.

A damaged page does not always stop a read: a page referenced twice repeats its rows, a wrong cell count drops
some, and the sums come out wrong without a sign. `PRAGMA quick_check(TABLE)` walks the table's b-tree and
finds these. It runs once per cache build, in its own process beside the build (nsysql/store/sqlite_check_worker.py),
and only over the tables the normalize SQL reads (not OSRT_CALLCHAINS and the like). Its findings are kept in the cache (normalized table
`sqlite_check`), so later commands only read them back. Memory-mapped reads make it cheap: about 3 s on a 790 MB export whose cold
`summarize` takes about 25 s, against 17 s with SQLite's default reads (docs/performance-history.md).
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

from nsysql.sql import catalog
from nsysql.store import readonly

MMAP_BYTES = 1 << 40  # SQLite clamps it to its build's maximum (2 GB by default); beyond, it reads as usual
Finding = tuple[str, int, "str | None"]  # (raw table, problems, first problem)


def read_tables() -> set[str]:
    """The raw tables the normalize SQL reads: those with an empty stand-in in raw_stubs, and those a shim reads."""
    stubs = re.findall(r"CREATE TABLE raw\.(\w+)", catalog.get("normalize.nsys3.raw_stubs").sql)
    shims = [r.removeprefix("nsys.") for shim in catalog.group("normalize.shims") for r in shim.requires]
    return set(stubs) | set(shims)


def run(link: Path) -> list[Finding]:
    """One finding per table read that `link` (nsysql/store/readonly.py's private name of the export) holds; empty when
    SQLite cannot read the file at all (the importer then says why). Nothing is written beside the export:
    a rollback-journal file is opened immutable, a WAL-mode one is a link in a private directory."""
    return start(link).result()


class Running:
    """The check of one export, running in its own process (nsysql/store/sqlite_check_worker.py) while the caller goes
    on: the importer builds the cache meanwhile, and DuckDB's SQLite scanner leaves part of the second core idle."""

    def __init__(self, link: Path):
        self._link = link
        self._found: list[Finding] | None = None
        self._proc = _spawn(link, MMAP_BYTES)

    def result(self) -> list[Finding]:
        """The findings, once the check is done. Should the memory-mapped check die (a SIGBUS when the file changed
        under the mapping), it runs again with plain reads. Ctrl-C / SIGTERM while waiting end the check too."""
        if self._found is None:
            try:
                found, ok = _collect(self._proc)
                if not ok:
                    self._proc = _spawn(self._link, 0)
                    found, ok = _collect(self._proc)
            except BaseException:
                self.cancel()
                raise
            self._found = found
        return list(self._found)

    def cancel(self) -> None:
        """Stop a check still running (the build failed or was interrupted) and wait for its process."""
        if self._proc.poll() is None:
            self._proc.kill()
        self._proc.wait()
        if self._found is None:
            self._found = []


def start(link: Path) -> Running:
    """Start the check of `link` in its own process; `.result()` gives run()'s findings."""
    return Running(link)


def worker_command(link: Path, mmap_bytes: int) -> list[str]:
    """The worker's command line: a rollback-journal export is opened immutable, a WAL-mode one read-only."""
    uri = f"file:{quote(str(link))}?mode=ro" + ("" if readonly.is_wal(link) else "&immutable=1")
    # -I: the worker imports the standard library only, not this package (no polars, no duckdb: a fast start)
    return [sys.executable, "-I", str(Path(__file__).with_name("sqlite_check_worker.py")), uri, str(mmap_bytes),
            *sorted(read_tables())]


def _spawn(link: Path, mmap_bytes: int) -> subprocess.Popen:
    return subprocess.Popen(worker_command(link, mmap_bytes), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL, text=True)


def _collect(proc: subprocess.Popen) -> tuple[list[Finding], bool]:
    """The worker's findings, and whether it ended normally."""
    out, _ = proc.communicate()
    found: list[Finding] = []
    for line in out.splitlines():
        table, problems, first = json.loads(line)
        found.append((table, int(problems), first))
    return found, proc.returncode == 0


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
