"""Exports of Nsight Systems before 2022.4: export schema 2.x and exports without a metadata table.

Always run: synthetic exports in the two old shapes (scripts/make_old_exports.py), with hand-worked answers.
When ../shared/samples/external is there (never committed; or where NSYSQL_EXTERNAL_SAMPLES says): the two real old exports it holds, every report and
rule against the CSVs NVIDIA's 2025.3 scripts made from them, and every command on them.
"""
from __future__ import annotations

import csv
import io
import os
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

import nsysql
from nsysql.cli.app import app
from nsysql.errors import MissingDataError
from nsysql.present.render import to_csv
from nsysql.sql import catalog, rules

from conftest import load_script, opened_each
from test_schema_versions import run_or_missing

REPO = Path(__file__).resolve().parents[1]
# ../shared beside the checkout (a worktree elsewhere can point NSYSQL_EXTERNAL_SAMPLES at it)
EXTERNAL = Path(os.environ.get("NSYSQL_EXTERNAL_SAMPLES") or REPO.parent / "shared" / "samples" / "external")
runner = CliRunner()


old_exports = load_script("scripts/make_old_exports.py")
FLAVOURS = list(old_exports.FLAVOURS)


# -- synthetic exports in the old shapes --------------------------------------------------------------------
@pytest.fixture(scope="module")
def synth_files(tmp_path_factory) -> dict[str, Path]:
    directory = tmp_path_factory.mktemp("old-synthetic")
    return {f: old_exports.old_training(f).write(directory / f"old_{f}.sqlite") for f in FLAVOURS}


@pytest.fixture(scope="module")
def synth_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("old-cache")


@pytest.fixture(scope="module")
def synth(synth_files, synth_cache):
    with opened_each(synth_files, synth_cache) as handles:
        yield handles


def test_synthetic_files_have_the_old_shapes(synth_files):
    import sqlite3
    for flavour, path in synth_files.items():
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            kernel = {r[1] for r in con.execute("PRAGMA table_info(CUPTI_ACTIVITY_KIND_KERNEL)")}
        finally:
            con.close()
        assert not {t for t in tables if t.startswith("ENUM_")} and "META_DATA_EXPORT" not in tables
        assert "greenContextId" not in kernel
        if flavour == "2021":
            assert not tables & {"EXPORT_META_DATA", "PROCESSES", "ANALYSIS_DETAILS", "NVTX_EVENTS"}
            assert "mangledName" not in kernel
        else:
            assert "EXPORT_META_DATA" in tables and "mangledName" in kernel


def test_what_the_importer_found(synth):
    info = synth["2022.1"].info()
    assert info["export_schema"] == "2.9.1" and info["EXPORT_PRODUCT_VERSION"] == "2022.1.3.3"
    assert info["EXPORT_PARAM_OUTPUT_FILE"] == "old.sqlite"  # 2022.1's EXPORT_OUTUPT_FILE, mended by the shim
    assert info["shims"] == ("normalize.shims.v0_0_to_v2_99.enum_cuda_mem_kind, "
                             "normalize.shims.v0_0_to_v2_99.enum_cuda_memcpy_oper, "
                             "normalize.shims.v2_0_to_v3_15.meta_data_export")
    assert info["missing_columns"] == "none" and info["view_set"] == "nsys3"
    info = synth["2021"].info()
    assert info["export_schema"] == "unknown" and "EXPORT_PRODUCT_VERSION" not in info
    assert info["shims"] == ("normalize.shims.v0_0_to_v2_99.enum_cuda_mem_kind, "
                             "normalize.shims.v0_0_to_v2_99.enum_cuda_memcpy_oper")
    assert info["missing_columns"] == "CUPTI_ACTIVITY_KIND_KERNEL.mangledName"


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_reports_give_the_hand_worked_answers(synth, flavour):
    ex = synth[flavour]
    kern = ex.report("cuda_gpu_kern_sum")
    assert kern["Name"].to_list() == [old_exports.GEMM] and kern["Total Time (ns)"].to_list() == [2000]
    assert kern["Instances"].to_list() == [2]
    mem = ex.report("cuda_gpu_mem_time_sum")  # labelled through the ENUM shims
    assert dict(zip(mem["Operation"], mem["Total Time (ns)"])) == {
        "[CUDA memcpy Host-to-Device]": 200, "[CUDA memcpy Device-to-Host]": 200, "[CUDA memset]": 100}
    trace = ex.report("cuda_gpu_trace")
    copies = trace.filter(trace["Name"].str.starts_with("[CUDA memcpy"))
    assert copies.select("SrcMemKd", "DstMemKd").rows() == [("Pageable", "Device"), ("Device", "Pageable")]
    api = ex.report("cuda_api_sum")
    assert dict(zip(api["Name"], api["Num Calls"])) == {"cudaMemcpy": 1, "cudaLaunchKernel": 2,
                                                         "cudaMemcpyAsync": 1, "cudaMemsetAsync": 1}
    assert ex.report("osrt_sum")["Total Time (ns)"].to_list() == [300]
    if flavour == "2021":
        with pytest.raises(MissingDataError, match=r"^old_2021\.sqlite has no NVTX_EVENTS, which reports\.nvtx_sum "
                                                   r"needs; capture with --trace=nvtx$"):
            ex.report("nvtx_sum")
    else:
        nvtx = ex.report("nvtx_sum")
        assert nvtx["Range"].to_list() == [":step"] and nvtx["Total Time (ns)"].to_list() == [8000]
        assert ex.report("nvtx_kern_sum")["Total Time (ns)"].to_list() == [2000]  # one range name, one kernel


@pytest.mark.parametrize("report", ["cuda_gpu_kern_sum", "cuda_kern_exec_sum"])
def test_mangled_names_fall_back_without_the_column(synth, report):
    """NVIDIA documents `:mangled` as falling back to the demangled names when the capture has no mangled names;
    an export without the mangledName column (2021) is that case: the column is filled with NULLs."""
    name = "Kernel Name" if report == "cuda_kern_exec_sum" else "Name"
    assert synth["2021"].report(f"{report}:mangled")[name].to_list() == [old_exports.GEMM]
    assert synth["2021"].report(f"{report}:base")[name].to_list() == ["gemm"]


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("q", [q for q in catalog.group("analysis") if not q.params], ids=lambda q: q.id)
def test_every_analysis_runs_or_names_what_is_missing(synth, flavour, q):
    missing = run_or_missing(synth[flavour], q)
    assert missing is None or (flavour == "2021" and "\n" not in missing and "has no NVTX_EVENTS" in missing)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_commands_work_or_say_what_is_missing(synth_files, synth_cache, flavour):
    path = str(synth_files[flavour])
    for command in (["summarize"], ["overview"], ["findings"], ["kernels"], ["layers"], ["steps"], ["gaps"],
                    ["memcpy"], ["overhead"], ["utilization"], ["efficiency"]):
        res = runner.invoke(app, command + [path, "--cache-dir", str(synth_cache)])
        if res.exit_code == 1:  # one line naming what is missing: NVTX, op markers (efficiency), or steps (no NVTX
            # ranges and no repeating GPU op sequence)
            assert re.fullmatch(r"Error: old_[\d.]+\.sqlite has no (NVTX_EVENTS|kernels inside PyTorch op markers|steps)"
                                r"[^\n]*\n", res.output), (command, res.output)
            assert "NVTX_EVENTS" not in res.output or flavour == "2021"
        else:
            assert res.exit_code == 0, (command, res.output)
    res = runner.invoke(app, ["summarize", path, "--format", "json", "--cache-dir", str(synth_cache)])
    assert res.exit_code == 0, res.output
    steps = runner.invoke(app, ["steps", path, "-f", "csv", "--cache-dir", str(synth_cache)])
    if flavour == "2022.1":
        assert steps.exit_code == 0 and len(steps.output.strip().splitlines()) == 3, steps.output  # header + 2 steps


def test_a_column_any_old_export_may_lack_is_filled(tmp_path):
    """A raw table without a column the normalized views read opens all the same, the column NULL; the cache
    lists it. Here NVTX_EVENTS without endGlobalTid and domainId (as an export older than both would have)."""
    b = old_exports.old_training("2022.1")
    b.flavour = old_exports.Flavour(**{**b.flavour.__dict__, "drop_columns": {
        **b.flavour.drop_columns, "NVTX_EVENTS": ("binaryData", "endGlobalTid", "domainId")}})
    path = b.write(tmp_path / "older.sqlite")
    with nsysql.open(path, cache_dir=tmp_path / "cache") as ex:
        assert ex.info()["missing_columns"] == "NVTX_EVENTS.endGlobalTid, NVTX_EVENTS.domainId"
        assert ex.report("nvtx_sum")["Range"].to_list() == [":step"]


# -- the real old exports in ../shared/samples/external ----------------------------------------------------
def _external() -> list[Path]:
    return sorted(d for d in EXTERNAL.iterdir() if (d / "export.sqlite.xz").exists()) if EXTERNAL.is_dir() else []


def nvidia_log(folder: Path) -> dict[str, tuple[int, str]]:
    """report or rule -> (NVIDIA's exit code, its message) from nvidia-scripts.log."""
    out = {}
    for line in (folder / "nvidia-scripts.log").read_text().splitlines():
        m = re.match(r"(\w+):, rc (\d+), \d+ rows ?(.*)$", line)
        if m:
            out[m[1]] = (int(m[2]), m[3])
    return out


EXTERNAL_CASES = [(d.name, name, outcome) for d in _external() for name, outcome in nvidia_log(d).items()]
needs_external = pytest.mark.skipif(not EXTERNAL_CASES, reason="../shared/samples/external is not here")


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    cache = tmp_path_factory.mktemp("external-cache")
    handles = {d.name: nsysql.open(d / "export.sqlite.xz", cache_dir=cache) for d in _external()}
    yield handles
    for h in handles.values():
        h.close()


def _mine(ex, name: str) -> str:
    if name in rules.names():
        df = ex.analyze(name)
        return to_csv(df, catalog.decimals(f"rules.{name}")) if df.height else ""
    return to_csv(ex.report(name), catalog.decimals(catalog.report_query(name).id))


@needs_external
def test_the_externals_are_what_their_readme_says(real):
    assert real["dlprof_2070s"].info()["export_schema"] == "2.9.1"
    assert real["dlprof_2070s"].info()["EXPORT_PRODUCT_VERSION"] == "2022.1.3.3"
    assert real["mordred_old"].info()["export_schema"] == "unknown"
    # mangledName, as its README says; and eventSyncId, which nsysql reads for cross-stream waits (critical path)
    assert real["mordred_old"].info()["missing_columns"].split(", ") == [
        "CUPTI_ACTIVITY_KIND_KERNEL.mangledName", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION.eventSyncId"]


@needs_external
@pytest.mark.parametrize("folder,name,outcome", EXTERNAL_CASES, ids=[f"{c[0]}-{c[1]}" for c in EXTERNAL_CASES])
def test_external_matches_nvidia(real, folder, name, outcome):
    """Where NVIDIA's 2025.3 scripts gave a CSV, nsysql's is the same text (NVIDIA's was written with CRLF line ends);
    where they gave no rows, so does nsysql; where they lacked NVTX or OS runtime data, nsysql says so in one line.
    Where they lacked an ENUM_* table (every copy report of these exports), nsysql labels through its ENUM shims."""
    ex = real[folder]
    rc, message = outcome
    golden = EXTERNAL / folder / f"nsys-stats_{name}.csv"
    if rc == 0 and golden.exists():
        theirs = golden.read_bytes().decode().replace("\r\n", "\n")
        mine = _mine(ex, name)
        assert list(csv.reader(io.StringIO(mine))) == list(csv.reader(io.StringIO(theirs)))
        assert mine == theirs
    elif rc == 0:  # no rows; NVIDIA kept no file
        df = ex.analyze(name) if name in rules.names() else ex.report(name)
        assert df.height == 0
    elif "ENUM_CUDA" in message:
        out = _mine(ex, name)
        assert "Unknown" not in out and "[CUDA memcpy Unknown]" not in out
    else:
        table = {"NV Tools Extension (NVTX) data": "NVTX_EVENTS", "OS Runtime trace data": "OSRT_API"}
        raw = next(t for words, t in table.items() if words in message)
        with pytest.raises(MissingDataError, match=rf"^export\.sqlite\.xz has no {raw}, which [\w.]+ needs"):
            _mine(ex, name)


@needs_external
def test_cli_csv_is_nvidias_text(real):
    for folder in ("dlprof_2070s", "mordred_old"):
        for golden in sorted((EXTERNAL / folder).glob("nsys-stats_*.csv")):
            name = golden.name.removeprefix("nsys-stats_").removesuffix(".csv")
            command = "analyze" if name in rules.names() else "report"
            res = runner.invoke(app, [command, name, str(real[folder].path), "-f", "csv",
                                      "--cache-dir", str(real[folder].cache_path.parent)])
            assert res.exit_code == 0, res.output
            assert res.stdout == golden.read_bytes().decode().replace("\r\n", "\n"), (folder, name)


@needs_external
def test_external_commands_work_or_say_what_is_missing(real):
    for folder, ex in real.items():
        for command in (["summarize"], ["overview"], ["findings"], ["kernels"], ["layers"], ["steps"], ["gaps"],
                        ["memcpy"], ["overhead"], ["utilization"], ["efficiency"]):
            res = runner.invoke(app, command + [str(ex.path), "--cache-dir", str(ex.cache_path.parent)])
            if res.exit_code == 1:
                assert re.fullmatch(r"Error: export\.sqlite\.xz has no (NVTX_EVENTS|kernels inside PyTorch op markers)"
                                    r"[^\n]*\n", res.output), (folder, command, res.output)
                assert "NVTX_EVENTS" not in res.output or folder == "mordred_old"
            else:
                assert res.exit_code == 0, (folder, command, res.output)
