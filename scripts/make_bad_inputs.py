#!/usr/bin/env python3
"""A corpus of bad, damaged or odd inputs, each in its own directory, for tests/test_bad_inputs.py.

Every case says what nsysql must do with it:
  ok     exit 0 (a correct result), stderr empty or only `warning:` lines;
  warn   exit 0 with a `warning:` line naming `needle` (impossible rows: the table and the count);
  error  exit 1 with exactly one `Error:` line containing `needle`;
  either exit 0 as `ok`, or exit 1 as `error` (damaged data that SQLite itself may or may not notice);
  warn-either  the `warning:` line, then exit 0, or exit 1 with one `Error:` line (a command that cannot
         work without the missing data).
Never a traceback, never a hang, never a file written beside the input.

    python scripts/make_bad_inputs.py GOOD.sqlite OUTDIR    # builds OUTDIR/<case>/..., prints the cases
"""
from __future__ import annotations

import lzma
import os
import shutil
import socket
import sqlite3
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable


@dataclass
class Case:
    name: str
    path: Path  # what is given to nsysql
    expect: str  # ok | warn | error | either
    needle: str = ""


def _copy(good: Path, d: Path, name: str = "run.sqlite") -> Path:
    path = d / name
    shutil.copyfile(good, path)
    os.chmod(path, 0o644)
    return path


def _edit(good: Path, d: Path, *sql: str, name: str = "run.sqlite") -> Path:
    path = _copy(good, d, name)
    con = sqlite3.connect(path)
    for stmt in sql:
        con.execute(stmt)
    con.commit()
    con.close()
    return path


def _bytes(d: Path, data: bytes, name: str = "run.sqlite") -> Path:
    path = d / name
    path.write_bytes(data)
    return path


def _truncate(good: Path, d: Path, size: int) -> Path:
    return _bytes(d, good.read_bytes()[:size])


def _corrupt_table(good: Path, d: Path, table: str) -> Path:
    """Overwrite the middle of one page of `table` with garbage: 'database disk image is malformed' territory."""
    path = _copy(good, d)
    con = sqlite3.connect(path)
    page_size = con.execute("PRAGMA page_size").fetchone()[0]
    root = con.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]
    con.close()
    with open(path, "r+b") as f:
        f.seek((root - 1) * page_size + 8)
        f.write(b"\xff" * 64)
    return path


def _without_column(good: Path, d: Path, table: str, column: str) -> Path:
    path = _copy(good, d)
    con = sqlite3.connect(path)
    con.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
    con.commit()
    con.close()
    return path


def _wal(good: Path, d: Path, leftover: bool) -> Path:
    path = _copy(good, d)
    con = sqlite3.connect(path)
    con.execute("PRAGMA journal_mode=WAL")
    con.close()
    if leftover:  # a writer killed before its checkpoint: -wal and -shm stay beside the export
        code = ("import sqlite3, os, sys; con = sqlite3.connect(sys.argv[1]); "
                "con.execute('PRAGMA wal_autocheckpoint=0'); "
                "con.execute('DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE rowid % 2 = 0'); con.commit(); os._exit(0)")
        import subprocess
        subprocess.run([sys.executable, "-c", code, str(path)], check=True)
    return path


def _xz(data: bytes, d: Path) -> Path:
    return _bytes(d, lzma.compress(data), "run.sqlite.xz")


def _schema(good: Path, d: Path, version: str) -> Path:
    return _edit(good, d, f"UPDATE META_DATA_EXPORT SET value = '{version}' WHERE name = 'EXPORT_SCHEMA_VERSION'")


def _fifo(d: Path) -> Path:
    os.mkfifo(d / "run.sqlite")
    return d / "run.sqlite"


def _socket(d: Path) -> Path:
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(d / "run.sqlite"))
    sock.close()  # the socket file stays
    return d / "run.sqlite"


def _loop(d: Path) -> Path:
    (d / "a.sqlite").symlink_to(d / "b.sqlite")
    (d / "b.sqlite").symlink_to(d / "a.sqlite")
    return d / "a.sqlite"


def _link(good: Path, d: Path, target_name: str, link_name: str) -> Path:
    target = _copy(good, d, target_name)
    (d / link_name).symlink_to(target.name)
    return d / link_name


def _dup_stringids(good: Path, d: Path) -> Path:
    return _edit(good, d, "ALTER TABLE StringIds RENAME TO StringIds_old",
                 "CREATE TABLE StringIds (id INTEGER, value TEXT)",
                 "INSERT INTO StringIds SELECT id, value FROM StringIds_old",
                 "INSERT INTO StringIds SELECT id, value FROM StringIds_old", "DROP TABLE StringIds_old")


K = "CUPTI_ACTIVITY_KIND_KERNEL"
R = "CUPTI_ACTIVITY_KIND_RUNTIME"

# (name, builder(good, directory) -> path given to nsysql, expect, needle)
CASES: list[tuple[str, Callable[[Path, Path], Path], str, str]] = [
    # -- not a file at all ------------------------------------------------------------------------------
    ("missing", lambda g, d: d / "run.sqlite", "error", "no such file"),
    ("directory", lambda g, d: d, "error", "is a directory"),
    ("fifo", lambda g, d: _fifo(d), "error", "FIFO"),
    ("socket", lambda g, d: _socket(d), "error", "socket"),
    ("symlink-loop", lambda g, d: _loop(d), "error", "symbolic links"),
    ("dangling-symlink", lambda g, d: (d / "run.sqlite").symlink_to(d / "gone.sqlite") or d / "run.sqlite",
     "error", "no such file"),
    # -- not SQLite, or not an export ------------------------------------------------------------------
    ("empty-file", lambda g, d: _bytes(d, b""), "error", "not a SQLite file"),
    ("text-file", lambda g, d: _bytes(d, b"step,time\n1,2\n"), "error", "not a SQLite file"),
    ("random-bytes", lambda g, d: _bytes(d, os.urandom(8192)), "error", "not a SQLite file"),
    ("header-only", lambda g, d: _bytes(d, b"SQLite format 3\x00"), "error", ""),
    ("header-and-zeros", lambda g, d: _bytes(d, b"SQLite format 3\x00" + bytes(4080)), "error", ""),
    ("empty-sqlite", lambda g, d: _sqlite(d, []), "error", "not an Nsight Systems export"),
    ("other-sqlite", lambda g, d: _sqlite(d, ["CREATE TABLE t (x)", "INSERT INTO t VALUES (1)"]), "error",
     "not an Nsight Systems export"),
    ("nsys-rep-name", lambda g, d: _copy(g, d, "run.nsys-rep"), "error", "nsys report"),
    ("truncated-half", lambda g, d: _truncate(g, d, g.stat().st_size // 2), "either", ""),
    ("truncated-one-page", lambda g, d: _truncate(g, d, 4096), "either", ""),
    ("corrupt-osrt-page", lambda g, d: _corrupt_table(g, d, "OSRT_API"), "either", "damaged"),
    ("corrupt-kernel-page", lambda g, d: _corrupt_table(g, d, K), "either", "damaged"),
    ("corrupt-stringids-page", lambda g, d: _corrupt_table(g, d, "StringIds"), "either", "damaged"),
    # -- compressed --------------------------------------------------------------------------------------
    ("xz-good", lambda g, d: _xz(g.read_bytes(), d), "ok", ""),
    ("xz-truncated", lambda g, d: _bytes(d, lzma.compress(g.read_bytes())[:5000], "run.sqlite.xz"), "error",
     "not a valid .xz"),
    ("xz-empty", lambda g, d: _bytes(d, b"", "run.sqlite.xz"), "error", "not a valid .xz"),
    ("xz-not-xz", lambda g, d: _bytes(d, b"plain text", "run.sqlite.xz"), "error", "not a valid .xz"),
    ("xz-of-text", lambda g, d: _xz(b"hello\n" * 100, d), "error", "not a SQLite file"),
    # -- odd names and modes ------------------------------------------------------------------------------
    ("glob-chars-name", lambda g, d: (_copy(g, d, "run1.sqlite"), _copy(g, d, "run[1].sqlite"))[1], "ok", ""),
    ("long-name", lambda g, d: _copy(g, d, "r" * 240 + ".sqlite"), "ok", ""),
    ("non-utf8-name", lambda g, d: _copy(g, d, os.fsdecode(b"caf\xe9.sqlite")), "ok", ""),
    ("quotes-and-spaces", lambda g, d: _copy(g, d, "it's a \"run\"; DROP TABLE x.sqlite"), "ok", ""),
    ("unicode-name", lambda g, d: _copy(g, d, "ラン・走り.sqlite"), "ok", ""),
    ("symlink-to-export", lambda g, d: _link(g, d, "real.sqlite", "run.sqlite"), "ok", ""),
    ("read-only-file", lambda g, d: (p := _copy(g, d), os.chmod(p, 0o444))[0], "ok", ""),
    ("wal-mode", lambda g, d: _wal(g, d, leftover=False), "ok", ""),
    ("wal-leftover", lambda g, d: _wal(g, d, leftover=True), "ok", ""),
    # -- schema ---------------------------------------------------------------------------------------------
    ("schema-too-old", lambda g, d: _schema(g, d, "1.9.0"), "error", "older than nsysql supports"),
    ("schema-too-new", lambda g, d: _schema(g, d, "9.0.0"), "error", "newer than nsysql supports"),
    ("schema-garbage", lambda g, d: _schema(g, d, "x.y"), "error", "unreadable export schema"),
    ("kernel-column-dropped", lambda g, d: _without_column(g, d, K, "gridX"), "either", ""),
    ("runtime-missing", lambda g, d: _edit(g, d, f"DROP TABLE {R}"), "either", ""),
    ("kernel-missing", lambda g, d: _edit(g, d, f"DROP TABLE {K}"), "either", ""),
    ("nvtx-missing", lambda g, d: _edit(g, d, "DROP TABLE NVTX_EVENTS"), "either", ""),
    ("extra-table", lambda g, d: _edit(g, d, "CREATE TABLE MY_NOTES (x)", "INSERT INTO MY_NOTES VALUES (1)"),
     "ok", ""),
    # -- impossible data -------------------------------------------------------------------------------------
    # summarize then fails on an empty (null-typed) column: one line, but not yet a helpful one
    ("stringids-missing", lambda g, d: _edit(g, d, "DROP TABLE StringIds"), "warn-either", "StringIds"),
    ("stringids-duplicated", lambda g, d: _dup_stringids(g, d), "warn", "rows repeat an id"),
    ("kernel-end-before-start", lambda g, d: _edit(g, d, f'UPDATE {K} SET "end" = start - 1000 WHERE rowid % 3 = 0'),
     "warn", K),
    ("runtime-duplicate-rows", lambda g, d: _edit(g, d, f"INSERT INTO {R} SELECT * FROM {R}"), "warn", R),
    ("nvtx-end-before-start", lambda g, d: _edit(g, d, 'UPDATE NVTX_EVENTS SET "end" = start - 5 WHERE "end" > start'),
     "warn", "NVTX_EVENTS"),
    ("all-events-empty", lambda g, d: _edit(g, d, f"DELETE FROM {K}", f"DELETE FROM {R}", "DELETE FROM NVTX_EVENTS"),
     "either", ""),
    ("nvtx-open-ranges", lambda g, d: _edit(g, d, 'UPDATE NVTX_EVENTS SET "end" = NULL WHERE rowid % 2 = 0'),
     "either", ""),
    ("kernel-text-times", lambda g, d: _edit(g, d, f"UPDATE {K} SET start = 'soon' WHERE rowid % 5 = 0"), "either", ""),
    ("huge-timestamps", lambda g, d: _edit(g, d, f'UPDATE {K} SET start = start + 4611686018427387904, '
                                                 f'"end" = "end" + 4611686018427387904'), "either", ""),
    ("zero-length-kernels", lambda g, d: _edit(g, d, f'UPDATE {K} SET "end" = start'), "ok", ""),
    # folder exports (nsys export --type parquetdir | arrowdir; nsysql/store/formats_in.py) and nsys reports
    ("parquetdir-good", lambda g, d: _parquetdir(g, d), "ok", ""),
    ("arrowdir-good", lambda g, d: _arrowdir(g, d), "ok", ""),
    ("parquetdir-kernel-missing", lambda g, d: _parquetdir(g, d, drop=K), "either", ""),
    ("parquetdir-stringids-missing", lambda g, d: _parquetdir(g, d, drop="StringIds"), "warn-either", "StringIds"),
    ("parquet-truncated", lambda g, d: _parquetdir(g, d, cut="NVTX_EVENTS"), "error", "truncated Parquet file"),
    ("parquet-not-parquet", lambda g, d: _parquetdir(g, d, replace=(K, b"kernel,start\n1,2\n")), "error",
     "is not a Parquet file"),
    ("arrow-other-schema", lambda g, d: _arrowdir(g, d, swap=(K, "StringIds")), "error",
     f"does not hold nsys's {K} table"),
    ("arrow-truncated", lambda g, d: _arrowdir(g, d, cut=R), "error", "truncated Arrow stream"),
    ("folder-without-tables", lambda g, d: (_bytes(d, b"notes", "README.txt"), d)[1], "error",
     "no <TABLE>.parquet or <TABLE>.arrow files"),
    ("nsys-rep-unreadable", lambda g, d: _bytes(d, os.urandom(4096), "run.nsys-rep"), "error", "nsys"),
]


def _parquetdir(good: Path, d: Path, drop: str = "", cut: str = "", replace: tuple[str, bytes] | None = None) -> Path:
    """The export as nsys's parquetdir (bench/parquetdir_of.py), a table left out, cut in half or replaced."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("parquetdir_of", Path(__file__).resolve().parents[1] / "bench" /
                                                  "parquetdir_of.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    folder = d / "run_pqtdir"
    module.convert(good, folder)
    if drop:
        (folder / f"{drop}.parquet").unlink()
    if cut:
        data = (folder / f"{cut}.parquet").read_bytes()
        (folder / f"{cut}.parquet").write_bytes(data[:len(data) // 2])
    if replace:
        (folder / f"{replace[0]}.parquet").write_bytes(replace[1])
    return folder


def _arrowdir(good: Path, d: Path, swap: tuple[str, str] | None = None, cut: str = "") -> Path:
    """The export as an arrowdir of IPC streams (written by Polars from the parquetdir), a table holding another's
    rows (`swap`: (table, the one whose rows it holds)) or cut in half."""
    import polars as pl
    (d / "tmp").mkdir()
    parquet = _parquetdir(good, d / "tmp")
    folder = d / "run_arwdir"
    folder.mkdir()
    for file in parquet.iterdir():
        pl.read_parquet(file).write_ipc_stream(folder / f"{file.stem}.arrow")
    shutil.rmtree(d / "tmp")
    if swap:
        shutil.copyfile(folder / f"{swap[1]}.arrow", folder / f"{swap[0]}.arrow")
    if cut:
        data = (folder / f"{cut}.arrow").read_bytes()
        (folder / f"{cut}.arrow").write_bytes(data[:len(data) // 2])
    return folder


def _sqlite(d: Path, statements: list[str]) -> Path:
    path = d / "run.sqlite"
    con = sqlite3.connect(path)
    for stmt in statements:
        con.execute(stmt)
    con.commit()
    con.close()
    if not statements:  # sqlite3 writes nothing until asked: make it a real, empty database file
        con = sqlite3.connect(path)
        con.execute("PRAGMA user_version = 1")
        con.close()
    return path


def build(good: Path, out: Path) -> list[Case]:
    """Every case of CASES, each in out/<name>/."""
    cases = []
    for name, make, expect, needle in CASES:
        d = out / name
        d.mkdir(parents=True)
        cases.append(Case(name, Path(make(good, d)), expect, needle))
    return cases


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    for case in build(Path(sys.argv[1]), Path(sys.argv[2])):
        print(f"{case.name:28} {case.expect:7} {case.path}")


if __name__ == "__main__":
    main()
