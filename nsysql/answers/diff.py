"""Two exports side by side (`nsysql diff A B`).

Each export's normalized DuckDB file is attached read-only to one in-memory connection; the side
query (analysis._diff_ranges, diff_kernels or diff_layers) runs against each in turn into a temporary
table, and analysis._diff joins the two. No rows pass through Python on the way.
"""
from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

import duckdb
import polars as pl

from nsysql.errors import MissingDataError, NsysqlError
from nsysql.sql import catalog
from nsysql.sql.engine import connect, quote_literal

if TYPE_CHECKING:
    from nsysql.query.queries import Queries

SIDE_QUERIES = {
    "range": "analysis._diff_ranges",
    "kernel": "analysis._diff_kernels",
    "layer": "analysis._diff_layers",
}
MATCHES = ("exact", "base")


def diff(a: "Queries", b: "Queries", *, by: str = "range", match: str = "exact") -> pl.DataFrame:
    """Per range path, kernel (name or base name) or layer: A's and B's count and time, and the change."""
    if by not in SIDE_QUERIES:
        raise NsysqlError(f"diff `by=` takes {', '.join(SIDE_QUERIES)}, not {by!r}")
    if match not in MATCHES:
        raise NsysqlError(f"diff `match=` takes {' or '.join(MATCHES)}, not {match!r}")
    if match != "exact" and by != "kernel":
        raise NsysqlError("`match='base'` applies to kernels only; add `by='kernel'`")
    side = catalog.get(SIDE_QUERIES[by])
    for export in (a, b):
        if by == "range" and export.has("kernel") and not export.has("nvtx_range"):  # a CUDA program without NVTX
            raise MissingDataError(f"{export.path.name} has no NVTX_EVENTS, which diff per NVTX range (the default) "
                                   "needs; per kernel (`by='kernel'`) works without NVTX; capture with --trace=nvtx "
                                   "for ranges")
    combine = catalog.get("analysis._diff")
    con = connect()
    try:
        for alias, export in (("a", a), ("b", b)):
            export.require(side.requires, side.id)

            def read_side(alias: str = alias, export: Queries = export) -> None:
                export.build_tables_for(side)  # the file read below holds what the side query reads
                # the cache path is nsysql's own file name, never user text (quote_literal's contract)
                con.execute(f"ATTACH {quote_literal(str(export.store.database))} AS export_{alias} (READ_ONLY)")
                try:
                    con.execute(f"USE export_{alias}")
                    con.execute(f"CREATE TEMP TABLE diff_{alias} AS {_statement(side.sql)}",
                                side.bound_params({"match": match}))
                except duckdb.Error:  # a damaged cache is built again (Store.rebuilt_once) and read once more
                    con.execute("USE memory")
                    with contextlib.suppress(duckdb.Error):
                        con.execute(f"DETACH export_{alias}")
                    raise

            export.store.rebuilt_once(read_side)
        con.execute("USE memory")
        rel = con.execute(combine.sql)
        cols = [d[0] for d in rel.description]
        rows = rel.fetchall()
    except duckdb.Error as exc:
        raise NsysqlError(str(exc).splitlines()[0]) from None
    finally:
        con.close()
    if cols != [c.name for c in combine.columns]:
        raise NsysqlError(f"{combine.path}: columns {cols} differ from its header")  # a bug, not user error
    if not rows:
        return pl.DataFrame({c.name: pl.Series([], dtype=_DTYPES[c.type]) for c in combine.columns})
    return pl.DataFrame(rows, schema=cols, orient="row", infer_schema_length=None)


_DTYPES = {"VARCHAR": pl.String, "BIGINT": pl.Int64, "DOUBLE": pl.Float64}


def _statement(sql: str) -> str:
    """One query's text without its final semicolon, to embed in CREATE ... AS."""
    text = sql.rstrip()
    while text.endswith(";"):
        text = text[:-1].rstrip()
    return text
