"""One clock: every time shown to a person counts from the capture's first event (the earliest NVTX range, CUDA API
call or GPU op), read from the events themselves and never from ANALYSIS_DETAILS, whose start/stop can lie on
another clock; the `_ns` columns keep NVIDIA's timestamps. Checked against a plain read of the raw SQLite rows."""
from __future__ import annotations

import lzma
import re
import shutil
import sqlite3

import pytest
from typer.testing import CliRunner

import nsysql
from nsysql.cli.app import app
from nsysql.present import plot

from conftest import FIXTURES, make_synthetic
from test_old_schemas import EXTERNAL

runner = CliRunner()
NVTX_RANGES = "eventType IN (59, 60, 70, 71)"
GPU_TABLES = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
              "CUPTI_ACTIVITY_KIND_GRAPH_TRACE")


def plain_events(path) -> dict:
    """First start and last end of the NVTX ranges, CUDA API calls and GPU ops, of the OS runtime calls, and the
    ANALYSIS_DETAILS window, from the raw rows (None where the export has none)."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    starts, ends = [], []
    for table, where in [("NVTX_EVENTS", NVTX_RANGES), ("CUPTI_ACTIVITY_KIND_RUNTIME", "1")] + \
                        [(t, "1") for t in GPU_TABLES]:
        if table in tables:
            s, e = db.execute(f"SELECT MIN(start), MAX(end) FROM {table} WHERE {where}").fetchone()
            starts += [s] if s is not None else []
            ends += [e] if e is not None else []
    osrt = db.execute("SELECT MIN(start), MAX(end) FROM OSRT_API").fetchone() if "OSRT_API" in tables else (None,) * 2
    details = (db.execute("SELECT MIN(startTime), MAX(stopTime) FROM ANALYSIS_DETAILS").fetchone()
               if "ANALYSIS_DETAILS" in tables else (None, None))
    return dict(first=min(starts) if starts else None, last=max(ends) if ends else None, osrt_first=osrt[0],
                osrt_last=osrt[1], details_start=details[0], details_stop=details[1])


def window(ex) -> dict:
    return ex.run("analysis._plot_window", start_ms=None, end_ms=None).row(0, named=True)


def test_the_origin_is_the_first_event_of_every_fixture(export_files, opened):
    """Our own captures start ANALYSIS_DETAILS seconds before their first CUDA call, and their OS runtime calls
    before it (from the process's launch): neither is the zero."""
    for ident, path in export_files.items():
        want, got = plain_events(path), window(opened[ident])
        assert (got["origin_ns"], got["from_ns"], got["to_ns"]) == (want["first"], want["first"], want["last"]), ident
        assert want["details_start"] < want["first"] and want["osrt_first"] < want["first"], ident


def test_tables_count_from_the_first_event(export_files, cache_dir):
    """`nsysql steps`: the table's start is (start_ns - first event) / 1e6, and the csv keeps NVIDIA's start_ns."""
    path = export_files["gpt-tiny-train-fp32"]
    first = plain_events(path)["first"]
    common = [str(path), "--cache-dir", str(cache_dir)]
    csv = runner.invoke(app, ["steps", *common, "-f", "csv"]).stdout.splitlines()
    header, row = csv[0].split(","), dict(zip(csv[0].split(","), csv[1].split(",")))
    assert "start_ns" in header
    table = runner.invoke(app, ["steps", *common], env={"COLUMNS": "200"}).stdout
    assert f"{(int(row['start_ns']) - first) / 1e6:,.3f}" in table.split()
    assert re.search(r"start, end(, gpu_end)?: ms since the capture's first event", table)


def test_the_2022_4_export_on_two_clocks(tmp_path):
    """Nsight Systems 2022.4 wrote ANALYSIS_DETAILS 0.23 s after every event of its capture (`fixtures/
    cpu-nvtx-osrt-nsys2022.4`): the timeline's window is the events', so it draws them."""
    with nsysql.open(FIXTURES / "cpu-nvtx-osrt-nsys2022.4" / "export.sqlite.xz", cache_dir=tmp_path) as ex:
        raw = tmp_path / "cpu.sqlite"
        with lzma.open(FIXTURES / "cpu-nvtx-osrt-nsys2022.4" / "export.sqlite.xz") as src, raw.open("wb") as dst:
            shutil.copyfileobj(src, dst)
        want, got = plain_events(raw), window(ex)
        assert want["last"] < want["details_start"]  # every NVTX range ends before ANALYSIS_DETAILS starts
        assert (got["origin_ns"], got["to_ns"]) == (want["first"], want["last"])
        out = plot.timeline(ex, tmp_path / "t.png")
        assert out.read_bytes().startswith(b"\x89PNG")


@pytest.mark.skipif(not (EXTERNAL / "dlprof_2070s" / "export.sqlite.xz").exists(),
                    reason="../shared/samples/external is not here")
def test_an_external_export_whose_window_starts_long_before_its_events(tmp_path):
    """A DLProf capture of Nsight Systems 2022.1 (another project's): ANALYSIS_DETAILS starts 487 ms before the first
    event. Times count from the first event, gaps and the timeline included; csv keeps NVIDIA's timestamps."""
    raw = tmp_path / "dlprof.sqlite"
    with lzma.open(EXTERNAL / "dlprof_2070s" / "export.sqlite.xz") as src, raw.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    want = plain_events(raw)
    assert want["first"] - want["details_start"] > 400_000_000
    with nsysql.open(raw, cache_dir=tmp_path / "cache") as ex:
        got = window(ex)
        assert (got["origin_ns"], got["to_ns"]) == (want["first"], want["last"])
        gaps = ex.gaps(min_gap_us=100, calls=False)
    common = [str(raw), "--cache-dir", str(tmp_path / "cache")]
    table = runner.invoke(app, ["gaps", *common, "--top", "1"], env={"COLUMNS": "200"}).stdout
    first_gap = gaps.sort("gap_ns", descending=True).row(0, named=True)
    assert f"{(first_gap['gap_start_ns'] - want['first']) / 1e6:,.3f}" in table.split()
    csv = runner.invoke(app, ["gaps", *common, "--top", "1", "-f", "csv"]).stdout.splitlines()
    assert str(first_gap["gap_start_ns"]) in csv[1].split(",")  # NVIDIA's own clock
    res = runner.invoke(app, ["plot", "timeline", *common, "-o", str(tmp_path / "t.png")])
    assert res.exit_code == 0, res.output


@pytest.mark.skipif(not (EXTERNAL / "mordred_old" / "export.sqlite.xz").exists(),
                    reason="../shared/samples/external is not here")
def test_an_external_export_without_analysis_details(tmp_path):
    """A 2021 export without ANALYSIS_DETAILS or NVTX: the first CUDA API call is the zero, not its OS runtime
    calls of the process's start-up (52 ms earlier)."""
    raw = tmp_path / "mordred.sqlite"
    with lzma.open(EXTERNAL / "mordred_old" / "export.sqlite.xz") as src, raw.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    want = plain_events(raw)
    assert want["details_start"] is None and want["osrt_first"] < want["first"]
    with nsysql.open(raw, cache_dir=tmp_path / "cache") as ex:
        got = window(ex)
    assert (got["origin_ns"], got["to_ns"]) == (want["first"], want["last"])


def test_os_runtime_calls_alone_make_the_window(tmp_path):
    """A CPU program traced with --trace=osrt only: its OS runtime calls are the events."""
    b = make_synthetic().SyntheticExport().thread(100, 100, "app")
    b.osrt("poll", 5_000, 9_000, tid=100, pid=100)
    b.osrt("read", 2_000, 3_000, tid=100, pid=100)
    path = b.write(tmp_path / "osrt.sqlite")
    with nsysql.open(path, cache_dir=tmp_path / "cache") as ex:
        got = window(ex)
    assert (got["origin_ns"], got["from_ns"], got["to_ns"]) == (2_000, 2_000, 9_000)
