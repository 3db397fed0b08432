"""Several exports in one DuckDB file: one schema per export.

Each schema holds what `nsysql db` writes for one export (normalized tables, every report and analysis
as a documented view, `nsysql_views`); `main.nsysql_exports` lists schema, export label, rank and path.
A DuckDB view binds the table names in its body in its own schema first, so the catalog's SQL works
unchanged inside each schema (`SELECT * FROM rank0.nvtx_gpu_proj_sum`), also in the stock `duckdb` CLI.
"""
from __future__ import annotations

import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import duckdb

from nsysql.answers import multi
from nsysql.answers.dataset import check_duckdb_target, write_duckdb
from nsysql.errors import NsysqlError
from nsysql.sql import macros
from nsysql.sql.engine import connect, quote_ident, quote_literal
from nsysql.sql.views import CatalogView, create_macros

_RESERVED = {"main", "temp", "information_schema", "pg_catalog", "system"}
_SOURCE = "nsysql_one_export"  # the alias each one-export database is attached under while copied


@dataclass(frozen=True)
class ExportSchema:
    schema: str
    export: str
    rank: int | None
    path: Path


@dataclass(frozen=True)
class SchemasWritten:
    path: Path
    exports: list[ExportSchema]
    tables: int  # per schema
    views: list[CatalogView]  # of the first export; every schema gets the same catalog

    @property
    def skipped(self) -> list[CatalogView]:
        return [v for v in self.views if v.sql is None]


def schema_names(labels: list[str]) -> list[str]:
    """Plain lower-case identifiers from export labels: rank0, gpt_tiny_train_fp32, export_0007; unique."""
    names: list[str] = []
    for label in labels:
        name = re.sub(r"[^a-z0-9_]+", "_", label.lower()).strip("_") or "export"
        if name[0].isdigit() or name in _RESERVED or name == _SOURCE:
            name = f"export_{name}"
        base, n = name, 2
        while name in names:
            name, n = f"{base}_{n}", n + 1
        names.append(name)
    return names


def write_duckdb_schemas(paths: list[Path], opener: Callable, out: Path, *, force: bool = False) -> SchemasWritten:
    """Write `out` with one schema per export; built in a hidden directory next to `out`, then renamed."""
    out = Path(out)
    check_duckdb_target(out, force)
    exports = [ExportSchema(s, label, multi.rank_of(p), p)
               for p, label, s in zip(paths, multi.labels(paths), schema_names(multi.labels(paths)))]
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".partial", dir=out.parent))
    try:
        target = work / out.name  # same file name, so the database keeps out's catalog name
        con = connect(target)
        try:
            con.execute("CREATE TABLE nsysql_exports (schema_name VARCHAR, export VARCHAR, rank BIGINT, "
                        "path VARCHAR)")
            con.execute("COMMENT ON TABLE nsysql_exports IS 'One row per export: the schema holding its tables and "
                        "views, its label in multi-export output, the rank its file name states, and its file'")
            first = None
            for i, e in enumerate(exports):
                one = work / f"export-{i}.duckdb"
                with opener(e.path) as ex:
                    if out.exists() and out.resolve() in (ex.source.resolve(), ex.path.resolve(),
                                                          ex.cache_path.resolve()):
                        raise NsysqlError(f"{out} is an export or its cache; choose another output file")
                    written = write_duckdb(ex, one)
                first = first or written
                _copy_into_schema(con, one, e.schema, written.views)
                one.unlink()
                con.execute("INSERT INTO nsysql_exports VALUES (?, ?, ?, ?)",
                            [e.schema, e.export, e.rank, str(e.path.resolve())])
            con.execute("CHECKPOINT")
        finally:
            con.close()
        target.replace(out)  # atomic: no half-written database under the user's name
    finally:
        shutil.rmtree(work, ignore_errors=True)
    assert first is not None  # paths names one export at least
    return SchemasWritten(out, exports, len(first.tables), first.views)


def _copy_into_schema(con: duckdb.DuckDBPyConnection, source: Path, schema: str, made: list[CatalogView]) -> None:
    """Tables, views (from their stored SQL, bound inside `schema`), the parameterized queries' table macros (which
    bind their tables when called: `USE schema` first) and comments of a one-export database."""
    con.execute(f"ATTACH {quote_literal(str(source))} AS {_SOURCE} (READ_ONLY)")
    home = con.execute("SELECT current_database()").fetchone()[0]  # type: ignore[index]  # always one row
    try:
        con.execute(f"CREATE SCHEMA {quote_ident(schema)}")
        con.execute(f"USE {quote_ident(home)}.{quote_ident(schema)}")
        tables = [r[0] for r in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = $db ORDER BY table_oid",
            {"db": _SOURCE}).fetchall()]
        for t in tables:
            con.execute(f"CREATE TABLE {quote_ident(t)} AS SELECT * FROM {_SOURCE}.main.{quote_ident(t)}")
        macros.install(con, stored=True)  # in this schema too: the findings' views call them
        # A view's stored SQL names its tables and views unqualified, so here it binds to this schema's.
        pending = [r[0] for r in con.execute(
            "SELECT sql FROM duckdb_views() WHERE database_name = $db AND NOT internal ORDER BY view_oid",
            {"db": _SOURCE}).fetchall()]
        while pending:  # a view needs the views it reads: retry those that came too early
            failed = []
            for sql in pending:
                try:
                    con.execute(sql)
                except duckdb.Error as exc:
                    failed.append((sql, exc))
            if len(failed) == len(pending):
                raise NsysqlError(f"cannot copy a view into schema {schema}: {str(failed[0][1]).splitlines()[0]}")
            pending = [sql for sql, _ in failed]
        create_macros(con, made)
        # COMMENT ON takes no bound parameters; the texts are nsysql's own, from its SQL headers.
        for kind, name, comment in con.execute(
                "SELECT 'TABLE', table_name, comment FROM duckdb_tables() WHERE database_name = $db "
                "AND comment IS NOT NULL UNION ALL SELECT 'VIEW', view_name, comment FROM duckdb_views() "
                "WHERE database_name = $db AND comment IS NOT NULL", {"db": _SOURCE}).fetchall():
            con.execute(f"COMMENT ON {kind} {quote_ident(name)} IS {quote_literal(comment)}")
        for table, column, comment in con.execute(
                "SELECT table_name, column_name, comment FROM duckdb_columns() WHERE database_name = $db "
                "AND comment IS NOT NULL", {"db": _SOURCE}).fetchall():
            con.execute(f"COMMENT ON COLUMN {quote_ident(table)}.{quote_ident(column)} IS {quote_literal(comment)}")
    finally:
        con.execute(f"USE {quote_ident(home)}.main")
        con.execute(f"DETACH {_SOURCE}")
