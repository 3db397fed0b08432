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


@pytest.mark.parametrize("q", [q for q in QUERIES if not q.id.startswith("normalize.")],
                         ids=lambda q: q.id)
def test_outputs_are_explicit_and_ordered(q):
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
