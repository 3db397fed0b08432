"""An opened export as a standalone dataset: a DuckDB file, or a Hive-partitioned Parquet dataset.

Both hold the normalized tables, so they work without the nsys export. The DuckDB file also
holds every report and analysis as a documented view (nsysql/sql/views.py) and the table
`nsysql_views` describing them. The Parquet dataset is laid out for many exports in one
directory: DIR/<table>/export=<name>/part-0.parquet.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from nsysql.errors import NsysqlError
from nsysql.sql import catalog, macros
from nsysql.sql import views as catalog_views
from nsysql.sql.engine import connect, quote_ident

if TYPE_CHECKING:
    from nsysql.query.queries import Queries

PART_FILE = "part-0.parquet"
PARTITION_KEY = "export"
_NAME_OK = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass(frozen=True)
class DuckdbWritten:
    path: Path
    tables: list[str]
    views: list[catalog_views.CatalogView]

    @property
    def skipped(self) -> list[catalog_views.CatalogView]:
        return [v for v in self.views if v.sql is None]


@dataclass(frozen=True)
class ParquetWritten:
    directory: Path
    export: str
    tables: list[str]


def relations(con) -> list[tuple[str, str]]:
    """(name, 'BASE TABLE' or 'VIEW') of every relation in the normalized DuckDB, by name."""
    return con.execute("SELECT table_name, table_type FROM information_schema.tables "
                       "WHERE table_schema = 'main' AND table_catalog = current_database() "
                       "ORDER BY table_name").fetchall()


def storage_tables(view_set: str) -> set[str]:
    """The normalized tables that only store rows other relations give (`storage-of:` in the header: kernel_int
    under the view kernel, nvtx_node under nvtx_range, ...): a Parquet dataset, one file per relation, leaves
    them out; a DuckDB file keeps them, since its views read them."""
    return {q.name for q in catalog.group(f"normalize.{view_set}") if q.meta.get("storage-of")}


def view_set(con) -> str:
    row = con.execute("SELECT value FROM nsysql_meta WHERE key = 'view_set'").fetchone()
    return row[0] if row else "nsys3"


# -- DuckDB file ----------------------------------------------------------------------------------
def check_duckdb_target(out: Path, force: bool) -> None:
    """Refuse before any work is done: OUT exists (without force), or is a directory."""
    if out.is_dir():
        raise NsysqlError(f"{out} is a directory; give a file name for the database, e.g. run.duckdb")
    if out.exists() and not force:
        raise NsysqlError(f"{out} already exists; pass `force=True` to replace it")
    if not out.parent.exists():
        raise NsysqlError(f"{out.parent}: no such directory; create it first")


def write_duckdb(ex: Queries, out: Path, *, force: bool = False) -> DuckdbWritten:
    """Copy the normalized tables into `out` and add the catalog's reports and analyses as views (a view that other
    views read over a table of its rows, computed here once: nsysql/sql/views.py)."""
    out = Path(out)
    check_duckdb_target(out, force)
    if out.exists() and out.resolve() in (ex.source.resolve(), ex.path.resolve(), ex.cache_path.resolve()):
        raise NsysqlError(f"{out} is the export or its cache; choose another output file")
    fd, tmp_name = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".partial", dir=out.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        def copy() -> tuple[list[str], list[catalog_views.CatalogView]]:
            # The cache is a finished, checkpointed DuckDB file that never names the raw export; reading ex.con
            # first builds the tables a first open leaves for first use, so the copy holds every table
            ex.con  # noqa: B018
            shutil.copyfile(ex.store.database, tmp)
            Path(f"{tmp}.wal").unlink(missing_ok=True)
            con = connect(tmp)
            try:
                tables = [name for name, _ in relations(con)]
                macros.install(con, stored=True)  # the findings' views call them; stored, so the duckdb shell has them
                made = catalog_views.create_views(con, catalog_views.catalog_views(set(tables)), document=True,
                                                   store_inputs=True)
                made = catalog_views.create_macros(con, [v for v in made if not v.private])  # private: inputs only
                catalog_views.document_tables(con, view_set(con))
                con.execute("COMMENT ON TABLE nsysql_meta IS 'How this database was made: source export, export "
                            "schema, normalized view set and its version'")
                con.execute("COMMENT ON TABLE nsysql_tables IS 'The raw nsys tables the export held (nsys exports "
                            "only tables with data)'")
                _write_views_table(con, made)
                con.execute("CHECKPOINT")
            finally:
                con.close()
            return tables, made

        # a copy of a damaged cache fails as the cache would: the cache is built again and copied once more
        tables, made = ex.store.rebuilt_once(copy)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp made it private; give it a normal file's mode
        os.replace(tmp, out)  # atomic: no half-written database under the user's name
    finally:
        for leftover in (tmp, Path(f"{tmp}.wal")):
            if leftover.exists():
                leftover.unlink()
    return DuckdbWritten(out, tables, made)


def _write_views_table(con, made: list[catalog_views.CatalogView]) -> None:
    con.execute("""
        CREATE TABLE nsysql_views (
            view_name VARCHAR, query_id VARCHAR, version INTEGER, description VARCHAR,
            columns STRUCT(name VARCHAR, type VARCHAR, unit VARCHAR, decimals INTEGER)[],
            params VARCHAR, note VARCHAR, sql VARCHAR)""")
    con.execute("COMMENT ON TABLE nsysql_views IS 'One row per report/analysis view: its catalog query, version, "
                "purpose, output columns with type and unit, and the query file text it was created from'")
    # the columns travel as JSON text: a Python list of dicts made DuckDB try `import pandas` once per dict
    # (2.3 of 14.1 s of a small export's `nsysql db` under cProfile, where pandas is not installed)
    con.executemany("INSERT INTO nsysql_views SELECT ?, ?, ?, ?, CAST(CAST(? AS JSON) AS STRUCT(name VARCHAR, "
                    "type VARCHAR, unit VARCHAR, decimals INTEGER)[]), ?, ?, ?", [
        [v.view_name, v.query.id, v.query.version, v.description,
         json.dumps([{"name": c.name, "type": c.type, "unit": c.unit, "decimals": c.decimals}
                     for c in v.query.columns]),
         v.query.meta.get("params", "none"), v.note or None, v.query.sql]
        for v in made])


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# -- Parquet dataset ------------------------------------------------------------------------------
def export_name(path: Path) -> str:
    """A stable partition name from the export's file name: run.sqlite.xz -> run; odd characters -> _."""
    name = Path(path).name
    for suffix in (".xz", ".sqlite", ".db", ".sqlite3"):
        name = name.removesuffix(suffix)
    name = re.sub(r"[^A-Za-z0-9._-]", "_", name).lstrip("._-")
    if not name:
        raise NsysqlError(f"cannot derive a partition name from {Path(path).name}; give one with `name=`")
    return name


def check_parquet_target(directory: Path, name: str, force: bool) -> None:
    if not _NAME_OK.match(name):
        raise NsysqlError(f"export name {name!r} must start with a letter or digit and hold only "
                          "letters, digits, '.', '_' and '-'")
    if directory.exists() and not directory.is_dir():
        raise NsysqlError(f"{directory} is a file; give a directory for the Parquet dataset")
    if not force and directory.is_dir():
        taken = sorted(p.parent.name for p in directory.glob(f"*/{PARTITION_KEY}={name}"))
        if taken:
            raise NsysqlError(f"{directory} already holds export {name!r} (e.g. {taken[0]}/{PARTITION_KEY}={name}); "
                              "pass `force=True` to replace it, or `name=` to add it under another name")


def write_parquet(ex: Queries, directory: Path, *, name: str | None = None, force: bool = False) -> ParquetWritten:
    """Write every normalized table as DIR/<table>/export=<name>/part-0.parquet; other exports stay."""
    directory = Path(directory)
    name = name or export_name(ex.path)
    check_parquet_target(directory, name, force)
    directory.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".staging-{name}-", dir=directory))
    try:
        def copy() -> list[str]:
            stored = storage_tables(view_set(ex.con))  # their rows are in the relations they rest on
            tables = [t for t, _ in relations(ex.con) if t not in stored]
            for table in tables:  # all files first, so a failure leaves no partial partition behind
                ex.con.execute(f"COPY (SELECT * FROM {quote_ident(table)}) TO $path (FORMAT parquet)",
                               {"path": str(staging / f"{table}.parquet")})
            return tables

        tables = ex.store.rebuilt_once(copy)  # a damaged cache is built again, and copied once more
        for stale in directory.glob(f"*/{PARTITION_KEY}={name}"):  # only with force (checked above)
            shutil.rmtree(stale)
        for table in tables:
            partition = directory / table / f"{PARTITION_KEY}={name}"
            partition.mkdir(parents=True)
            os.replace(staging / f"{table}.parquet", partition / PART_FILE)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return ParquetWritten(directory, name, tables)
