"""The rules every SQL file follows (a checker, not a reviewer)."""
from __future__ import annotations

import json
import re

import pytest

from nsysql.sql import catalog

from conftest import load_script

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


# -- the header contract (docs/query-headers.md): a strict parser -------------------------------------------------
GOOD = """-- nsysql: analysis.toy v3
-- purpose: A toy.
-- requires: kernel, analysis.steps
-- params: $top BIGINT default 10 (rows shown,
--   at most)
-- notes: First line.
--   Second line, indented.
-- columns:
--   name | VARCHAR | text
--   total_ns | BIGINT | ns (all of it)
--   pct | DOUBLE | pct | 1
SELECT 1 LIMIT $top;
"""


def test_header_parser_reads_multi_line_values():
    q = catalog.parse(GOOD, "analysis/toy.sql")
    assert (q.id, q.version, q.purpose, q.requires) == ("analysis.toy", 3, "A toy.", ("kernel", "analysis.steps"))
    assert q.meta["notes"] == "First line.\nSecond line, indented."
    assert q.params == (catalog.Param("top", "BIGINT", 10, "rows shown, at most"),)
    assert q.meta["params"] == "$top BIGINT default 10 (rows shown,\nat most)"
    assert [(c.name, c.type, c.unit, c.decimals) for c in q.columns] == [
        ("name", "VARCHAR", "text", None), ("total_ns", "BIGINT", "ns (all of it)", None), ("pct", "DOUBLE", "pct", 1)]
    assert set(q.meta) == {"purpose", "requires", "params", "notes"}  # no junk keys from continuation lines


@pytest.mark.parametrize("line, number, message", [
    ("-- remarks: x", 6, "unknown header key 'remarks'"),
    ("-- purpose: again", 6, "given twice"),
    ("--x", 6, "expected '-- key: value'"),
    ("-- Free text without a key", 6, "expected '-- key: value'"),
])
def test_header_parser_rejects_with_file_and_line(line, number, message):
    text = GOOD.replace("-- notes: First line.", line, 1)
    with pytest.raises(catalog.HeaderError, match=f"^analysis/toy.sql:{number}: .*{re.escape(message)}"):
        catalog.parse(text, "analysis/toy.sql")


@pytest.mark.parametrize("bad, message", [
    ("--   pct | DOUBLE", "a column line is"), ("--   pct | DOUBLE | pct | one", "a column.s decimals are a whole number")])
def test_header_parser_rejects_bad_columns(bad, message):
    with pytest.raises(catalog.HeaderError, match=f"toy.sql:11: {message}"):
        catalog.parse(GOOD.replace("--   pct | DOUBLE | pct | 1", bad), "analysis/toy.sql")


@pytest.mark.parametrize("params, message", [
    ("$top BIGINT default 10, $limit BIGINT", "unused: limit"),
    ("none", "undeclared: top"),
    ("$top default 10", "a parameter is '$name TYPE"),
    ("$top BIGINT default 10 (unclosed", "a parameter is '$name TYPE"),
])
def test_header_params_declare_exactly_what_the_sql_uses(params, message):
    text = re.sub(r"-- params: .*?\n--  *at most\)\n", f"-- params: {params}\n", GOOD, flags=re.S)
    assert text != GOOD
    with pytest.raises(catalog.HeaderError, match=re.escape(message)):
        catalog.parse(text, "analysis/toy.sql")


def test_header_params_are_typed_once():
    """Commas and apostrophes inside a parameter's help, quoted defaults with commas, and null/true defaults."""
    got = catalog.parse_params("$a VARCHAR default 'x, y' (the thread's, or none), b BOOLEAN default true, "
                               "$c BIGINT default null (pid; null = every one), $d DOUBLE", "toy")
    assert got == (catalog.Param("a", "VARCHAR", "x, y", "the thread's, or none"),
                   catalog.Param("b", "BOOLEAN", True), catalog.Param("c", "BIGINT", None, "pid; null = every one"),
                   catalog.Param("d", "DOUBLE"))
    assert not got[3].has_default and got[2].has_default


def test_header_parser_needs_the_required_keys():
    with pytest.raises(catalog.HeaderError, match="lacks 'requires'"):
        catalog.parse(GOOD.replace("-- requires: kernel, analysis.steps\n", ""), "analysis/toy.sql")


def test_header_lock_rule():
    """scripts/check_headers.py: columns changed at the same version fail; a raised version only needs the lock."""
    check = load_script("scripts/check_headers.py")
    locked = {"a.x": {"version": 1, "columns": ["n | BIGINT | count"]}}
    assert check.problems(locked, locked) == ([], [])
    bump, _ = check.problems(locked, {"a.x": {"version": 1, "columns": ["n | DOUBLE | count"]}})
    assert "raise it to v2" in bump[0]
    bump, stale = check.problems(locked, {"a.x": {"version": 2, "columns": ["n | DOUBLE | count"]}})
    assert not bump and stale == ["a.x: v1 -> v2"]
    assert check.problems(locked, {}) == ([], ["a.x: removed"])
    lock = json.loads(check.LOCK.read_text(encoding="utf-8"))
    assert check.problems(lock, check.current()) == ([], []), "run python scripts/check_headers.py --update"


@pytest.mark.parametrize("line, message", [
    ('-- optional: "pct", ("name", "total_ns")', None),
    ('-- optional: "nope"', "presentation hints name columns it does not have: nope"),
    ("-- optional: pct", "'optional:' lists quoted column names"),
    ('-- text-min: "name" wide', "'text-min:' is"),
])
def test_presentation_hints_are_read_from_the_header(line, message):
    text = GOOD.replace("-- notes: First line.", line + "\n-- notes: First line.", 1)
    if message is None:
        q = catalog.parse(text, "analysis/toy.sql")
        assert q.optional == ("pct", ("name", "total_ns")) and q.text_min == {}
        return
    with pytest.raises(catalog.HeaderError, match=re.escape(message)):
        catalog.parse(text, "analysis/toy.sql")


def test_every_reports_hints_name_its_own_columns():
    """The hints moved from the command line's code into the headers (e.g. cuda_gpu_trace's launch geometry)."""
    q = catalog.get("reports.cuda_gpu_trace")
    assert ("GrdX", "GrdY", "GrdZ") in q.optional and catalog.get("reports.um_sum").text_min == {"Virtual Address": 18}
    assert "NCCL" in catalog.get("reports.nccl_gpu_overlap_trace").meta["empty"]
