"""Exports that are folders of tables: `nsys export --type parquetdir` (one `<TABLE>.parquet` per table, also
NVIDIA's recipes' `<report>_pqtdir/`) and `--type arrowdir` (one `<TABLE>.arrow` per table, an Arrow IPC stream
or file), read where they lie, never converted to SQLite and nothing written beside them.

A folder is recognised by what it holds (files named after a table whose first and last bytes are Parquet's or
Arrow's marks), not by its name. Its tables are attached to the build's DuckDB connection as the schema `nsys`,
an in-memory database, shaped as DuckDB's SQLite scanner shows a SQLite export, so the same raw views, shims and
normalize statements read either: each table gets the `rowid` SQLite gives it (its row number from 1: nsys writes
the rows of every format in the same order), integers become BIGINT and floats DOUBLE as SQLite stores them
(unsigned 64-bit values as the signed ones SQLite holds: nsys writes globalPid 0xFE00... as a negative number in
SQLite). Parquet is read by DuckDB itself, through views; Arrow through Polars (a dependency already: DuckDB
reads Arrow IPC only with an extension it would download) into in-memory tables, as the build's workers read on
cursors of their own, which see no Python object a view could name.

What is checked instead of SQLite's own integrity check: every table file's leading and trailing marks (a
truncated Parquet file lacks its footer, a truncated Arrow stream its end-of-stream mark), that each table holds
at least one column nsysql reads from it (not another table's file), and the structure the Parquet and Arrow
readers verify while reading; a failure names the file.
"""
from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from nsysql.core.owner import owner_tag
from nsysql.errors import NsysqlError
from nsysql.sql.engine import quote_ident, quote_literal
from nsysql.store import inputs

PARQUET_MAGIC = b"PAR1"
ARROW_FILE_MAGIC = b"ARROW1"
ARROW_STREAM_START = b"\xff\xff\xff\xff"  # an IPC stream's first message (continuation mark)
ARROW_STREAM_END = b"\xff\xff\xff\xff\x00\x00\x00\x00"  # its end-of-stream mark
SUFFIXES = {".parquet": "parquetdir", ".arrow": "arrowdir"}
_TABLE = re.compile(r"[A-Za-z][A-Za-z0-9_]*")  # nsys's table names; other files in the folder are ignored
_EXPORT_HINT = ("give an nsys export: a .sqlite file, a .nsys-rep, or a folder made by nsys export --type "
                "parquetdir or arrowdir")
_AGAIN = "export it again (nsys export --type {kind} -f true -o FOLDER REPORT.nsys-rep)"
_MAX_INT64 = 9223372036854775807
_PROBE = 64 * 1024


@dataclass(frozen=True)
class Folder:
    """A folder export: its path, its kind (`parquetdir`, `arrowdir`, or `arrow`: nsys's single `.arrows` file)
    and its table files by table name (for `arrow`, the one file, and each table's stream in it: `segments`)."""
    path: Path
    kind: str
    files: dict[str, Path]
    segments: dict[str, tuple[int, int]] | None = None

    def again(self) -> str:
        return _AGAIN.format(kind=self.kind)


def is_folder(path: Path) -> bool:
    """Whether this module reads `path`: a directory (a folder export, or one that is not: `folder` says which),
    or a file that starts as an Arrow IPC stream (nsys's `.arrows`)."""
    try:
        if path.is_dir():
            return True
        if not path.is_file():
            return False
        with path.open("rb") as fh:
            return fh.read(4) == ARROW_STREAM_START
    except OSError:
        return False


def folder(path: Path) -> Folder:
    """The folder export at `path`, its table files checked; one NsysqlError line when it is not one."""
    if not path.is_dir():
        return _arrows(path)
    try:
        names = sorted(os.listdir(path))
    except OSError as exc:
        raise NsysqlError(f"{inputs.text(path)}: cannot list the folder ({exc.strerror or exc})") from None
    found: dict[str, dict[str, Path]] = {kind: {} for kind in SUFFIXES.values()}
    for name in names:
        stem, suffix = os.path.splitext(name)
        if suffix in SUFFIXES and _TABLE.fullmatch(stem) and (path / name).is_file():
            found[SUFFIXES[suffix]][stem] = path / name
    kind = "parquetdir" if found["parquetdir"] else "arrowdir"  # both: Parquet, which DuckDB reads in place
    files = found[kind]
    if not files:
        raise NsysqlError(f"{inputs.text(path)} is a directory with no <TABLE>.parquet or <TABLE>.arrow files; "
                          f"{_EXPORT_HINT}")
    out = Folder(path, kind, files)
    for table, file in files.items():
        _check_marks(out, table, file)
    return out


def _arrows(path: Path) -> Folder:
    """nsys's single-file Arrow export, its streams found (a file cut short fails here, named)."""
    try:
        segments = arrows_tables(path.read_bytes())
    except (OSError, ValueError, IndexError) as exc:
        raise NsysqlError(f"{inputs.text(path)} is a damaged or truncated Arrow stream ({exc}); "
                          f"{_AGAIN.format(kind='arrow')}") from None
    if not segments:
        raise NsysqlError(f"{inputs.text(path)} is an Arrow stream with no nsys table in it; {_EXPORT_HINT}")
    return Folder(path, "arrow", {table: path for table in segments}, segments)


def _check_marks(f: Folder, table: str, file: Path) -> None:
    """The file's leading and trailing marks: a file cut short (an interrupted copy or export) fails here, named."""
    try:
        size = file.stat().st_size
        with file.open("rb") as fh:
            head = fh.read(8)
            fh.seek(max(size - 8, 0))
            tail = fh.read(8)
    except OSError as exc:
        raise NsysqlError(f"{inputs.text(file)}: cannot read ({exc.strerror or exc})") from None
    if f.kind == "parquetdir":
        if not head.startswith(PARQUET_MAGIC):
            raise NsysqlError(f"{inputs.text(file)} is not a Parquet file; {f.again()}")
        if not tail.endswith(PARQUET_MAGIC):
            raise NsysqlError(f"{inputs.text(file)} is a truncated Parquet file (its footer is missing); {f.again()}")
    elif head.startswith(ARROW_FILE_MAGIC):
        if not tail.endswith(ARROW_FILE_MAGIC):
            raise NsysqlError(f"{inputs.text(file)} is a truncated Arrow file (its footer is missing); {f.again()}")
    elif head.startswith(ARROW_STREAM_START):
        if tail != ARROW_STREAM_END:
            raise NsysqlError(f"{inputs.text(file)} is a truncated Arrow stream (its end mark is missing); "
                              f"{f.again()}")
    else:
        raise NsysqlError(f"{inputs.text(file)} is not an Arrow IPC file or stream; {f.again()}")


def identity(f: Folder) -> str:
    """What the cache key covers for a folder: each table file's name, size, mtime and a hash of its first and
    last 64 KiB (as cache.content_probe hashes a file), and the kind."""
    h = hashlib.sha256(f.kind.encode())
    for table, file in sorted(f.files.items() if f.segments is None else [("", f.path)]):
        st = file.stat()
        h.update(f"|{table}|{st.st_size}|{st.st_mtime_ns}|".encode())
        with file.open("rb") as fh:
            h.update(fh.read(_PROBE))
            if st.st_size > _PROBE:
                fh.seek(max(st.st_size - _PROBE, _PROBE))
                h.update(fh.read(_PROBE))
    return h.hexdigest()


@contextmanager
def attached(con, f: Folder, stubs: dict[str, list[tuple[str, str]]]) -> Iterator[set[str]]:
    """Attach the folder's tables to `con` as the schema `nsys` (see the module's text); yields their names.
    `stubs`: table -> the columns the normalized views read (importer.stub_columns): a table file that holds
    none of them is another table's, or not nsys's, and is refused in one line."""
    with tempfile.TemporaryDirectory(prefix=f"nsysql-{owner_tag()}-") as tmp:
        # the files are named through a link in a private directory: the user's path never enters SQL text
        link = Path(tmp) / "export"
        os.symlink(f.path.resolve(), link)
        con.execute("ATTACH ':memory:' AS nsys")
        data = f.path.read_bytes() if f.segments is not None else None
        try:
            for table in sorted(f.files):
                file = link / f.files[table].name if f.segments is None else f.path
                if f.kind == "parquetdir":
                    _parquet_view(con, f, table, file, stubs)
                else:
                    part = data[slice(*f.segments[table])] if data is not None and f.segments else None
                    _arrow_table(con, f, table, file, stubs, part)
            yield set(f.files)
        finally:
            try:
                con.execute("DETACH nsys")
            except Exception:  # noqa: BLE001 - already detached, or the connection is gone: nothing to release
                pass


def _sqlite_typed(column: str, dtype: str) -> str:
    """The column as DuckDB's SQLite scanner would show nsys's SQLite value: integers BIGINT (an unsigned 64-bit
    value above the signed range wraps round, as SQLite stores it), floats DOUBLE, the rest as they are."""
    q = quote_ident(column)
    if dtype == "UBIGINT":
        return (f"CASE WHEN {q} > {_MAX_INT64} THEN CAST({q} - {_MAX_INT64} - 1 AS BIGINT) - {_MAX_INT64} - 1 "
                f"ELSE CAST({q} AS BIGINT) END AS {q}")
    if dtype in ("TINYINT", "SMALLINT", "INTEGER", "UTINYINT", "USMALLINT", "UINTEGER", "BOOLEAN"):
        return f"CAST({q} AS BIGINT) AS {q}"
    if dtype == "FLOAT":
        return f"CAST({q} AS DOUBLE) AS {q}"
    return q


def _check_columns(f: Folder, table: str, where: str, columns: list[str], stubs: dict) -> None:
    wanted = {c.lower() for c, _ in stubs.get(table, []) if c != "rowid"}
    if wanted and not wanted & {c.lower() for c in columns}:
        some = ", ".join(sorted(c for c, _ in stubs[table] if c != "rowid")[:3])
        raise NsysqlError(f"{where} does not hold nsys's {table} table (none of its "
                          f"columns {some}, ...); {f.again()}")


def _parquet_view(con, f: Folder, table: str, file: Path, stubs: dict) -> None:
    source = f"read_parquet({quote_literal(str(file))}, file_row_number = true)"
    try:
        described = con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()
    except Exception as exc:  # noqa: BLE001 - duckdb.Error of any kind: a damaged file
        raise NsysqlError(f"{inputs.text(f.path / file.name)}: cannot read it as Parquet "
                          f"({str(exc).splitlines()[0]}); {f.again()}") from None
    columns = [(name, dtype) for name, dtype, *_ in described if name != "file_row_number"]
    for name, dtype in list(columns):
        if (table, name) in BLOBS_AS_TEXT and dtype == "VARCHAR" and not _text_reads(con, source, name):
            columns.remove((name, dtype))  # read as absent: the raw view gets the stub's NULLs
    _check_columns(f, table, inputs.text(f.path / file.name), [c for c, _ in columns], stubs)
    select = ", ".join(["file_row_number + 1 AS rowid"] + [_sqlite_typed(c, t) for c, t in columns])
    con.execute(f"CREATE VIEW nsys.{quote_ident(table)} AS SELECT {select} FROM {source}")


# Columns of blobs that nsys (2025.3) declares as text in Parquet and Arrow: with --include-blobs=true they hold
# NVTX payloads, bytes that are not UTF-8, which DuckDB's Parquet reader and Polars refuse to read as text, and
# neither reads them as bytes. From Arrow the column's bytes are read here (text_column_bytes); from Parquet it is
# left out (NULL, like an export without blobs) rather than failing the whole table: the SQLite export of the same
# report has them (`--type sqlite --include-blobs=true`).
BLOBS_AS_TEXT = {("NVTX_EVENTS", "binaryData")}


def _text_reads(con, source: str, column: str) -> bool:
    try:
        con.execute(f"SELECT count({quote_ident(column)}) FROM {source}").fetchall()
        return True
    except Exception as exc:  # noqa: BLE001 - duckdb.InvalidInputException: "Invalid string encoding"
        if "encoding" not in str(exc) and "UTF8" not in str(exc):
            raise
        return False


class _Stream:
    """A Polars frame as an Arrow C stream for DuckDB (the PyCapsule interface: no pyarrow needed)."""

    def __init__(self, frame):
        self.frame = frame

    def __arrow_c_stream__(self, requested_schema=None):
        return self.frame.__arrow_c_stream__(requested_schema)


def _arrow_table(con, f: Folder, table: str, file: Path, stubs: dict, part: bytes | None = None) -> None:
    """One table of an arrowdir (`file`) or of an `.arrows` file (`part`: its stream's bytes)."""
    import io

    import polars as pl
    where = f"{inputs.text(f.path)} ({table})" if part is not None else inputs.text(f.path / file.name)
    try:
        if part is not None:
            is_file = False
        else:
            with file.open("rb") as fh:
                is_file = fh.read(6) == ARROW_FILE_MAGIC
        source = io.BytesIO(part) if part is not None else file
        read = (lambda **how: pl.read_ipc(source, **how)) if is_file else \
            (lambda **how: pl.read_ipc_stream(source, **how))
        try:
            frame = read()
        except pl.exceptions.ComputeError as exc:
            if "utf" not in str(exc).lower():
                raise
            names = _schema(part[8:8 + _u32(part, 4)])[0] if part is not None else arrow_column_names(file)
            # a blob column declared as text (BLOBS_AS_TEXT): the others through Polars, it as bytes read here
            frame = read(columns=[n for n in names if (table, n) not in BLOBS_AS_TEXT])
            data = part if part is not None else file.read_bytes()
            for column in [n for n in names if (table, n) in BLOBS_AS_TEXT]:
                values = text_column_bytes(data, column)
                if values is not None and len(values) == frame.height:
                    frame = frame.with_columns(pl.Series(column, values, dtype=pl.Binary))
    except Exception as exc:  # noqa: BLE001 - Polars' errors of a damaged stream have no common base
        raise NsysqlError(f"{where}: cannot read it as Arrow "
                          f"({str(exc).splitlines()[0] if str(exc) else type(exc).__name__}); {f.again()}") from None
    _check_columns(f, table, where, frame.columns, stubs)
    signed = {pl.Int8, pl.Int16, pl.Int32, pl.UInt8, pl.UInt16, pl.UInt32, pl.Boolean}
    casts = [pl.col(c).reinterpret(signed=True) if t == pl.UInt64 else
             pl.col(c).cast(pl.Int64) if t in signed else
             pl.col(c).cast(pl.Float64) if t == pl.Float32 else pl.col(c)
             for c, t in frame.schema.items()]
    frame = frame.select(casts).with_row_index("rowid", offset=1).with_columns(pl.col("rowid").cast(pl.Int64))
    con.from_arrow(_Stream(frame)).create(f"nsys.{quote_ident(table)}")



# -- Arrow IPC metadata, read from its flatbuffers directly: Polars reads no schema alone from a stream, nor
# splits nsys's `.arrows` file (every table's stream one after another) into its streams
def _u32(buf: bytes, at: int) -> int:
    return int.from_bytes(buf[at:at + 4], "little")


def _slot(buf: bytes, table: int, index: int) -> int | None:
    """Where field `index` of the flatbuffer table at `table` is stored; None when absent."""
    vtable = table - int.from_bytes(buf[table:table + 4], "little", signed=True)
    if 4 + 2 * index >= int.from_bytes(buf[vtable:vtable + 2], "little"):
        return None
    offset = int.from_bytes(buf[vtable + 4 + 2 * index:vtable + 6 + 2 * index], "little")
    return None if offset == 0 else table + offset


def _ref(buf: bytes, table: int, index: int) -> int | None:
    """The table, vector or string that field `index` points to."""
    at = _slot(buf, table, index)
    return None if at is None else at + _u32(buf, at)


def _vector(buf: bytes, at: int | None) -> list[int]:
    return [] if at is None else [at + 4 + 4 * i + _u32(buf, at + 4 + 4 * i) for i in range(_u32(buf, at))]


def _string(buf: bytes, at: int | None) -> str:
    return "" if at is None else buf[at + 4:at + 4 + _u32(buf, at)].decode("utf-8", "replace")


def _schema(message: bytes) -> tuple[list[str], dict[str, str]]:
    """(column names, custom metadata) of a Schema message: Message.header -> Schema.fields -> Field.name."""
    root = _u32(message, 0)
    schema = _ref(message, root, 2)
    if schema is None:
        raise ValueError("no schema message")
    names = [_string(message, _ref(message, f, 0)) for f in _vector(message, _ref(message, schema, 1))]
    meta = {_string(message, _ref(message, kv, 0)): _string(message, _ref(message, kv, 1))
            for kv in _vector(message, _ref(message, schema, 2))}
    return names, meta


def _messages(data: bytes, at: int) -> tuple[bytes, int]:
    """The first message (a stream's schema) at `at`, and where the stream's end-of-stream mark ends."""
    first = None
    while True:
        if data[at:at + 4] != ARROW_STREAM_START or at + 8 > len(data):
            raise ValueError(f"no Arrow message at byte {at}")
        size = _u32(data, at + 4)
        if size == 0:
            return first or b"", at + 8
        message = data[at + 8:at + 8 + size]
        body_at = _slot(message, _u32(message, 0), 3)  # Message.bodyLength
        body = int.from_bytes(message[body_at:body_at + 8], "little") if body_at is not None else 0
        first = first if first is not None else message
        at += 8 + size + body


# buffers of a column in a record batch, by Arrow type (Schema.fbs Type): Null 0, Int, FloatingPoint and Bool 2
# (validity, values), Binary, Utf8, LargeBinary and LargeUtf8 3 (validity, offsets, data); offsets 8 bytes wide
# for the Large ones
_BUFFERS = {1: 0, 2: 2, 3: 2, 4: 3, 5: 3, 6: 2, 19: 3, 20: 3}
_WIDE_OFFSETS = {19, 20}


def text_column_bytes(data: bytes, column: str) -> list[bytes | None] | None:
    """The values of the text or binary column `column` of an Arrow IPC stream or file, as bytes, read from its
    record batches directly (Polars refuses text that is not UTF-8); None where this reader does not apply: compressed
    buffers, dictionaries, nested columns, a type not in _BUFFERS."""
    at = 8 if data.startswith(ARROW_FILE_MAGIC) else 0
    size = _u32(data, at + 4)
    schema_message = data[at + 8:at + 8 + size]
    schema = _ref(schema_message, _u32(schema_message, 0), 2)
    if schema is None:
        return None
    kinds = []
    for field in _vector(schema_message, _ref(schema_message, schema, 1)):
        kind_at = _slot(schema_message, field, 2)
        nested = _vector(schema_message, _ref(schema_message, field, 5))
        if kind_at is None or nested or _ref(schema_message, field, 4) is not None:
            return None
        kinds.append((_string(schema_message, _ref(schema_message, field, 0)), schema_message[kind_at]))
    names = [name for name, _ in kinds]
    if column not in names or any(kind not in _BUFFERS for _, kind in kinds):
        return None
    index = names.index(column)
    kind = kinds[index][1]
    if _BUFFERS[kind] != 3:
        return None
    first_buffer = sum(_BUFFERS[k] for _, k in kinds[:index])
    width = 8 if kind in _WIDE_OFFSETS else 4
    values: list[bytes | None] = []
    at += 8 + size
    while at + 8 <= len(data) and data[at:at + 4] == ARROW_STREAM_START and _u32(data, at + 4):
        size = _u32(data, at + 4)
        message = data[at + 8:at + 8 + size]
        root = _u32(message, 0)
        kind_at, header = _slot(message, root, 1), _ref(message, root, 2)
        body_length_at = _slot(message, root, 3)
        body_length = int.from_bytes(message[body_length_at:body_length_at + 8], "little") if body_length_at else 0
        body = at + 8 + size
        header_type = message[kind_at] if kind_at is not None else 0
        if header_type == 2 or (header_type == 3 and header is not None and _ref(message, header, 3) is not None):
            return None  # a dictionary batch, or compressed buffers
        if header_type == 3 and header is not None:
            nodes, buffers = _ref(message, header, 1), _ref(message, header, 2)
            if nodes is None or buffers is None:
                return None
            node = nodes + 4 + 16 * index
            rows, nulls = (int.from_bytes(message[node + i:node + i + 8], "little") for i in (0, 8))
            # the column's buffers (Buffer structs: offset and length in the body, 8 bytes each)
            spots = [buffers + 4 + 16 * (first_buffer + i) for i in range(3)]
            (valid_at, valid_len), (offsets_at, _), (values_at, _) = (
                (body + int.from_bytes(message[b:b + 8], "little"), int.from_bytes(message[b + 8:b + 16], "little"))
                for b in spots)
            for row in range(rows):
                if nulls and valid_len and not data[valid_at + row // 8] >> (row % 8) & 1:
                    values.append(None)
                    continue
                start = int.from_bytes(data[offsets_at + width * row:offsets_at + width * (row + 1)], "little")
                end = int.from_bytes(data[offsets_at + width * (row + 1):offsets_at + width * (row + 2)], "little")
                values.append(data[values_at + start:values_at + end])
        at = body + body_length
    return values


def arrow_column_names(file: Path) -> list[str]:
    """The column names in the schema of an Arrow IPC stream or file."""
    with file.open("rb") as fh:
        data = fh.read(1 << 20)
    at = 8 if data.startswith(ARROW_FILE_MAGIC) else 0  # a file: "ARROW1" and padding, then a stream
    size = _u32(data, at + 4)
    return _schema(data[at + 8:at + 8 + size])[0]


def arrows_tables(data: bytes) -> dict[str, tuple[int, int]]:
    """nsys's `.arrows` (`nsys export --type arrow`): each table's stream, one after another, its schema naming
    the table (custom metadata `table_name`): table -> (start, end) of its stream."""
    out, at = {}, 0
    while at < len(data):
        start = at
        first, at = _messages(data, at)
        name = _schema(first)[1].get("table_name", "")
        if _TABLE.fullmatch(name):
            out[name] = (start, at)
    return out
