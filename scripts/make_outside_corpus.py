#!/usr/bin/env python3
"""An outside corpus of odd, damaged and edited inputs, built independently of scripts/make_bad_inputs.py (written
without reading it), as a new user would meet them: odd names and paths, files that are not exports, exports cut
short, edited, emptied, re-encoded or damaged page by page. Each case lives in its own directory, made from a
small fixture (an .sqlite.xz under fixtures/), and says what a correct run gives:

  same   exit 0, stdout equal to the untouched export's (its path replaced), nothing on stderr
  error  exit 1, nothing on stdout, one `Error: ...` line on stderr containing `needle`
  warn   a `warning:` line containing `needle`; then a result (exit 0) or one `Error:` line (exit 1)
  clean  a result with no `Error:` line (exit 0), or one `Error:` line (exit 1)

and, for every case and command: no traceback, no hang, nothing written in the case's directory.

Library use (tests/test_outside_corpus.py):  cases = build(root, fixture_xz)
CLI, every case through every command in a subprocess with a timeout, failures listed:
    python scripts/make_outside_corpus.py OUTDIR [--fixture X.sqlite.xz] [--external DIR] [--nsysql 'python -m nsysql.cli.app']
"""
from __future__ import annotations

import argparse
import gzip
import lzma
import os
import shlex
import shutil
import socket
import sqlite3
import stat
import struct
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "fixtures" / "gpt-tiny-forward" / "export.sqlite.xz"
EXTERNAL = REPO.parent / "shared" / "samples"

# command family -> arguments after `nsysql` (P: the export)
COMMANDS = {
    "summarize": lambda p: ["summarize", p],
    "report": lambda p: ["report", "cuda_gpu_kern_sum", p],
    "kernels": lambda p: ["kernels", p, "-f", "csv"],
    "steps": lambda p: ["steps", p],
    "gaps": lambda p: ["gaps", p],
    "sql": lambda p: ["sql", p, "SELECT 1"],
    "overview": lambda p: ["overview", p],
}
KERNEL, RUNTIME, NVTX = "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS"
ROOT = os.geteuid() == 0 if hasattr(os, "geteuid") else False  # root reads a mode-000 file


@dataclass
class Case:
    name: str
    arg: str            # what the user types as EXPORT (absolute, or relative to cwd)
    expect: str         # same | error | warn | clean
    needle: str = ""
    directory: Path = field(default=Path("."))  # the case's own directory: nothing may appear or change in it
    cwd: Path | None = None


CASES: list[tuple[str, str, str, object]] = []  # (name, expect, needle, builder(dir, good) -> arg or (arg, cwd))


def case(name: str, expect: str, needle: str = ""):
    def register(fn):
        CASES.append((name, expect, needle, fn))
        return fn
    return register


# -- helpers ---------------------------------------------------------------------------------------
def copy(good: Path, target: Path) -> Path:
    shutil.copyfile(good, target)
    return target


def edit(good: Path, target: Path, *statements: str) -> Path:
    """A copy of the export with SQL applied (as someone editing it with the sqlite3 tool would)."""
    copy(good, target)
    con = sqlite3.connect(target)
    try:
        for sql in statements:
            con.execute(sql)
        con.commit()
    finally:
        con.close()
    return target


def keep_only(good: Path, target: Path, keep: set[str]) -> Path:
    copy(good, target)
    con = sqlite3.connect(target)
    try:
        for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
            if name not in keep:
                con.execute(f'DROP TABLE "{name}"')
        con.commit()
    finally:
        con.close()
    return target


def page_size(path: Path) -> int:
    size = struct.unpack(">H", path.read_bytes()[16:18])[0]
    return 65536 if size == 1 else size


def children(path: Path, table: str) -> tuple[int, list[tuple[int, int]]]:
    """(root page, [(offset of a child pointer in the file, child page)]) of a table whose root is an interior page."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    root = con.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]
    con.close()
    data, size = path.read_bytes(), page_size(path)
    base = (root - 1) * size
    assert data[base] == 0x05, f"{table}: root page {root} is not an interior table page"
    cells = struct.unpack(">H", data[base + 3:base + 5])[0]
    out = []
    for i in range(cells):
        cell = struct.unpack(">H", data[base + 12 + 2 * i:base + 14 + 2 * i])[0]
        out.append((base + cell, struct.unpack(">I", data[base + cell:base + cell + 4])[0]))
    return root, out


def patch(path: Path, offset: int, data: bytes) -> None:
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(data)


# -- names and paths -------------------------------------------------------------------------------
@case("unicode_emoji_name", "same")
def _(d, good):
    return str(copy(good, d / "prüfung_日本語_🚀.sqlite"))


@case("newline_in_name", "same")
def _(d, good):
    return str(copy(good, d / "run\nsecond line.sqlite"))


@case("newline_in_name_not_sqlite", "error", "not a SQLite file")
def _(d, good):  # the error must stay on one line
    (d / "bad\nname.sqlite").write_text("not a database\n")
    return str(d / "bad\nname.sqlite")


@case("newline_in_name_runtime_twice", "warn", "duplicate rows")
def _(d, good):  # and so must each warning
    return str(edit(good, d / "two\nlines.sqlite", f"INSERT INTO {RUNTIME} SELECT * FROM {RUNTIME}"))


@case("terminal_escape_in_name", "error", "not a SQLite file")
def _(d, good):  # an ESC sequence in a name must not reach the terminal raw
    (d / "\x1b[2J\x1b[31mred.sqlite").write_bytes(b"")
    return str(d / "\x1b[2J\x1b[31mred.sqlite")


@case("spaces_and_parens", "same")
def _(d, good):
    return str(copy(good, d / "my run (final) v2.sqlite"))


@case("dash_leading_relative", "error", "./-x.sqlite")
def _(d, good):  # `nsysql summarize -x.sqlite` reads as an option: one usage line
    copy(good, d / "-x.sqlite")
    return "-x.sqlite", d


@case("dash_leading_dot_slash", "same")
def _(d, good):
    copy(good, d / "-x.sqlite")
    return "./-x.sqlite", d


@case("brackets_literal_with_decoy", "same")
def _(d, good):  # `run[1].sqlite` exists: it is the file meant, not a glob matching run1.sqlite
    (d / "run1.sqlite").write_bytes(b"decoy: not this one\n")
    return str(copy(good, d / "run[1].sqlite"))


@case("quoted_glob_one_match", "clean")  # commands taking EXPORT... expand it; those taking one EXPORT refuse
def _(d, good):
    copy(good, d / "rank0.sqlite")
    return str(d / "rank?.sqlite")


@case("quoted_glob_no_match", "error")
def _(d, good):
    return str(d / "nothing_here_*.sqlite")


@case("directory_named_sqlite", "error", "directory")
def _(d, good):
    (d / "x.sqlite").mkdir()
    return str(d / "x.sqlite")


@case("dangling_symlink", "error", "no such file")
def _(d, good):
    copy(good, d / "gone.sqlite")
    os.symlink(d / "gone.sqlite", d / "link.sqlite")
    (d / "gone.sqlite").unlink()
    return str(d / "link.sqlite")


@case("symlink_chain", "same")
def _(d, good):
    (d / "real").mkdir()
    copy(good, d / "real" / "export.sqlite")
    os.symlink(d / "real" / "export.sqlite", d / "one.sqlite")
    os.symlink("one.sqlite", d / "two.sqlite")
    return str(d / "two.sqlite")


@case("symlink_loop", "error", "symbolic links")
def _(d, good):
    os.symlink("b.sqlite", d / "a.sqlite")
    os.symlink("a.sqlite", d / "b.sqlite")
    return str(d / "a.sqlite")


@case("mode_000_file", "same" if ROOT else "error")
def _(d, good):
    target = copy(good, d / "locked.sqlite")
    target.chmod(0)
    return str(target)


@case("read_only_directory", "same")
def _(d, good):
    (d / "ro").mkdir()
    copy(good, d / "ro" / "export.sqlite")
    (d / "ro").chmod(0o555)
    return str(d / "ro" / "export.sqlite")


@case("name_250_bytes", "same")
def _(d, good):
    return str(copy(good, d / ("long_" * 49 + "x.sqlite")[-250:]))


@case("name_not_utf8", "same")
def _(d, good):
    raw = os.path.join(os.fsencode(d), b"run\xff\xfe.sqlite")
    shutil.copyfile(good, raw)
    return os.fsdecode(raw)


@case("dotdot_in_path", "same")
def _(d, good):
    (d / "sub").mkdir()
    copy(good, d / "export.sqlite")
    return str(d / "sub" / ".." / "export.sqlite")


@case("trailing_slash", "same")
def _(d, good):  # `x.sqlite/` names the file x.sqlite for pathlib, hence for nsysql
    return str(copy(good, d / "export.sqlite")) + "/"


@case("unix_socket", "error", "socket")
def _(d, good):
    s = socket.socket(socket.AF_UNIX)
    try:
        s.bind(str(d / "s.sqlite"))
    finally:
        s.close()
    return str(d / "s.sqlite")


@case("dev_null", "error", "character device")
def _(d, good):
    return "/dev/null"


@case("single_dash", "error")
def _(d, good):  # no stdin reading: `-` is a file name that does not exist here
    return "-", d


# -- files that are not exports --------------------------------------------------------------------
@case("zero_bytes", "error", "not a SQLite file")
def _(d, good):
    (d / "empty.sqlite").write_bytes(b"")
    return str(d / "empty.sqlite")


@case("magic_only", "error", "SQLite")
def _(d, good):
    (d / "magic.sqlite").write_bytes(b"SQLite format 3\x00")
    return str(d / "magic.sqlite")


@case("zero_page", "error", "not a SQLite file")
def _(d, good):
    (d / "zeros.sqlite").write_bytes(bytes(4096))
    return str(d / "zeros.sqlite")


@case("magic_then_noise", "error")
def _(d, good):
    (d / "noise.sqlite").write_bytes(good.read_bytes()[:16] + os.urandom(8192))
    return str(d / "noise.sqlite")


@case("csv_named_sqlite", "error", "not a SQLite file")
def _(d, good):
    (d / "stats.sqlite").write_text("Time (%),Total Time (ns),Instances\n84.8,24410,3\n")
    return str(d / "stats.sqlite")


@case("nsys_rep_given", "error", "nsys export")
def _(d, good):
    (d / "profile.nsys-rep").write_bytes(os.urandom(4096))
    return str(d / "profile.nsys-rep")


@case("gzip_named_xz", "error", "not a valid .xz")
def _(d, good):
    (d / "export.sqlite.xz").write_bytes(gzip.compress(good.read_bytes()))
    return str(d / "export.sqlite.xz")


@case("xz_of_text", "error", "not a SQLite file")
def _(d, good):
    (d / "export.sqlite.xz").write_bytes(lzma.compress(b"hello, this is not a database\n" * 100))
    return str(d / "export.sqlite.xz")


@case("xz_cut_in_half", "error", ".xz")
def _(d, good):
    data = lzma.compress(good.read_bytes(), preset=0)
    (d / "export.sqlite.xz").write_bytes(data[:len(data) // 2])
    return str(d / "export.sqlite.xz")


@case("xz_of_nothing", "error", "not a SQLite file")
def _(d, good):
    (d / "export.sqlite.xz").write_bytes(lzma.compress(b""))
    return str(d / "export.sqlite.xz")


@case("xz_twice", "error", "not a SQLite file")
def _(d, good):
    (d / "export.sqlite.xz").write_bytes(lzma.compress(lzma.compress(good.read_bytes(), preset=0), preset=0))
    return str(d / "export.sqlite.xz")


@case("xz_of_good", "same")
def _(d, good):
    (d / "export.sqlite.xz").write_bytes(lzma.compress(good.read_bytes(), preset=0))
    return str(d / "export.sqlite.xz")


@case("sqlite_but_not_nsys", "error", "not an Nsight Systems export")
def _(d, good):
    con = sqlite3.connect(d / "app.sqlite")
    con.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
    con.execute("INSERT INTO users (name) VALUES ('ada'), ('grace')")
    con.commit()
    con.close()
    return str(d / "app.sqlite")


@case("sqlite_without_tables", "error", "not an Nsight Systems export")
def _(d, good):
    con = sqlite3.connect(d / "blank.sqlite")
    con.execute("PRAGMA user_version = 7")  # writes the header page, no table
    con.close()
    return str(d / "blank.sqlite")


# -- exports cut short ------------------------------------------------------------------------------
@case("cut_after_first_page", "error")
def _(d, good):
    (d / "export.sqlite").write_bytes(good.read_bytes()[:page_size(good)])
    return str(d / "export.sqlite")


@case("cut_in_half", "clean")
def _(d, good):
    data = good.read_bytes()
    (d / "export.sqlite").write_bytes(data[:len(data) // 2])
    return str(d / "export.sqlite")


@case("cut_last_page", "clean")
def _(d, good):
    data = good.read_bytes()
    (d / "export.sqlite").write_bytes(data[:-page_size(good)])
    return str(d / "export.sqlite")


@case("cut_mid_page", "clean")
def _(d, good):
    data = good.read_bytes()
    (d / "export.sqlite").write_bytes(data[:len(data) - 1000])
    return str(d / "export.sqlite")


# -- exports edited: values --------------------------------------------------------------------------
@case("text_in_integer_columns", "clean")
def _(d, good):
    return str(edit(good, d / "export.sqlite", f"UPDATE {RUNTIME} SET start = 'yesterday' WHERE rowid % 50 = 0"))


@case("nulls_in_every_column", "clean")
def _(d, good):  # NOT NULL dropped (a copy made with CREATE TABLE AS), then every 7th row all NULL
    statements = []
    con = sqlite3.connect(f"file:{good}?mode=ro", uri=True)
    for table in (KERNEL, RUNTIME, NVTX):
        cols = [r[1] for r in con.execute(f"PRAGMA table_info({table})")]
        statements += [f"CREATE TABLE loose AS SELECT * FROM {table}", f"DROP TABLE {table}",
                       f"ALTER TABLE loose RENAME TO {table}",
                       f"UPDATE {table} SET " + ", ".join(f'"{c}" = NULL' for c in cols) + " WHERE rowid % 7 = 0"]
    con.close()
    return str(edit(good, d / "export.sqlite", *statements))


@case("huge_timestamps", "clean")
def _(d, good):
    return str(edit(good, d / "export.sqlite",
                    f'UPDATE {KERNEL} SET start = 9223372036854775000, "end" = 9223372036854775807 WHERE rowid <= 3'))


@case("negative_timestamps", "clean")
def _(d, good):  # every time of every event table moved 2^62 ns before zero: still consistent
    con = sqlite3.connect(f"file:{good}?mode=ro", uri=True)
    tables = [t for (t,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
              if {"start", "end"} <= {r[1] for r in con.execute(f'PRAGMA table_info("{t}")')}]
    con.close()
    shift = 1 << 62
    return str(edit(good, d / "export.sqlite",
                    *[f'UPDATE "{t}" SET start = start - {shift}, "end" = "end" - {shift}' for t in tables]))


@case("end_before_start", "warn", "end before they start")
def _(d, good):
    return str(edit(good, d / "export.sqlite", f'UPDATE {KERNEL} SET start = "end", "end" = start WHERE rowid % 3 = 0'))


@case("runtime_rows_twice", "warn", "duplicate rows")
def _(d, good):
    return str(edit(good, d / "export.sqlite", f"INSERT INTO {RUNTIME} SELECT * FROM {RUNTIME}"))


@case("some_kernels_twice", "warn", "duplicate rows")
def _(d, good):
    return str(edit(good, d / "export.sqlite", f"INSERT INTO {KERNEL} SELECT * FROM {KERNEL} WHERE rowid % 2 = 0"))


@case("stringids_renamed_twice", "warn", "StringIds")
def _(d, good):
    return str(edit(good, d / "export.sqlite", "CREATE TABLE loose AS SELECT * FROM StringIds", "DROP TABLE StringIds",
                    "ALTER TABLE loose RENAME TO StringIds",  # without its PRIMARY KEY, as a hand merge leaves it
                    "INSERT INTO StringIds SELECT id, value || ' (copy)' FROM StringIds"))


@case("stringids_dropped", "warn", "StringIds: missing")
def _(d, good):
    return str(edit(good, d / "export.sqlite", "DROP TABLE StringIds"))


@case("schema_version_from_future", "error", "newer than")
def _(d, good):
    return str(edit(good, d / "export.sqlite",
                    "UPDATE META_DATA_EXPORT SET value = '9.1.0' WHERE name = 'EXPORT_SCHEMA_VERSION'"))


@case("schema_version_words", "error", "schema version")
def _(d, good):
    return str(edit(good, d / "export.sqlite",
                    "UPDATE META_DATA_EXPORT SET value = 'three point twenty' WHERE name = 'EXPORT_SCHEMA_VERSION'"))


# -- exports edited: tables -------------------------------------------------------------------------
@case("zero_rows_everywhere", "clean")
def _(d, good):
    con = sqlite3.connect(f"file:{good}?mode=ro", uri=True)
    tables = [t for (t,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    con.close()
    return str(edit(good, d / "export.sqlite", *[f'DELETE FROM "{t}"' for t in tables]))


@case("only_nvtx", "clean")
def _(d, good):
    return str(keep_only(good, d / "export.sqlite", {NVTX, "StringIds", "META_DATA_EXPORT"}))


@case("only_osrt", "clean")
def _(d, good):
    return str(keep_only(good, d / "export.sqlite", {"OSRT_API", "StringIds", "META_DATA_EXPORT"}))


@case("only_metadata", "clean")
def _(d, good):
    return str(keep_only(good, d / "export.sqlite", {"META_DATA_EXPORT"}))


@case("kernels_without_runtime", "clean")
def _(d, good):
    return str(edit(good, d / "export.sqlite", f"DROP TABLE {RUNTIME}"))


@case("kernel_table_is_a_view", "clean")
def _(d, good):
    return str(edit(good, d / "export.sqlite", f"ALTER TABLE {KERNEL} RENAME TO k_saved",
                    f"CREATE VIEW {KERNEL} AS SELECT * FROM k_saved"))


@case("extra_columns", "same")
def _(d, good):
    return str(edit(good, d / "export.sqlite", f"ALTER TABLE {KERNEL} ADD COLUMN myNote TEXT DEFAULT 'looked at'",
                    f"ALTER TABLE {RUNTIME} ADD COLUMN reviewed INTEGER DEFAULT 1"))


@case("kernel_columns_typed_text", "clean")
def _(d, good):  # the right table, every column declared TEXT and holding words
    con = sqlite3.connect(f"file:{good}?mode=ro", uri=True)
    cols = [r[1] for r in con.execute(f"PRAGMA table_info({KERNEL})")]
    con.close()
    return str(edit(good, d / "export.sqlite", f"DROP TABLE {KERNEL}",
                    f"CREATE TABLE {KERNEL} (" + ", ".join(f'"{c}" TEXT' for c in cols) + ")",
                    f"INSERT INTO {KERNEL} VALUES (" + ", ".join("'soon'" for _ in cols) + ")"))


# -- the same data, stored differently ------------------------------------------------------------
@case("wal_mode", "same")
def _(d, good):
    return str(edit(good, d / "export.sqlite", "PRAGMA journal_mode = WAL"))


@case("page_size_64k", "same")
def _(d, good):
    return str(edit(good, d / "export.sqlite", "PRAGMA page_size = 65536", "VACUUM"))


@case("utf16_database", "same")
def _(d, good):
    target = d / "export.sqlite"
    src, con = sqlite3.connect(f"file:{good}?mode=ro", uri=True), sqlite3.connect(target)
    con.execute("PRAGMA encoding = 'UTF-16le'")  # SQLite attaches no database of another encoding: rows go via Python
    for name, sql in src.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'").fetchall():
        con.execute(sql)
        cols = ", ".join(f'"{r[1]}"' for r in src.execute(f'PRAGMA table_info("{name}")'))
        rows = src.execute(f'SELECT rowid, {cols} FROM "{name}"').fetchall()
        if rows:
            con.executemany(f'INSERT INTO "{name}" (rowid, {cols}) VALUES ({", ".join("?" * len(rows[0]))})', rows)
    con.commit()
    src.close()
    con.close()
    return str(target)


@case("stale_journal_beside", "clean")
def _(d, good):  # a left-over rollback journal beside it (a crashed sqlite3 session): read, never replayed here
    copy(good, d / "export.sqlite")
    (d / "export.sqlite-journal").write_bytes(os.urandom(1024))
    return str(d / "export.sqlite")


# -- exports damaged page by page -------------------------------------------------------------------
@case("kernel_leaf_zeroed", "error", KERNEL)
def _(d, good):
    target = copy(good, d / "export.sqlite")
    _, kids = children(target, KERNEL)
    patch(target, (kids[0][1] - 1) * page_size(target), bytes(page_size(target)))
    return str(target)


@case("runtime_page_listed_twice", "warn", "integrity check")
def _(d, good):
    target = copy(good, d / "export.sqlite")
    _, kids = children(target, RUNTIME)
    patch(target, kids[1][0], struct.pack(">I", kids[0][1]))  # the second child pointer names the first child
    return str(target)


@case("nvtx_leaf_cell_count_lowered", "warn", "integrity check")
def _(d, good):
    target = copy(good, d / "export.sqlite")
    _, kids = children(target, NVTX)
    at = (kids[0][1] - 1) * page_size(target)
    cells = struct.unpack(">H", target.read_bytes()[at + 3:at + 5])[0]
    patch(target, at + 3, struct.pack(">H", cells - 5))  # five rows silently gone from a plain read
    return str(target)


@case("schema_page_scribbled", "error")
def _(d, good):
    target = copy(good, d / "export.sqlite")
    patch(target, 100, b"\xff" * 400)  # sqlite_master's b-tree header and cell pointers
    return str(target)


# -- other people's exports, when ../shared is there -------------------------------------------------
EXTERNAL_CASES = {
    "external_mordred_copied": ("external/mordred_old/export.sqlite.xz", "clean", ""),  # 2021: no metadata table
    "external_dlprof_runtime_twice": ("external/dlprof_2070s/export.sqlite.xz", "warn", "duplicate rows"),  # 2.9.1
    "shared_small_train_via_symlink": ("small-train/export.sqlite", "clean", ""),
}


def _external(name: str, d: Path, source: Path) -> str:
    if source.name.endswith(".xz"):
        target = d / "theirs.sqlite"
        with lzma.open(source) as src, open(target, "wb") as dst:
            shutil.copyfileobj(src, dst)
        if name == "external_dlprof_runtime_twice":
            edit(target, d / "edited.sqlite", f"INSERT INTO {RUNTIME} SELECT * FROM {RUNTIME}")
            target.unlink()
            return str(d / "edited.sqlite")
        return str(target)
    os.symlink(source, d / "sample.sqlite")  # their read-only directory: nothing may be written there either
    return str(d / "sample.sqlite")


# -- building ---------------------------------------------------------------------------------------
def build(root: Path, fixture: Path = FIXTURE, external: Path | None = EXTERNAL) -> list[Case]:
    """Every case under root/<name>/; the untouched export as root/_good/export.sqlite (Case "_good")."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "_good").mkdir(exist_ok=True)
    good = root / "_good" / "export.sqlite"
    with lzma.open(fixture) as src, open(good, "wb") as dst:
        shutil.copyfileobj(src, dst)
    out = [Case("_good", str(good), "same", directory=root / "_good")]
    for name, expect, needle, builder in CASES:
        d = root / name
        d.mkdir()
        made = builder(d, good)
        arg, cwd = made if isinstance(made, tuple) else (made, None)
        out.append(Case(name, arg, expect, needle, d, cwd))
    for name, (rel, expect, needle) in EXTERNAL_CASES.items():
        source = (external / rel) if external else None
        if source is not None and source.is_file():
            d = root / name
            d.mkdir()
            out.append(Case(name, _external(name, d, source), expect, needle, d))
    return out


def unlock(root: Path) -> None:
    """Give back the permissions the cases took away, so the corpus can be deleted."""
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            if not os.path.islink(p):
                os.chmod(p, 0o755 if os.path.isdir(p) else 0o644)


def listing(directory: Path) -> dict:
    """Everything in a case's directory, recursively: kind, size, mtime and mode (links by their target)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(os.fsencode(directory)):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            out[p] = os.readlink(p) if stat.S_ISLNK(st.st_mode) else (st.st_mode, st.st_size, st.st_mtime_ns)
    return out


def neutral(text: str, case: Case) -> str:
    """Output with the export's path left out, so runs on copies compare with runs on the original (the summary's
    first line names it, shortened to fit the width)."""
    for form in sorted({case.arg, os.fsencode(case.arg).decode("utf-8", "replace")}, key=len, reverse=True):
        text = text.replace(form, "EXPORT")
    return text.split("\n", 1)[-1] if text.startswith("nsysql summary: ") else text


def verdict(case: Case, code: int, stdout: str, stderr: str, same_as: str | None) -> str | None:
    """What breaks the contract, or None."""
    lines = stderr.splitlines()
    notes = [l for l in lines if l.startswith(("warning:", "note:"))]
    errors = [l for l in lines if l not in notes]
    if "Traceback" in stdout + stderr:
        return "traceback"
    if any(ch < " " and ch != "\n" or ch == "\x7f" for ch in stderr):
        return f"a control character on stderr: {stderr[:200]!r}"
    if code not in (0, 1):
        return f"exit {code}"
    if code == 1 and (len(errors) != 1 or not errors[0].startswith("Error: ")):
        return f"exit 1 without exactly one Error: line: {errors[:3]}"
    if code == 0 and errors:
        return f"exit 0 with error lines: {errors[:3]}"
    if case.expect == "error":
        if code != 1:
            return "expected an error, got a result"
        if case.needle and case.needle.lower() not in errors[0].lower():
            return f"error line lacks {case.needle!r}: {errors[0]}"
    if case.expect == "warn" and not any(case.needle in l for l in notes):
        return f"no warning with {case.needle!r}: {notes[:3]}"
    if case.expect == "same":
        if code != 0 or lines:
            return f"expected the original's result; exit {code}, stderr {lines[:3]}"
        if same_as is not None and neutral(stdout, case) != same_as:
            return "output differs from the original's"
    return None


# -- running, as a new user would ----------------------------------------------------------------------
def _run(nsysql: list[str], case: Case, args: list[str], cache: Path, timeout: float) -> tuple[int, str, str]:
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, TMPDIR=tmp, COLUMNS="100", NO_COLOR="1", NSYSQL_CACHE_DIR=str(cache))
        try:
            res = subprocess.run(nsysql + args, cwd=case.cwd, env=env, capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return -1, "", f"hang: no end after {timeout:.0f} s"
        left = os.listdir(tmp)
    err = res.stderr.decode("utf-8", "replace")
    if left:
        err += f"\nleft in TMPDIR: {left}"
    return res.returncode, res.stdout.decode("utf-8", "replace"), err


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir", type=Path)
    ap.add_argument("--fixture", type=Path, default=FIXTURE)
    ap.add_argument("--external", type=Path, default=EXTERNAL)
    ap.add_argument("--nsysql", default=f"{sys.executable} -m nsysql.cli.app", help="how to run nsysql")
    ap.add_argument("--build-only", action="store_true")
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("-v", "--verbose", action="store_true", help="one line per run: exit status, first stderr line")
    a = ap.parse_args()
    if a.outdir.exists():
        unlock(a.outdir)
        shutil.rmtree(a.outdir)
    cases = build(a.outdir, a.fixture, a.external if a.external.is_dir() else None)
    print(f"{len(cases)} cases in {a.outdir}")
    if a.build_only:
        return 0
    nsysql, failures, runs = shlex.split(a.nsysql), 0, 0
    good = cases[0]
    base = {cmd: neutral(_run(nsysql, good, args(good.arg), a.outdir / "_cache" / good.name, a.timeout)[1], good)
            for cmd, args in COMMANDS.items()}
    for c in cases:
        before = listing(c.directory)
        for cmd, args in COMMANDS.items():
            code, out, err = _run(nsysql, c, args(c.arg), a.outdir / "_cache" / c.name, a.timeout)
            runs += 1
            problem = "hang" if code == -1 else verdict(c, code, out, err, base[cmd])
            problem = problem or ("left in TMPDIR" if "left in TMPDIR" in err else None)
            if a.verbose:
                print(f"  {c.name:32} {cmd:9} exit {code}  {(err.strip().splitlines() or [''])[-1][:150]}")
            if problem:
                failures += 1
                print(f"FAIL {c.name} / {cmd}: {problem}\n     {err.strip()[:400]}")
        if listing(c.directory) != before:
            failures += 1
            print(f"FAIL {c.name}: something was written in its directory")
    print(f"{runs} runs, {failures} failures")
    unlock(a.outdir)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
