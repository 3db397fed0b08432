"""The SQL library: DuckDB table macros under queries/macros/, the interval routines several queries share.

Each file is one `CREATE OR REPLACE TEMP MACRO` statement. `install` creates them on a connection: as TEMP
macros on an export's (read-only) cache connection, as macros stored in the file for `nsysql db`, so the views of
the findings that use them work in the stock `duckdb` shell too.
"""
from __future__ import annotations

import re

import duckdb

from . import catalog

_TEMP = re.compile(r"^CREATE OR REPLACE TEMP MACRO ", re.MULTILINE)


def install(con: duckdb.DuckDBPyConnection, *, stored: bool = False) -> None:
    for q in catalog.requirements_first(catalog.group("macros")):  # DuckDB binds a macro's callees when created
        sql = q.sql
        if not _TEMP.search(sql):
            raise ValueError(f"{q.path}: a macro file is one CREATE OR REPLACE TEMP MACRO statement")  # a bug
        con.execute(_TEMP.sub("CREATE OR REPLACE MACRO ", sql, count=1) if stored else sql)
