"""Exports of another export-schema version: a real Nsight Systems 2022.4 capture (schema 3.0.0,
CPU only: NVTX + OS runtime) checked against that version's own `nsys stats` CSVs and a plain
reading of its rows, and synthetic exports for versions nsysql refuses.

The fixture (fixtures/cpu-nvtx-osrt-nsys2022.4, made by scripts/capture_cpu_nvtx.sh) holds a
NOT_GOLDEN marker, so the golden tests that use every fixture leave it to this file.
"""
from __future__ import annotations

import csv
import dataclasses
import io
import json
import re
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

import nsysql
from nsysql.cli.app import app
from nsysql.errors import MissingDataError, NsysqlError
from nsysql.present.render import to_csv
from nsysql.sql import catalog
from nsysql.store import importer

from conftest import make_synthetic, unxz

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "fixtures" / "cpu-nvtx-osrt-nsys2022.4"
CUDA_REPORTS = ["cuda_api_sum", "cuda_gpu_kern_sum", "cuda_gpu_mem_size_sum", "cuda_gpu_mem_time_sum",
                "cuda_kern_exec_sum", "nvtx_gpu_proj_sum", "nvtx_kern_sum"]
runner = CliRunner()
synth = make_synthetic()


# -- the 2022.4 fixture --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def raw_path(tmp_path_factory) -> Path:
    return unxz(FIXTURE / "export.sqlite.xz", tmp_path_factory.mktemp("nsys2022") / "export.sqlite")


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def ex(raw_path, cache):
    with nsysql.open(raw_path, cache_dir=cache) as export:
        yield export


def nvidia_csv(report: str) -> list[list[str]]:
    with (FIXTURE / f"nsys-stats_{report}.csv").open(newline="") as f:
        return list(csv.reader(f))


def mine_csv(export, report: str) -> list[list[str]]:
    q = catalog.get(f"reports.{report}")
    decimals = {c.name: c.decimals for c in q.columns if c.decimals is not None}
    return list(csv.reader(io.StringIO(to_csv(export.report(report), decimals))))


def test_fixture_is_what_its_readme_row_says(raw_path):
    con = sqlite3.connect(f"file:{raw_path}?mode=ro", uri=True)
    try:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        meta = dict(con.execute("SELECT name, value FROM EXPORT_META_DATA"))
    finally:
        con.close()
    assert meta["EXPORT_SCHEMA_VERSION"] == "3.0.0" and meta["EXPORT_PRODUCT_VERSION"].startswith("2022.4")
    assert "META_DATA_EXPORT" not in tables              # the 2022.4 name is the only one
    assert not {t for t in tables if t.startswith("CUPTI_")}
    assert {"NVTX_EVENTS", "OSRT_API", "StringIds", "ThreadNames", "PROCESSES"} <= tables
    assert (FIXTURE / "NOT_GOLDEN").exists()
    assert (FIXTURE / "export.sqlite.xz").stat().st_size <= 5 * 2**20


def test_metadata_reaches_export_info_through_the_shim(ex):
    info = ex.info()
    assert info["EXPORT_SCHEMA_VERSION"] == "3.0.0"
    assert info["EXPORT_PRODUCT_VERSION"].startswith("2022.4")
    assert info["export_schema"] == "3.0.0" and info["view_set"] == "nsys3"
    assert info["shims"] == "normalize.shims.v2_0_to_v3_15.meta_data_export"
    # 2022.4's export-parameter keys appear under the 3.20 names (and its OUTUPT typo mended)
    assert info["EXPORT_PARAM_INPUT_FILE"].endswith(".nsys-rep")
    assert info["EXPORT_PARAM_OUTPUT_FILE"].endswith(".sqlite")
    assert not any(k.startswith(("EXPORT_INPUT", "EXPORT_OUTUPT")) for k in info)


def test_capture_facts(ex, raw_path):
    con = sqlite3.connect(f"file:{raw_path}?mode=ro", uri=True)
    try:
        ranges = con.execute("SELECT COUNT(*) FROM NVTX_EVENTS WHERE eventType IN (59, 60)").fetchone()[0]
    finally:
        con.close()
    facts = ex.run("analysis.capture_facts").row(0, named=True)
    assert facts["nsys_version"].startswith("2022.4") and facts["export_schema"] == "3.0.0"
    assert facts["nvtx_ranges"] == ranges == 19
    assert facts["processes"] == 1 and facts["threads"] == 3      # main, worker_0, worker_1
    assert facts["kernels"] == facts["api_calls"] == facts["memcpys"] == facts["memsets"] == 0
    assert facts["gpus"] is None


def test_nvtx_sum_matches_nsys_2022_4(ex):
    """Every column of 2022.4's nvtxsum (same header as 2025.3's nvtx_sum); the Range of a
    default-domain range is the one difference: 2022.4 prints `main`, 2025.3 (and nsysql) `:main`."""
    mine, theirs = mine_csv(ex, "nvtx_sum"), nvidia_csv("nvtxsum")
    assert mine[0] == theirs[0], "header"
    assert len(mine) == len(theirs), "row count"
    rng = theirs[0].index("Range")
    for i, (a, b) in enumerate(zip(mine[1:], theirs[1:]), start=1):
        assert a[:rng] + a[rng + 1:] == b[:rng] + b[rng + 1:], f"row {i}"
        assert a[rng] == (b[rng] if ":" in b[rng] else ":" + b[rng]), f"row {i} range name"


def test_osrt_sum_matches_nsys_2022_4(ex):
    """2022.4's osrtsum and 2025.3's osrt_sum share the header: every cell must match."""
    mine, theirs = mine_csv(ex, "osrt_sum"), nvidia_csv("osrtsum")
    assert mine == theirs


@pytest.mark.parametrize("style,report", [("PushPop", "nvtxppsum"), ("StartEnd", "nvtxsesum")])
def test_nvtx_style_summaries_match_nsys_2022_4(ex, style, report):
    """2022.4's per-style NVTX summaries (no nsysql report of their own) against nvtx_sum's rows of that
    style: the columns both have, with Time (%) recomputed within the style."""
    mine = [r for r in mine_csv(ex, "nvtx_sum")[1:] if r[8] == style]
    theirs = nvidia_csv(report)
    assert theirs[0][1:8] == mine_csv(ex, "nvtx_sum")[0][1:8]
    assert len(mine) == len(theirs) - 1
    total = sum(int(r[1]) for r in mine)
    for a, b in zip(mine, theirs[1:]):
        assert f"{100.0 * int(a[1]) / total:.1f}" == b[0]
        assert a[1:8] == b[1:8]
        assert a[9] == (b[8] if ":" in b[8] else ":" + b[8])


def brute_force_tree(raw_path) -> dict[int, tuple[str, int | None]]:
    """rowid -> (`<domain>:<text>`, parent rowid) of every same-thread range, by plain containment."""
    con = sqlite3.connect(f"file:{raw_path}?mode=ro", uri=True)
    try:
        strings = dict(con.execute("SELECT id, value FROM StringIds"))
        domains = {(gtid >> 24, dom): text for gtid, dom, text in con.execute(
            "SELECT globalTid, domainId, text FROM NVTX_EVENTS WHERE eventType = 75")}
        rows = con.execute("SELECT rowid, start, end, globalTid, text, textId, domainId FROM NVTX_EVENTS "
                           "WHERE eventType IN (59, 60) AND endGlobalTid IS NULL").fetchall()
    finally:
        con.close()
    out = {}
    for rowid, s, e, gtid, text, text_id, dom in rows:
        name = f"{domains.get((gtid >> 24, dom), '')}:{text if text is not None else strings[text_id]}"
        around = [r for r in rows if r[0] != rowid and r[3] == gtid and r[1] <= s and r[2] >= e]
        parent = min(around, key=lambda r: (r[2] - r[1], -r[1]))[0] if around else None
        out[rowid] = (name, parent)
    return out


def test_range_tree_matches_brute_force(ex, raw_path):
    """2022.4's event types, domains and registered strings (textId) read like 2025.3's."""
    got = {r["range_id"]: (r["range_name"], r["parent_id"])
           for r in ex.sql("SELECT range_id, range_name, parent_id FROM nvtx_range WHERE end_global_tid IS NULL")
           .iter_rows(named=True)}
    assert got == brute_force_tree(raw_path)
    paths = set(ex.ranges()["path"])
    assert paths == {"main", "main/setup", "main/load", "main/work", "main/work/step_0", "main/work/step_1",
                     "main/work/step_2", "main/teardown", "handoff", "worker", "worker/compute", "worker/io"}


def test_threads_are_named(ex):
    names = ex.sql("SELECT t.thread_name FROM thread AS t JOIN (SELECT DISTINCT global_tid FROM nvtx_range) "
                   "USING (global_tid) ORDER BY 1")["thread_name"].to_list()
    assert names == ["main", "worker_0", "worker_1"]


@pytest.mark.parametrize("report", CUDA_REPORTS)
def test_cuda_reports_fail_with_one_line(ex, report):
    with pytest.raises(MissingDataError) as err:
        ex.report(report)
    message = str(err.value)
    assert "\n" not in message and "has no CUPTI_ACTIVITY_KIND_" in message and "--trace=cuda" in message


@pytest.mark.parametrize("method", ["kernels", "gpu_time_by_range", "launch_overhead", "memcpy"])
def test_cuda_methods_fail_with_one_line(ex, method):
    with pytest.raises(MissingDataError, match=r"^[^\n]*--trace=cuda[^\n]*$"):
        getattr(ex, method)()


@pytest.mark.parametrize("q", [q for q in catalog.group("analysis") if not q.params], ids=lambda q: q.id)
def test_every_analysis_runs_or_names_what_is_missing(ex, q):
    missing = run_or_missing(ex, q)
    assert missing is None or ("\n" not in missing and "capture with --trace=" in missing)


def run_or_missing(ex, q) -> str | None:
    """Run analysis `q` on `ex`: None when it gives its header's columns, else the one-line MissingDataError text
    (skipped when `q` reads tables that only other queries make at run time)."""
    normalized = set(ex.sql("SELECT table_name FROM information_schema.tables")["table_name"])
    needs = {t for r in q.requires for t in r.split("|")}
    if not needs <= normalized:
        pytest.skip(f"{q.id} reads tables made at run time ({', '.join(sorted(needs - normalized))})")
    try:
        df = ex.run(q.id)
    except MissingDataError as exc:
        return str(exc)
    assert df.columns == [c.name for c in q.columns]
    return None


def test_cli_report_and_summarize(raw_path, cache):
    ok = runner.invoke(app, ["report", "osrt_sum", str(raw_path), "--format", "csv", "--cache-dir", str(cache)])
    assert ok.exit_code == 0, ok.output
    assert list(csv.reader(io.StringIO(ok.output))) == nvidia_csv("osrtsum")
    for report in CUDA_REPORTS:
        bad = runner.invoke(app, ["report", report, str(raw_path), "--cache-dir", str(cache)])
        assert bad.exit_code == 1
        assert re.fullmatch(r"Error: export\.sqlite has no CUPTI_ACTIVITY_KIND_\w+(?: or CUPTI_ACTIVITY_KIND_\w+)*, "
                            r"which reports\.\w+ needs; capture with --trace=cuda[^\n]*\n", bad.output), bad.output
    res = runner.invoke(app, ["summarize", str(raw_path), "--format", "json", "--cache-dir", str(cache)])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    facts = doc["capture"]
    assert facts["export_schema"] == "3.0.0" and facts["nsys_version"].startswith("2022.4")
    assert facts["kernels"] == 0 and doc["overview"]["gpus"] == [] and doc["overview"]["top_kernels"] == []


# -- shims -----------------------------------------------------------------------------------------
SHIMS = catalog.group("normalize.shims")


def stub_columns() -> dict[str, list[str]]:
    sql = catalog.get("normalize.nsys3.raw_stubs").sql
    return {m[1]: [c.strip().split()[0].strip('"') for c in m[2].split(",")]
            for m in re.finditer(r"CREATE TABLE raw\.(\w+) \((.*)\);", sql)}


@pytest.mark.parametrize("shim", SHIMS, ids=lambda q: q.id)
def test_shim_presents_a_stub_table_with_its_columns(shim):
    """A shim stands in for a raw table the 3.x views read: same columns as its stub, old tables only."""
    folder = shim.id.split(".")[2]
    assert re.fullmatch(r"v\d+_\d+_to_v\d+_\d+", folder)
    provided = shim.meta["provides"].removeprefix("raw.")
    assert [c.name for c in shim.columns] == stub_columns()[provided]
    assert all(r.startswith("nsys.") for r in shim.requires)
    assert shim.requires or "VALUES" in shim.sql, "a shim that reads no table is data (an ENUM's rows)"
    assert f"CREATE VIEW raw.{provided} AS" in shim.sql


def test_shims_apply_only_in_range_and_where_needed():
    old = {"EXPORT_META_DATA", "StringIds"}
    enums = ["enum_cuda_mem_kind", "enum_cuda_memcpy_oper"]
    assert [s.name for s in importer.applicable_shims("3.0.0", old)] == ["meta_data_export"]
    assert importer.applicable_shims("3.20.3", old) == []                       # outside the folder's range
    assert importer.applicable_shims("3.0.0", old | {"META_DATA_EXPORT"}) == []  # the 3.x table is there
    assert importer.applicable_shims("3.0.0", {"StringIds"}) == []               # nothing to read
    assert sorted(s.name for s in importer.applicable_shims("2.9.1", old)) == enums + ["meta_data_export"]
    assert [s.name for s in importer.applicable_shims("2.9.1", old | {"ENUM_CUDA_MEM_KIND"})] == [
        "enum_cuda_memcpy_oper", "meta_data_export"]
    # no metadata table: older than every version that has one, so only the shims whose range starts at 0.0
    assert sorted(s.name for s in importer.applicable_shims("unknown", old)) == enums
    assert importer.applicable_shims("unknown", old | {"ENUM_CUDA_MEM_KIND", "ENUM_CUDA_MEMCPY_OPER"}) == []


def test_editing_a_shim_changes_the_cache_key(monkeypatch):
    before = importer.views_version()
    real_group = catalog.group

    def group(prefix):
        queries = real_group(prefix)
        if prefix == "normalize.shims":
            queries = [dataclasses.replace(q, sql=q.sql + "\n-- edited") for q in queries]
        return queries

    monkeypatch.setattr(importer.catalog, "group", group)
    assert importer.views_version() != before


# -- synthetic versions ----------------------------------------------------------------------------
def write_case(tmp_path: Path, version: str, **kw) -> Path:
    return synth.schema_version_case(version, **kw).write(tmp_path / f"schema-{version}.sqlite")


def test_synthetic_2022_4_metadata_table(tmp_path):
    path = write_case(tmp_path, "3.0.0", product_version="2022.4.2.1", metadata_table="EXPORT_META_DATA")
    with nsysql.open(path, cache_dir=tmp_path / "cache") as export:
        assert export.info()["EXPORT_SCHEMA_VERSION"] == "3.0.0"
        assert export.report("nvtx_sum")["Range"].to_list() == [":phase"]
        assert export.report("osrt_sum")["Total Time (ns)"].to_list() == [100]


def test_no_metadata_table_is_read_as_3x(tmp_path):
    path = write_case(tmp_path, "3.0.0", metadata_table=None)
    with nsysql.open(path, cache_dir=tmp_path / "cache") as export:
        assert export.info()["export_schema"] == "unknown"
        assert export.report("nvtx_sum")["Total Time (ns)"].to_list() == [500]


@pytest.mark.parametrize("version,words", [
    ("1.9.0", "export schema 1.9.0 is older than nsysql supports (export schema 2.x and 3.x, i.e. Nsight Systems 2021.x "
              "to 2025.x, and exports without a metadata table); export the .nsys-rep again with a newer Nsight Systems"),
    ("4.0.0", "export schema 4.0.0 is newer than nsysql supports (export schema 2.x and 3.x, i.e. Nsight Systems 2021.x "
              "to 2025.x, and exports without a metadata table)"),
    ("next", "unreadable export schema version 'next' (supported: export schema 2.x and 3.x"),
])
@pytest.mark.parametrize("table", ["META_DATA_EXPORT", "EXPORT_META_DATA"])
def test_unsupported_schema_is_one_line(tmp_path, version, words, table):
    path = write_case(tmp_path, version, metadata_table=table)
    with pytest.raises(NsysqlError) as err:
        nsysql.open(path, cache_dir=tmp_path / "cache")
    assert words in str(err.value) and "\n" not in str(err.value)
    res = runner.invoke(app, ["report", "nvtx_sum", str(path), "--cache-dir", str(tmp_path / "cache")])
    assert res.exit_code == 1
    assert res.output.startswith("Error: ") and words in res.output and res.output.count("\n") == 1
    assert not list((tmp_path / "cache").glob("*.duckdb")), "a refused export leaves no cache"
