"""The export as DuckDB's SQLite reader sees it: read-only, with nothing written beside it.

The reader gets a link in a private directory, so the user's path never appears in SQL text. A rollback-journal
file (what nsys writes) is then only read. A WAL-mode file is different: SQLite creates `-shm` and `-wal` files
beside the database it opens (and refuses it in a read-only directory), and the scanner takes no
`file:…?immutable=1` URI. SQLite places those files beside the path it resolves, so a WAL-mode export is given as
a hard link (or, across filesystems, a copy) in a private directory of the cache, with a copy of any `-wal` file
it has (its committed rows belong to the database); SQLite's own files then land there and vanish with it.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from nsysql.core.owner import owner_tag

WAL_VERSION = 2  # header bytes 18 and 19 (write and read format version): 1 legacy, 2 WAL


def is_wal(path: Path) -> bool:
    with open(path, "rb") as f:
        head = f.read(20)
    return len(head) == 20 and WAL_VERSION in (head[18], head[19])


@contextmanager
def sqlite_path(export: Path, scratch: Path) -> Iterator[Path]:
    """A path naming `export` for SQLite; `scratch` (the cache directory) holds a WAL-mode export's private
    directory, named `.building-<pid>@<host>-…` so a killed run's leftover is recognised and removed (nsysql/store/hygiene.py)."""
    if not is_wal(export):
        with tempfile.TemporaryDirectory(prefix=f"nsysql-{owner_tag()}-") as tmp:
            link = Path(tmp) / "export.sqlite"
            os.symlink(export.resolve(), link)
            yield link
        return
    with tempfile.TemporaryDirectory(prefix=f".building-{owner_tag()}-", suffix=".wal", dir=scratch) as tmp:
        link = Path(tmp) / "export.sqlite"
        try:
            os.link(export.resolve(), link)  # same file, another directory: no copy, and SQLite opens it read-only
        except OSError:  # another filesystem, or not allowed (fs.protected_hardlinks): copy
            shutil.copyfile(export, link)
        wal = Path(f"{export.resolve()}-wal")
        if wal.is_file() and wal.stat().st_size:
            shutil.copyfile(wal, f"{link}-wal")  # a copy: SQLite may rewrite or delete its WAL
        yield link
