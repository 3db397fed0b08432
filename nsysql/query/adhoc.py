"""Ad-hoc, read-only SQL over an export's normalized tables and the catalog's views.

User values reach DuckDB only as bound `$name` parameters. Only reading statements run
(SELECT, and EXPLAIN of one); the normalized database is also opened read-only.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

import duckdb
import polars as pl

from nsysql.errors import NsysqlError
from nsysql.sql import catalog, views

if TYPE_CHECKING:
    from nsysql.query.queries import Queries

_READING = {duckdb.StatementType.SELECT}
_NAME = re.compile(r"^[A-Za-z_]\w*$")


def parse_params(pairs: list[str]) -> dict[str, int | float | str]:
    """`name=value` strings -> {name: value}; a value is an int if it parses as one, else a float, else text."""
    params: dict[str, int | float | str] = {}
    for pair in pairs:
        name, sep, text = pair.partition("=")
        name = name.strip().lstrip("$")
        if not sep or not _NAME.match(name):
            raise NsysqlError(f"bad parameter {pair!r}; write -p name=value (the query uses it as $name)")
        params[name] = catalog.typed_value(text)
    return params


def check_read_only(con: duckdb.DuckDBPyConnection, sql: str) -> duckdb.Statement:
    """The one statement in `sql`, if it only reads; else a one-line error."""
    try:
        statements = con.extract_statements(sql)
    except duckdb.Error as exc:
        raise NsysqlError(str(exc).splitlines()[0]) from None
    if len(statements) != 1:
        raise NsysqlError(f"give exactly one SQL statement (got {len(statements)})")
    stmt = statements[0]
    inner = stmt
    if stmt.type == duckdb.StatementType.EXPLAIN:
        # EXPLAIN ANALYZE runs its statement: judge that one.
        body = re.sub(r"^\s*EXPLAIN\s+(ANALY[SZ]E\s+)?", "", stmt.query, flags=re.IGNORECASE)
        inner = check_read_only(con, body)
    if inner.type not in _READING:
        raise NsysqlError(f"nsysql sql is read-only and refuses {inner.type.name} statements; "
                          "use SELECT (save results with --format/-o, or build a database with `nsysql db`)")
    return stmt


def run(ex: Queries, sql: str, params: dict | None = None) -> pl.DataFrame:
    """Run one reading statement against the normalized tables plus the report and analysis views."""
    params = params or {}
    stmt = ex.store.rebuilt_once(lambda: check_read_only(ex.con, sql))
    wanted = set(stmt.named_parameters)
    if wanted - set(params):
        missing = sorted(wanted - set(params))
        raise NsysqlError(f"the query uses {', '.join('$' + n for n in missing)}; "
                          f"pass {' '.join(f'-p {n}=VALUE' for n in missing)}")
    if set(params) - wanted:
        extra = sorted(set(params) - wanted)
        raise NsysqlError(f"parameter(s) {', '.join(extra)} not used by the query (write them as $name in it)")
    return ex.sql(sql, params, prepare=lambda: add_catalog_views(ex, sql))


def add_catalog_views(ex: Queries, sql: str | None = None) -> list[views.CatalogView]:
    """The report and analysis views as TEMP views on the export's (read-only) connection: those `sql` names and
    the views they read (all of them without `sql`). Creating all ~75 took seconds, on any export.

    An analysis other views read (`steady_steps`, `_step_busy`, ...) is a TEMP table instead, made as nsysql's own
    commands make it (Queries.make_inputs: from its stored answer where one is kept): as a view it would be computed
    again inside every view that reads it, at every depth (`SELECT count(*) FROM top_ops` took 30 s on a 1.7M-kernel
    export, 3 s this way: docs/performance-history.md)."""
    taken = {r[0] for r in ex.con.execute(
        "SELECT table_name FROM information_schema.tables "
        "WHERE table_schema = 'main' AND table_catalog = current_database()").fetchall()}
    wanted = views.catalog_views(taken)
    if sql is not None:
        wanted = views.named_in(wanted, sql)
    for v in wanted:
        if v.sql is not None and any(r.startswith("analysis.") for r in v.query.requires):
            ex.make_inputs(v.query)
    present = {r[0] for r in ex.con.execute("SELECT view_name FROM duckdb_views() WHERE temporary UNION ALL "
                                            "SELECT table_name FROM duckdb_tables() WHERE temporary").fetchall()}
    return views.create_views(ex.con, [v for v in wanted if v.view_name not in present], temporary=True)
