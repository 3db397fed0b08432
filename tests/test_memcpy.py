"""nsysql memcpy: copies and memsets per kind, range and stream, pageable vs pinned, synchronous.

Checked against hand-worked numbers on a synthetic export (scripts/make_synthetic.py,
launch_overhead_copies_gaps), NVIDIA's own cuda_gpu_mem_* CSVs and a brute-force walk of the
real exports' raw rows (tests/plainwalk.py PlainTimeline).
"""
from __future__ import annotations

import csv

import pytest
from typer.testing import CliRunner

import nsysql
from nsysql.cli.app import app
from nsysql.errors import MissingDataError, NsysqlError

from conftest import golden_exports, make_synthetic

TOTALS = ["count", "total_bytes", "total_ns", "sync_count", "sync_api_ns"]


@pytest.fixture(scope="module")
def cases(plain_timelines):
    return plain_timelines("memcpy", "memset")


# -- synthetic -----------------------------------------------------------------------------------------
def test_by_kind_synthetic(ocg_export):
    rows = {(r["copy_kind"], r["src_kind"], r["dst_kind"]): r for r in ocg_export.memcpy().to_dicts()}
    assert set(rows) == {("Host-to-Device", "Pageable", "Device"), ("Host-to-Device", "Pinned", "Device"),
                         ("Device-to-Host", "Device", "Pageable"), ("Memset", "-", "Device")}
    pageable = rows[("Host-to-Device", "Pageable", "Device")]
    # cudaMemcpy (blocking) [4100, 4650]; 1,000,000 bytes in 300 ns
    assert (pageable["host_memory"], pageable["total_ns"], pageable["sync_count"], pageable["sync_api_ns"]) == \
           ("Pageable", 300, 1, 550)
    assert pageable["gb_per_s"] == pytest.approx(1e6 / 300)
    pinned = rows[("Host-to-Device", "Pinned", "Device")]
    assert (pinned["host_memory"], pinned["sync_count"], pinned["gb_per_s"]) == ("Pinned", 0, 4000.0)
    # cudaMemcpyAsync [9850, 9990] returned after its copy [9900, 9950] ended: synchronous
    dtoh = rows[("Device-to-Host", "Device", "Pageable")]
    assert (dtoh["host_memory"], dtoh["sync_count"], dtoh["sync_api_ns"]) == ("Pageable", 1, 140)
    memset = rows[("Memset", "-", "Device")]
    assert (memset["host_memory"], memset["total_bytes"], memset["sync_count"]) == (None, 4096, 0)


def test_by_range_synthetic(ocg_export):
    rows = [(r["range_path"], r["copy_kind"], r["src_kind"], r["count"]) for r in ocg_export.memcpy(by="range").to_dicts()]
    # the pinned copy's call sits in the aten::copy_ op marker inside opt: it counts for step/opt
    assert sorted(rows) == [("step", "Device-to-Host", "Device", 1), ("step", "Host-to-Device", "Pageable", 1),
                            ("step", "Memset", "-", 1), ("step/opt", "Host-to-Device", "Pinned", 1)]


def test_by_stream_synthetic(ocg_export):
    rows = {(r["stream_id"], r["copy_kind"]): r["count"] for r in ocg_export.memcpy(by="stream").to_dicts()}
    assert rows == {(7, "Host-to-Device"): 1, (7, "Device-to-Host"): 1, (7, "Memset"): 1, (14, "Host-to-Device"): 1}


# -- real exports ----------------------------------------------------------------------------------------
def test_totals_match_nvidia_mem_reports(cases):
    csv_dirs = {ident: d for ident, _, d in golden_exports()}
    checked = 0
    for ident, ex, _ in cases:
        time_csv = csv_dirs[ident] / "nsys-stats_cuda_gpu_mem_time_sum.csv"
        size_csv = csv_dirs[ident] / "nsys-stats_cuda_gpu_mem_size_sum.csv"
        if not time_csv.exists():
            continue
        df = ex.memcpy()
        ours = {}
        for r in df.to_dicts():
            op = "[CUDA memset]" if r["copy_kind"] == "Memset" else f"[CUDA memcpy {r['copy_kind']}]"
            got = ours.setdefault(op, [0, 0, 0])
            got[0] += r["count"]
            got[1] += r["total_ns"]
            got[2] += r["total_bytes"]
        with time_csv.open() as f:
            nvidia_time = {row["Operation"]: row for row in csv.DictReader(f)}
        with size_csv.open() as f:
            nvidia_size = {row["Operation"]: row for row in csv.DictReader(f)}
        assert set(ours) == set(nvidia_time), ident
        for op, (count, total_ns, total_bytes) in ours.items():
            assert count == int(nvidia_time[op]["Count"]), (ident, op)
            assert total_ns == int(nvidia_time[op]["Total Time (ns)"]), (ident, op)
            assert f"{total_bytes / 1e6:.3f}" == nvidia_size[op]["Total (MB)"], (ident, op)
        checked += 1
    assert checked


def _compare(got_rows, want, keys, ident):
    got = {tuple(r[k] for k in keys): r for r in got_rows}
    assert set(got) == set(want), ident
    for key, row in want.items():
        for col in TOTALS:
            assert got[key][col] == row[col], (ident, key, col)


def test_by_kind_matches_brute_force(cases):
    for ident, ex, plain in cases:
        want = plain.copies(lambda o: (o["copy_kind"], o["src"], o["dst"], plain.host_memory(o)))  # noqa: B023
        _compare(ex.memcpy().to_dicts(), want, ["copy_kind", "src_kind", "dst_kind", "host_memory"], ident)


def test_by_stream_matches_brute_force(cases):
    for ident, ex, plain in cases:
        want = plain.copies(lambda o: (o["device"], o["stream"], o["copy_kind"], o["src"], o["dst"]))
        _compare(ex.memcpy(by="stream").to_dicts(), want,
                 ["device_id", "stream_id", "copy_kind", "src_kind", "dst_kind"], ident)


def test_by_range_matches_brute_force(cases):
    for ident, ex, plain in cases:
        if not ex.has("nvtx_range"):
            continue
        want = plain.copies(lambda o: (plain.copy_path(o), o["copy_kind"], o["src"], o["dst"]))  # noqa: B023
        _compare(ex.memcpy(by="range").to_dicts(), want, ["range_path", "copy_kind", "src_kind", "dst_kind"], ident)


# -- API and CLI -------------------------------------------------------------------------------------------
def test_unknown_grouping(ocg_export):
    with pytest.raises(NsysqlError, match="kind, range, stream"):
        ocg_export.memcpy(by="device")


def test_no_copies_is_a_one_line_error(tmp_path):
    b = make_synthetic().one_launch()
    path = b.write(tmp_path / "no_copies.sqlite")
    with nsysql.open(path, cache_dir=tmp_path / "cache") as ex, pytest.raises(MissingDataError):
        ex.memcpy()
    res = CliRunner().invoke(app, ["memcpy", str(path), "--cache-dir", str(tmp_path / "cache")])
    assert res.exit_code == 1 and res.output.startswith("Error: ") and len(res.output.strip().splitlines()) == 1


@pytest.mark.parametrize("by", ["kind", "range", "stream"])
def test_cli_markdown(ocg_export, by, tmp_path):
    out = tmp_path / "m.md"
    res = CliRunner().invoke(app, ["memcpy", str(ocg_export.path), "--by", by, "--format", "markdown", "-o", str(out),
                                   "--cache-dir", str(tmp_path / "cache")])
    assert res.exit_code == 0, res.output
    lines = out.read_text().splitlines()
    assert len(lines) == 2 + 4 and "gb_per_s" in lines[0] and "sync_count" in lines[0]
