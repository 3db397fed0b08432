"""The rules every SQL file follows (a checker, not a reviewer)."""
from __future__ import annotations

import re

import pytest

from nsysql import catalog

QUERIES = sorted(catalog.all_queries().values(), key=lambda q: q.id)


@pytest.mark.parametrize("q", QUERIES, ids=[q.id for q in QUERIES])
def test_header_is_complete(q):
    assert q.purpose, "purpose line"
    assert "requires" in q.meta, "requires line"
    assert "params" in q.meta, "params line"
    if q.name != "raw_stubs":
        assert q.columns, "columns with types and units"
        for c in q.columns:
            assert c.type and c.unit, c


@pytest.mark.parametrize("q", [q for q in QUERIES if not q.id.startswith(("normalize.", "macros."))],
                         ids=lambda q: q.id)
def test_outputs_are_explicit_and_ordered(q):  # macros are joined by the queries that call them, never shown
    body = "\n".join(l.split("--")[0] for l in q.sql.splitlines())
    final_select = body[body.rfind("\nSELECT"):] if "\nSELECT" in body else body
    assert not re.search(r"SELECT\s+\*", final_select), "no SELECT * in outputs"
    one_row = q.meta.get("rows") == "one"  # a single-row aggregate needs no order
    assert "ORDER BY" in final_select or one_row, "deterministic ORDER BY"


def test_reports_never_read_raw_tables():
    for q in QUERIES:
        if not q.id.startswith("normalize."):
            assert not re.search(r"\b(CUPTI_ACTIVITY_KIND_\w+|NVTX_EVENTS|StringIds|OSRT_API)\b",
                                 "\n".join(l.split("--")[0] for l in q.sql.splitlines())), q.id


def test_ids_match_paths():
    for q in QUERIES:
        assert q.path[:-4].replace("/", ".") == q.id


NORMALIZED = [q for q in catalog.group("normalize.nsys3") if q.columns and "CREATE TABLE" in q.sql]


@pytest.mark.parametrize("q", NORMALIZED, ids=lambda q: q.name)
def test_normalized_tables_have_their_header_columns_and_types(q, opened):
    """What a normalized table really holds is what its header promises (a SUM over BIGINT is a
    HUGEINT in DuckDB: one slipped into nvtx_range.depth and made every read of it 30x slower)."""
    ex = opened["gpt-tiny-train-fp32"]
    got = ex.con.execute("SELECT column_name, data_type FROM information_schema.columns "
                         "WHERE table_name = $t ORDER BY ordinal_position", {"t": q.name}).fetchall()
    assert [name for name, _ in got] == [c.name for c in q.columns]
    for (name, data_type), c in zip(got, q.columns):
        assert data_type.split("(")[0] == c.type, f"{q.name}.{name} is {data_type}, header says {c.type}"
