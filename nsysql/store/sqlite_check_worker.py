"""The process that runs SQLite's integrity check for nsysql/store/sqlite_check.py, beside the cache build.

Run as a script (`python -I sqlite_check_worker.py URI MMAP_BYTES TABLE...`), so it imports only the standard
library. It prints one JSON line per table checked: [table, problems, first problem or null]. A separate process
because the check reads the export memory-mapped while DuckDB reads it too: should the file change under the
mapping (a WAL-mode export, a file truncated meanwhile), the SIGBUS ends this process, not the build, and the
caller checks again without the mapping."""
from __future__ import annotations

import json
import signal
import sqlite3
import sys


def check(uri: str, mmap_bytes: int, tables: list[str]) -> None:
    try:
        con = sqlite3.connect(uri, uri=True)
        con.execute(f"PRAGMA mmap_size = {int(mmap_bytes)}")  # 17 s -> 2.6 s at 790 MB: page reads were system calls
        present = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.Error:  # SQLite cannot read the file at all: nothing to check, the importer says why
        return
    for table in sorted(present & set(tables)):  # our own table names: a PRAGMA takes no bound parameter
        quoted = '"' + table.replace('"', '""') + '"'
        try:
            lines = [line for row in con.execute(f"PRAGMA quick_check({quoted})") for line in str(row[0]).splitlines()]
        except sqlite3.DatabaseError as exc:  # e.g. "database disk image is malformed": a page it cannot parse
            lines = [str(exc)]
        problems = [line for line in lines if line != "ok" and not line.startswith("*** in database")]
        print(json.dumps([table, len(problems), problems[0] if problems else None]), flush=True)


if __name__ == "__main__":
    # Ctrl-C at the terminal reaches this process too: end at once (a PRAGMA is one step no Python handler interrupts)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    check(sys.argv[1], int(sys.argv[2]), sys.argv[3:])
