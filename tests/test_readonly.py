"""Exports are only read: a WAL-mode export (nsys writes none, sqlite3 tools can make one) leaves no -shm/-wal
beside it and works in a read-only directory; rows still in its -wal file are read."""
from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys

from typer.testing import CliRunner

import nsysql
from nsysql.cli.app import app
from nsysql.store import readonly


def _digest(directory):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(directory.iterdir())}


def _wal_copy(src, directory):
    directory.mkdir()
    path = directory / "run.sqlite"
    shutil.copyfile(src, path)
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal"
    con.close()
    assert readonly.is_wal(path) and sorted(p.name for p in directory.iterdir()) == ["run.sqlite"]
    return path


def test_wal_export_in_read_only_directory(export_files, tmp_path):
    src = export_files["gpt-tiny-train-fp32"]
    path = _wal_copy(src, tmp_path / "ro")
    before = _digest(path.parent)
    os.chmod(path.parent, 0o555)  # (root ignores the mode; the listing below is the real check)
    try:
        res = CliRunner().invoke(app, ["summarize", str(path), "-f", "json", "--cache-dir", str(tmp_path / "c")])
    finally:
        os.chmod(path.parent, 0o755)
    assert res.exit_code == 0, res.output
    assert _digest(path.parent) == before  # no -shm, no -wal, the export unchanged
    with nsysql.open(path, cache_dir=tmp_path / "c") as wal, nsysql.open(src, cache_dir=tmp_path / "c") as plain:
        assert wal.kernels().equals(plain.kernels())
    assert not [p for p in (tmp_path / "c").iterdir() if p.name.startswith(".building-")]


def test_rows_in_a_leftover_wal_file_are_read(export_files, tmp_path):
    src = export_files["gpt-tiny-train-fp32"]
    path = _wal_copy(src, tmp_path / "w")
    # a writer that died before its checkpoint: its -wal (and -shm) stay beside the export
    code = ("import sqlite3, os, sys\n"
            "con = sqlite3.connect(sys.argv[1]); con.execute('PRAGMA wal_autocheckpoint=0')\n"
            "con.execute('DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE rowid % 2 = 0'); con.commit()\n"
            "os._exit(0)\n")
    subprocess.run([sys.executable, "-c", code, str(path)], check=True)
    assert (tmp_path / "w" / "run.sqlite-wal").stat().st_size > 0
    before = _digest(path.parent)
    expected = sqlite3.connect(src).execute("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE rowid % 2 = 1"
                                            ).fetchone()[0]
    with nsysql.open(path, cache_dir=tmp_path / "c") as ex:
        assert ex.kernels().height == expected
    assert _digest(path.parent) == before
