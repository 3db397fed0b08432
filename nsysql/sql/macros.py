"""The SQL library: DuckDB table macros under queries/macros/, the interval routines several queries share.

Each file is one `CREATE OR REPLACE TEMP MACRO` statement. `install` creates them on a connection: as TEMP
macros on an export's (read-only) cache connection, as macros stored in the file for `nsysql db`, so the views of
the findings that use them work in the stock `duckdb` shell too.
"""
from __future__ import annotations

import re
from collections.abc import Iterable

import duckdb

from nsysql.sql import catalog

_TEMP = re.compile(r"^CREATE OR REPLACE TEMP MACRO ", re.MULTILINE)


def install(con: duckdb.DuckDBPyConnection, *, stored: bool = False, only: Iterable[str] | None = None) -> None:
    """Create the macros on `con`: all of them, or those of `only` (query ids) and the macros they call."""
    chosen = catalog.group("macros") if only is None else called(only)
    for q in catalog.requirements_first(chosen):  # DuckDB binds a macro's callees when created
        sql = q.sql
        if not _TEMP.search(sql):
            raise ValueError(f"{q.path}: a macro file is one CREATE OR REPLACE TEMP MACRO statement")  # a bug
        con.execute(_TEMP.sub("CREATE OR REPLACE MACRO ", sql, count=1) if stored else sql)


def called(requires: Iterable[str]) -> list[catalog.Query]:
    """The macros among `requires` (query ids) and every macro those call, directly or through others."""
    macros = {q.id: q for q in catalog.group("macros")}
    found: dict[str, catalog.Query] = {}
    pending = [r for r in requires if r in macros]
    while pending:
        q = macros[pending.pop()]
        if q.id not in found:
            found[q.id] = q
            pending += [r for r in q.requires if r in macros]
    return list(found.values())
