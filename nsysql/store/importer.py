"""Turn a raw nsys SQLite export into the normalized DuckDB tables the queries use.

The export is attached read-only through a link in a private directory (nsysql/store/readonly.py), so
the user's path never appears in SQL text and nothing is written beside the export, WAL mode included.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import duckdb

from nsysql.core import progress
from nsysql.core.owner import owner_tag
from nsysql.errors import NsysqlError
from nsysql.sql import catalog, macros
from nsysql.sql.engine import connect, error_line, quote_ident, quote_literal
from nsysql.store import formats_in, inputs, readonly, sqlite_check
from nsysql.store.build_graph import build_graph, build_workers

SQLITE_MAGIC = b"SQLite format 3\x00"
# Tables whose presence marks a file as an Nsight Systems export.
NSYS_MARKERS = {"StringIds", "META_DATA_EXPORT", "EXPORT_META_DATA", "NVTX_EVENTS", "CUPTI_ACTIVITY_KIND_KERNEL",
                "CUPTI_ACTIVITY_KIND_RUNTIME", "OSRT_API", "TARGET_INFO_SESSION_START_TIME"}
# export schema major version -> queries/normalize/<set>; 2.x (Nsight Systems 2021.x to 2022.3) is read by the 3.x set
# through shims and filled-in columns (see fill_columns)
VIEW_SETS = {2: "nsys3", 3: "nsys3"}
SUPPORTED = "export schema 2.x and 3.x, i.e. Nsight Systems 2021.x to 2025.x, and exports without a metadata table"
# Where the schema version is kept: 2025.x names the table META_DATA_EXPORT, 2022.4 EXPORT_META_DATA.
METADATA_TABLES = ("META_DATA_EXPORT", "EXPORT_META_DATA")
# The raw table in which nsysql/store/sqlite_check.py stages SQLite's findings for the normalize statements that keep them.
CHECK_TABLE = "raw.nsysql_sqlite_check"
# A shim folder under queries/normalize/shims/ is named for the schema versions it serves.
_SHIM_RANGE = re.compile(r"v(\d+)_(\d+)_to_v(\d+)_(\d+)")


class CacheWriteError(NsysqlError):
    """The cache could not be written: its disk is full (the one line, disk_full's, says so). The Store falls
    back to a private temporary cache (nsysql/store/store.py)."""


def check_sqlite_file(path: Path) -> None:
    inputs.regular_file(path)  # first: opening a FIFO would block forever
    if path.suffix == ".nsys-rep":
        raise NsysqlError(f"{path} is an nsys report, not an export; run: nsys export --type sqlite {path}")
    try:
        with path.open("rb") as f:
            head = f.read(16)
    except OSError as exc:
        raise NsysqlError(f"{path}: cannot read ({exc.strerror})") from None
    if head != SQLITE_MAGIC:
        raise NsysqlError(f"{path} is not a SQLite file; export one with: nsys export --type sqlite REPORT.nsys-rep")


# StringIds read once, one row per id (its first row) with how many rows and strings the id had: duplicate ids (an
# edited or merged export) would otherwise repeat every row that looks a name up (kernels x8 with three name joins,
# and attribution joins over them that never end). normalize.nsys3.string_ids_repeated keeps the counts for a warning.
RAW_TABLES = {"StringIds": "CREATE TABLE raw.StringIds AS SELECT min(rowid) AS rowid, id, arg_min(value, rowid) "
                           "AS value, count(*) AS copies, count(DISTINCT value) AS names FROM nsys.StringIds GROUP BY id"}

# Raw tables that are one column of an export's table, read by SQLite's own SQL (sqlite_query) instead of DuckDB's
# scanner. NVTX_EVENTS.binaryData (NVTX extended payloads, written by `nsys export --include-blobs=true`) is declared
# TEXT but holds blobs, which the scanner refuses ("column was declared as text, found blob"); SQLite's hex() reads a
# value of any storage class, and only the rows with a value come over (a few thousand of a million NVTX rows).
# stub name -> (export table, its column in lower case, the view)
SQLITE_SQL_TABLES = {
    "NVTX_EVENTS_BINARY": ("NVTX_EVENTS", "binarydata",
                           "CREATE VIEW raw.NVTX_EVENTS_BINARY AS SELECT CAST(rowid AS BIGINT) AS rowid, "
                           "CAST(eventType AS BIGINT) AS eventType, CAST(globalTid AS BIGINT) AS globalTid, "
                           "CAST(domainId AS BIGINT) AS domainId, binaryHex FROM sqlite_query('nsys', 'SELECT rowid, "
                           "eventType, globalTid, domainId, hex(binaryData) AS binaryHex FROM NVTX_EVENTS "
                           "WHERE binaryData IS NOT NULL')"),
}


def _stub_statements() -> dict[str, str]:
    sql = catalog.get("normalize.nsys3.raw_stubs").sql
    stubs = {}
    for stmt in sql.split(";"):
        body = "\n".join(l for l in stmt.splitlines() if not l.lstrip().startswith("--")).strip()
        m = re.match(r"CREATE TABLE raw\.(\w+)", body)
        if m:
            stubs[m.group(1)] = body
    return stubs


def stub_columns() -> dict[str, list[tuple[str, str]]]:
    """raw table -> [(column, type)] of its stub in raw_stubs.sql: the columns the normalized views read, rowid first."""
    out = {}
    for name, stub in _stub_statements().items():
        body = stub[stub.index("(") + 1:stub.rindex(")")]
        out[name] = [(c.split()[0].strip('"'), " ".join(c.split()[1:])) for c in body.split(",")]
    return out


def export_columns(con) -> dict[str, set[str]]:
    """table -> its columns (lower case), as the attached export `nsys` has them."""
    out: dict[str, set[str]] = {}
    for table, column in con.execute("SELECT table_name, column_name FROM duckdb_columns() "
                                     "WHERE database_name = 'nsys'").fetchall():
        out.setdefault(table, set()).add(column.lower())
    return out


def fill_columns(stub: list[tuple[str, str]], has: set[str]) -> list[tuple[str, str]]:
    """The columns of a table's stub (stub_columns) that the export's table lacks (older exports: e.g. mangledName in
    a 2021 one): the raw view adds them as typed NULLs, and the cache lists them (nsysql_missing_columns;
    `missing_columns` in Export.info())."""
    return [(c, t) for c, t in stub if c != "rowid" and c.lower() not in has]


def raw_view(table: str, missing: list[tuple[str, str]], *, from_sqlite: bool = True) -> str:
    """raw.<table> over the export's table, with `missing` columns as typed NULLs. A folder export's tables
    carry their `rowid` as a column already (nsysql/store/formats_in.py)."""
    filled = "".join(f", CAST(NULL AS {t}) AS {quote_ident(c)}" for c, t in missing)
    rowid = "rowid AS rowid, " if from_sqlite else ""
    return f"CREATE VIEW raw.{table} AS SELECT {rowid}*{filled} FROM nsys.{table}"


def folder_binary_view(name: str) -> str:
    """SQLITE_SQL_TABLES' view over a folder export (Parquet or Arrow): the same columns, read by DuckDB itself.
    binaryData is BLOB, or VARCHAR in the Parquet some nsys versions write: hex() reads the bytes of either."""
    table, column, _ = SQLITE_SQL_TABLES[name]
    return (f"CREATE VIEW raw.{name} AS SELECT rowid, CAST(eventType AS BIGINT) AS eventType, "
            f"CAST(globalTid AS BIGINT) AS globalTid, CAST(domainId AS BIGINT) AS domainId, "
            f"hex({column}) AS binaryHex FROM nsys.{table} WHERE {column} IS NOT NULL")


class _NoCheck:
    """SQLite's own check, for an export that is not SQLite: nothing to check there (nsysql/store/formats_in.py says
    what is checked instead)."""

    def result(self) -> list:
        return []

    def cancel(self) -> None:
        pass


@contextlib.contextmanager
def _opened(export: Path, target: Path, shown: Path) -> Iterator[tuple]:
    """The connection to the cache being built with the export attached as `nsys`: (connection, build workers,
    the export's tables, SQLite's check running beside (sqlite_check) or a stand-in, whether it is SQLite)."""
    workers = build_workers()
    if formats_in.is_folder(export):
        folder = formats_in.folder(export)
        con = connect(target, share=workers)
        try:
            with formats_in.attached(con, folder, stub_columns()) as tables:
                yield con, workers, tables, _NoCheck(), False
        finally:
            con.close()
        return
    check_sqlite_file(export)
    with readonly.sqlite_path(export, scratch=target.parent) as link:
        try:
            con = connect(target, with_sqlite=True, share=workers)
        except duckdb.IOException as exc:  # the cache directory refuses the new file
            raise CacheWriteError(f"cannot write the cache: {error_line(exc)}") from None
        # SQLite's own check of the tables read, kept as table sqlite_check: in its own process beside the build
        # (a SIGBUS of its memory-mapped read, met once in CI on a WAL-mode export, ends only that process)
        check = sqlite_check.start(link)
        try:
            try:
                tables = {r[0] for r in con.execute(
                    "SELECT name FROM sqlite_scan($p, 'sqlite_master') WHERE type = 'table'", {"p": str(link)}).fetchall()}
            except duckdb.Error as exc:
                raise NsysqlError(damage(shown, exc, check.result()) or
                                  f"{shown}: cannot read it as SQLite ({str(exc).splitlines()[0]})") from None
            con.execute(f"ATTACH {quote_literal(str(link))} AS nsys (TYPE sqlite, READ_ONLY)")
            yield con, workers, tables, check, True
        finally:
            check.cancel()  # still running only when the build failed or was interrupted
            con.close()


def _ordered(view_set: str) -> list[catalog.Query]:
    """The normalize queries of one set, each after the tables it requires."""
    queries = {q.name: q for q in catalog.group(f"normalize.{view_set}") if q.name != "raw_stubs"}
    done: list[str] = []

    def visit(name: str, trail: tuple[str, ...] = ()) -> None:
        if name in done:
            return
        if name in trail:
            raise ValueError(f"cycle in normalize requires: {' -> '.join(trail + (name,))}")
        for dep in queries[name].requires:
            if not dep.startswith("raw.") and dep in queries:
                visit(dep, trail + (name,))
        done.append(name)

    for name in sorted(queries):
        visit(name)
    return [queries[n] for n in done]


def built_on_first_use(q: catalog.Query) -> bool:
    """Whether a cache's first open leaves the normalize statement `q` out (its header's `built: on first use`):
    the first query that reads its table adds it (extend)."""
    return q.meta.get("built", "").startswith(catalog.BUILT_ON_FIRST_USE)


def statements_to_add(present: set[str], wanted: set[str], view_set: str = "nsys3") -> list[catalog.Query]:
    """The normalize statements that make the tables and views `wanted` (normalized names; other names are
    ignored) and those they read, less the ones `present` already holds, each after the ones it reads."""
    by_name = {q.name: q for q in _ordered(view_set)}
    needed: set[str] = set()
    pending = [n for n in wanted if n in by_name]
    while pending:
        name = pending.pop()
        if name not in needed and name not in present:
            needed.add(name)
            pending += [r for r in by_name[name].requires if r in by_name]
    return [q for q in by_name.values() if q.name in needed]


def normalize(export: Path, target: Path, *, shown_as: Path | None = None, everything: bool = False,
              identity: str = "") -> dict:
    """Build `target` (a DuckDB file) from `export`: every normalized table, or (`everything=False`) all but
    those built on first use (built_on_first_use; `extend` adds them). Returns facts about the export. Messages
    name `shown_as` when given: the `.xz` the user named, when `export` is the copy it was unpacked to.
    `identity` (the cache key, nsysql/cache.py) is kept in nsysql_meta as `export_identity`: a cache opened for
    an export whose key differs is another export's (nsysql/export.py)."""
    shown = shown_as or export
    with _opened(export, target, shown) as (con, workers, tables, check, from_sqlite):
        try:
            if not tables & NSYS_MARKERS:
                what = "a SQLite file" if from_sqlite else "a folder of tables"
                raise NsysqlError(f"{shown} is {what} but not an Nsight Systems export "
                                  "(no StringIds, NVTX_EVENTS or CUPTI tables); export one with: nsys export --type sqlite REPORT.nsys-rep")
            schema = _schema_version(con, tables)
            view_set = _view_set(schema, tables, shown)
            con.execute("CREATE SCHEMA raw")
            shims = applicable_shims(schema, tables)
            for shim in shims:  # raw.<3.x table> views over an older export's tables, before the stubs
                try:
                    con.execute(shim.sql)
                except duckdb.Error as exc:
                    raise NsysqlError(damage(shown, exc, check.result()) or
                                      f"{shown}: could not apply {shim.id} ({str(exc).splitlines()[0]}); "
                                      f"export schema {schema} may be unsupported") from None
            shimmed = {_provided(shim) for shim in shims}
            columns, stubs = export_columns(con), stub_columns()
            filled: list[tuple[str, str]] = []  # (raw table, column) the export lacks, NULL in the raw view
            for name, stub in _stub_statements().items():
                if name in shimmed:
                    continue
                if name in SQLITE_SQL_TABLES:
                    table, column, view = SQLITE_SQL_TABLES[name]
                    has = table in tables and table not in shimmed and column in columns.get(table, set())
                    con.execute((view if from_sqlite else folder_binary_view(name)) if has else stub)
                elif name in tables:
                    missing = [] if name in RAW_TABLES else fill_columns(stubs[name], columns.get(name, set()))
                    filled += [(name, c) for c, _ in missing]
                    con.execute(RAW_TABLES.get(name) or raw_view(name, missing, from_sqlite=from_sqlite))
                else:
                    con.execute(stub)
            def failed(q: catalog.Query, exc: duckdb.Error) -> NsysqlError:
                if (full := disk_full(exc)) is not None:
                    return CacheWriteError(full)
                if isinstance(exc, duckdb.OutOfMemoryException):
                    return NsysqlError(f"{shown}: could not normalize {q.name}: {error_line(exc)}")
                if (line := damage(shown, exc, check.result())) is not None:
                    return NsysqlError(line)
                if not from_sqlite:  # Parquet or Arrow read only now, a page damaged inside a file
                    return NsysqlError(f"{shown}: could not normalize {q.name} ({str(exc).splitlines()[0]}); a file "
                                       "of the folder may be damaged: export it again from the .nsys-rep")
                return NsysqlError(f"{shown}: could not normalize {q.name} "
                                   f"({str(exc).splitlines()[0]}); export schema {schema} may be unsupported")

            statements = [q for q in _ordered(view_set) if everything or not built_on_first_use(q)]
            # the statements that keep the check's findings wait for the check; the others do not
            keeps_check = [q for q in statements if CHECK_TABLE in q.requires]
            with progress.shown("building the cache", total=len(statements)):
                build_graph(con, [q for q in statements if q not in keeps_check], workers=workers, failed=failed)
                sqlite_check.stage(con, check.result())
                for q in keeps_check:
                    with progress.stage(q.name):
                        try:
                            con.execute(q.sql)
                        except duckdb.Error as exc:
                            raise failed(q, exc) from None
            # the raw tables as the views saw them: a shimmed 3.x table counts as present
            con.execute("CREATE TABLE nsysql_tables AS SELECT unnest($t::VARCHAR[]) AS raw_table ORDER BY 1",
                        {"t": sorted(tables | shimmed)})
            con.execute("CREATE TABLE nsysql_missing_columns (raw_table VARCHAR, column_name VARCHAR)")
            con.execute("COMMENT ON TABLE nsysql_missing_columns IS 'Columns the normalized tables read that the export''s "
                        "raw tables lack (older Nsight Systems): NULL in every row'")
            if filled:
                con.executemany("INSERT INTO nsysql_missing_columns VALUES (?, ?)", filled)
            con.execute("CREATE TABLE nsysql_meta (key VARCHAR, value VARCHAR)")
            con.executemany("INSERT INTO nsysql_meta VALUES (?, ?)", [
                ("export_path", inputs.text(export.resolve())), ("export_schema", schema), ("view_set", view_set),
                ("views_version", views_version(view_set)),
                ("shims", ", ".join(shim.id for shim in shims) or "none"),
                ("missing_columns", ", ".join(f"{t}.{c}" for t, c in filled) or "none"),
                ("export_identity", identity),
            ])
            con.execute("DROP SCHEMA raw CASCADE")
            con.execute("DETACH nsys")
            con.execute("CHECKPOINT")
        except duckdb.Error as exc:  # a damaged file or a full disk, met outside the steps wrapped above
            if (full := disk_full(exc)) is not None:
                raise CacheWriteError(full) from None
            raise NsysqlError(damage(shown, exc, check.result()) or f"{shown}: cannot read it ({str(exc).splitlines()[0]})") from None
    return {"schema": schema, "view_set": view_set, "tables": tables}


@contextlib.contextmanager
def scratch_cache(directory: Path) -> Iterator[Path]:
    """A name for a cache file being built in `directory`, `.building-<owner>-…` (nsysql/store/hygiene.py removes what a
    killed run left), that no file has yet: DuckDB must create its database file itself. The file and its `.wal`
    are removed on the way out unless the caller has renamed the file into its place by then."""
    tmp = directory / f".building-{owner_tag()}-{uuid.uuid4().hex}.duckdb"
    try:
        yield tmp
    finally:
        for leftover in (tmp, Path(f"{tmp}.wal")):
            leftover.unlink(missing_ok=True)


def extend(cache: Path, statements: list[catalog.Query], *, scratch: Path) -> None:
    """Add `statements` (built on first use: they read only normalized tables) to the finished cache file `cache`:
    built in a copy in `scratch`'s directory (a `.building-` file, as a first open's), then put in its place at
    once, so a reader never sees a half-built cache and one still reading the old file keeps it whole."""
    reads_export = [q.name for q in statements if any(r.startswith("raw.") for r in q.requires)]
    if reads_export:  # a header bug: such a table is built on the first open, where the export is attached
        raise ValueError(f"{', '.join(reads_export)} read the export and cannot be built on first use")
    with scratch_cache(scratch) as tmp:
        with cache.open("rb") as source, tmp.open("xb") as copy:  # x: never through a file or link put there
            shutil.copyfileobj(source, copy, 1 << 20)
        shutil.copymode(cache, tmp)  # the cache keeps the mode DuckDB gave it
        workers = build_workers()
        con = connect(tmp, share=workers)

        def failed(q: catalog.Query, exc: duckdb.Error) -> Exception:
            if isinstance(exc, duckdb.OutOfMemoryException):
                return NsysqlError(f"could not build {q.name}: {error_line(exc)}")
            if (full := disk_full(exc)) is not None:
                return CacheWriteError(full)
            if isinstance(exc, duckdb.IOException):
                return exc  # a damaged cache file: the caller builds the cache again (Export._rebuilt_once)
            return NsysqlError(damage(cache, exc) or f"could not build {q.name} ({str(exc).splitlines()[0]})")

        try:
            # what the copy holds already is not built again (the cache this process decided from may have been
            # replaced by the time it copied it): only the statements whose table the copy lacks run
            statements = _not_in(con, statements)
            if not statements:
                return
            with progress.shown("building tables on first use", total=len(statements)):
                build_graph(con, statements, workers=workers, failed=failed)
            try:
                con.execute("CHECKPOINT")
            except duckdb.IOException as exc:
                if (full := disk_full(exc)) is None:
                    raise
                raise CacheWriteError(full) from None
        finally:
            con.close()
        os.replace(tmp, cache)


def _not_in(con: duckdb.DuckDBPyConnection, statements: list[catalog.Query]) -> list[catalog.Query]:
    """The statements whose table or view the database of `con` does not hold yet."""
    held = {r[0] for r in con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() AND NOT temporary "
        "UNION ALL SELECT view_name FROM duckdb_views() "
        "WHERE database_name = current_database() AND NOT temporary AND NOT internal").fetchall()}
    return [q for q in statements if q.name not in held]


def disk_full(exc: Exception) -> str | None:
    """The one line for a cache that cannot be written because its disk is full; None for any other error."""
    text = (str(exc).splitlines() or [""])[0]
    if "No space left" in text or "Disk full" in text or "disk is full" in text:
        return f"cannot write the cache: {text}; free some space, or choose another `cache_dir=` or NSYSQL_CACHE_DIR"
    return None


def damage(export: Path, exc: Exception, checked: list | None = None) -> str | None:
    """The one line for errors that are not about the export's schema: a full disk, a damaged SQLite file (naming
    the tables SQLite's own check found damaged, `checked`: nsysql.store.sqlite_check.run)."""
    if (full := disk_full(exc)) is not None:
        return full
    text = str(exc).splitlines()[0]
    hurt = sqlite_check.failure(export, checked or [])
    if hurt:
        return hurt
    if any(s in text for s in ("malformed", "file is not a database", "disk I/O error")):
        return (f"{export}: the SQLite file is damaged ({text}); export it again from the .nsys-rep "
                "(nsys export --type sqlite)")
    if "Mismatch Type Error" in text:  # e.g. text in an integer column: nsys writes none, an edit or damage does
        return (f"{export}: a value of the wrong type ({text.split(': ', 1)[-1]}); the export was edited or damaged: "
                "export it again from the .nsys-rep (nsys export --type sqlite)")
    journal = Path(f"{export.resolve()}-journal")
    if "readonly database" in text and journal.exists():  # SQLite would replay it, which a read-only open cannot
        return (f"{export}: a write to it never finished ({journal.name} lies beside it), and nsysql opens exports "
                f"read-only; let SQLite finish it (sqlite3 {export} 'PRAGMA quick_check'), or remove {journal.name} "
                "if nothing is writing the file")
    return None


def _schema_version(con, tables: set[str]) -> str:
    """EXPORT_SCHEMA_VERSION from whichever metadata table the export has; 'unknown' without one."""
    for table in METADATA_TABLES:
        if table in tables:
            row = con.execute(f"SELECT value FROM nsys.{table} WHERE name = 'EXPORT_SCHEMA_VERSION'").fetchone()
            return row[0] if row else "unknown"
    return "unknown"


def _version_tuple(schema: str) -> tuple[int, ...] | None:
    """(major, minor) of '3.20.3'; None when it does not start with two numbers."""
    m = re.match(r"(\d+)\.(\d+)", schema)
    return (int(m[1]), int(m[2])) if m else None


def _view_set(schema: str, tables: set[str], export: Path) -> str:
    if schema == "unknown":
        # Exports older than any metadata table (2021.x): the 3.x views read only long-standing columns; shims for
        # schema 0.0 and up and the filled-in columns bridge the rest.
        return "nsys3"
    try:
        major = int(schema.split(".")[0])
    except ValueError:
        raise NsysqlError(f"{export}: unreadable export schema version {schema!r} (supported: {SUPPORTED})") from None
    if major < min(VIEW_SETS):
        raise NsysqlError(f"{export}: export schema {schema} is older than nsysql supports ({SUPPORTED}); "
                          "export the .nsys-rep again with a newer Nsight Systems")
    if major not in VIEW_SETS:
        raise NsysqlError(f"{export}: export schema {schema} is newer than nsysql supports ({SUPPORTED}); "
                          "export the .nsys-rep with Nsight Systems 2025.x, or update nsysql")
    return VIEW_SETS[major]


def _provided(shim: catalog.Query) -> str:
    return shim.meta["provides"].strip().removeprefix("raw.")


def applicable_shims(schema: str, tables: set[str]) -> list[catalog.Query]:
    """The shims for this export: its schema version is in the shim folder's range, it has every
    table the shim reads (`requires: nsys.X`) and lacks the 3.x table the shim provides."""
    # no metadata table: a 2021-era export (every version since has one), older than any shim's lower bound
    version = (0, 0) if schema == "unknown" else _version_tuple(schema)
    if version is None:
        return []
    chosen = []
    for shim in catalog.group("normalize.shims"):
        folder = shim.id.split(".")[2]
        m = _SHIM_RANGE.fullmatch(folder)
        if m is None:
            raise ValueError(f"{shim.path}: shim folder {folder!r} must be named v<major>_<minor>_to_v<major>_<minor>")
        low, high = (int(m[1]), int(m[2])), (int(m[3]), int(m[4]))
        reads = {r.removeprefix("nsys.") for r in shim.requires}
        if low <= version <= high and reads <= tables and _provided(shim) not in tables:
            chosen.append(shim)
    return chosen


def views_version(view_set: str = "nsys3") -> str:
    """Changes whenever any normalize query of the set or any shim changes (its text, hence its version too), or a
    macro one of them calls (gpu_busy calls macros.union_islands)."""
    queries = catalog.group(f"normalize.{view_set}") + catalog.group("normalize.shims")
    queries += macros.called(r for q in queries for r in q.requires)
    digest = hashlib.sha256("".join(q.sql for q in queries).encode())
    return f"{view_set}-{digest.hexdigest()[:12]}"
