"""Rows no profiler writes, found in the normalized tables: each a warning naming the raw table and the count.

An export edited or merged by hand can hold them, and every sum over it is then wrong without a sign: an event
that ends before it starts adds negative time; a duplicated row counts twice; a StringIds table with duplicate
ids would repeat every row that looks a name up in it (the normalized tables read each id once, so the warning
says which names may be wrong instead); without StringIds every name is unknown. These checks run in DuckDB over
the cached tables (milliseconds on millions of rows). A damaged file can drop or repeat rows too: what SQLite's
own integrity check found when the cache was built (nsysql/store/sqlite_check.py) is named as well.
"""
from __future__ import annotations

NAMED = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS")


def check(ex) -> list[str]:
    """Warnings about `ex` (an open nsysql.Export), one line each; empty for every export nsys writes. The counts
    are queries/analysis/damaged_tables.sql and sanity.sql, screened first by _sanity_screen.sql (kept with the export's answers, so they are read once)."""
    from nsysql.store.sqlite_check import describe
    from nsysql.store.store import SOURCES
    out = []
    for row in _rows(ex, "analysis.damaged_tables"):
        found = describe(row["problems"], row["first_problem"])
        out.append(f"{row['raw_table']}: SQLite's integrity check finds {found}; rows of this table may be missing, "
                   "repeated or wrong, so results over it are not to be trusted; export it again from the .nsys-rep "
                   "(nsys export --type sqlite)")
    for row in _sanity_rows(ex):
        if row["table_name"] == "string_ids_repeated":
            out += _string_ids(row["duplicates"], row["repeated"])
            continue
        raw = SOURCES.get(row["table_name"], (row["table_name"],))[0]
        if row["negative"]:
            out.append(f"{raw}: {row['negative']:,} rows end before they start (negative durations); times summed "
                       "over this table are not to be trusted")
        if row["repeated"]:
            out.append(f"{raw}: {row['repeated']:,} rows share their row id with another (a damaged page read "
                       "twice?); counts and times over this table include them twice")
        elif row["duplicates"]:
            out.append(f"{raw}: {row['duplicates']:,} duplicate rows (same stream or thread, times and "
                       "correlationId); counts and times over this table include them twice")
    if "StringIds" not in ex.store.raw_tables and any(t in ex.store.raw_tables for t in NAMED):
        out.append("StringIds: missing, so kernel, API and range names are unknown")
    return out


def _string_ids(extra_rows: int, ambiguous: int) -> list[str]:
    """StringIds with an id on several rows: read once per id, so no row is counted twice; names may be wrong."""
    if not extra_rows:
        return []
    if not ambiguous:
        return [f"StringIds: {extra_rows:,} rows repeat an id with the same string; each id is read once, so nothing "
                "is counted twice"]
    return [f"StringIds: {extra_rows:,} rows repeat an id, {ambiguous:,} ids with different strings; each id is read "
            "once (its first row), so nothing is counted twice, but names of those ids may be wrong"]


def _sanity_rows(ex) -> list[dict]:
    """analysis.sanity's rows; the cheaper screen's where it finds nothing (then every exact count is 0 too)."""
    screen = list(_rows(ex, "analysis._sanity_screen"))
    counted = ("negative", "repeated", "duplicates")
    if screen and not any(row[c] for row in screen for c in counted):
        return screen
    return list(_rows(ex, "analysis.sanity"))


def _rows(ex, query_id: str):
    from nsysql.errors import NsysqlError
    try:
        return ex.run(query_id).iter_rows(named=True)
    except NsysqlError:  # a check that cannot run must not stop the analysis it guards
        return iter(())
