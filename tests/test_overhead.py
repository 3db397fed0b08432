"""nsysql overhead: per launch API / queue / kernel time, per range, kernel and thread.

Checked against hand-worked numbers on a synthetic export (scripts/make_synthetic.py,
launch_overhead_copies_gaps) and against a brute-force walk of the real exports' raw rows
(tests/plainwalk.py PlainTimeline), never against nsysql's own output.
"""
from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import nsysql
from nsysql.cli.app import app
from nsysql.errors import MissingDataError, NsysqlError

from conftest import make_synthetic

STATS = ["launches", "gpu_busy_ns", "kernel_ns", "mean_api_ns", "median_api_ns", "p95_api_ns", "mean_queue_ns",
         "median_queue_ns", "p95_queue_ns", "shorter_than_launch"]


@pytest.fixture(scope="module")
def cases(plain_timelines):
    return plain_timelines("kernel")


def same(got: dict, want: dict, keys, where):
    for k in keys:
        if isinstance(want[k], float):
            assert got[k] == pytest.approx(want[k], rel=1e-9, abs=1e-6), (where, k)
        else:
            assert got[k] == want[k], (where, k, got[k], want[k])


# -- synthetic: numbers worked out by hand in the case's docstring ---------------------------------
def test_by_thread_synthetic(ocg_export):
    rows = {r["tid"]: r for r in ocg_export.overhead(by="thread", every=True).to_dicts()}
    assert list(rows) == [100, 101, 102]  # most launches first
    main = rows[100]
    # 5 launches of 100 ns each; kernels 50, 1000, 50, 100, 100 ns; queues 50, 0, 50, 100, 100
    assert (main["launches"], main["cpu_ns"], main["kernel_ns"], main["gpu_busy_ns"]) == (5, 500, 1300, 1300)
    assert (main["median_api_ns"], main["p95_api_ns"], main["mean_queue_ns"]) == (100.0, 100.0, 60.0)
    assert (main["median_queue_ns"], main["p95_queue_ns"]) == (50.0, 100.0)
    assert main["shorter_than_launch"] == 2  # the two 50 ns k1 (k3 lasts exactly as long as its call)
    # launching from 300 to 8100; device 0 busy 2000 ns of it
    assert (main["launch_span_ns"], main["gpu_idle_ns"], main["launch_bound"]) == (7800, 5800, True)
    assert rows[101]["thread_name"] == "pt_autograd_0" and rows[101]["launch_bound"] is False  # one launch
    # the loader's kernel runs on device 1, idle during its 10 ns launch
    assert (rows[102]["gpu_idle_ns"], rows[102]["median_queue_ns"]) == (10, 490.0)


def test_by_range_synthetic(ocg_export):
    df = ocg_export.overhead(by="range", every=True)
    assert [(r["tid"], r["range_path"]) for r in df.to_dicts()] == [
        (100, "step"), (100, "step/fwd"), (100, "step/opt"),
        (101, "(outside user ranges)"), (102, "(outside user ranges)")]  # the op marker makes no row
    rows = {r["range_path"]: r for r in df.filter(df["tid"] == 100).to_dicts()}
    step, fwd, opt = rows["step"], rows["step/fwd"], rows["step/opt"]
    assert (step["depth"], step["instances"], step["launches"], step["cpu_ns"]) == (0, 1, 5, 10000)
    # [0, 10000] holds all 2700 ns of device 0's busy time; launches span 300..8100
    assert (step["gpu_idle_ns"], step["launch_span_ns"], step["launch_bound"]) == (7300, 7800, True)
    # fwd: k1 and k2 inside the op marker roll up into fwd; idle 2300 of 3900 ns, but it launched only
    # from 300 to 2100 (1800 ns < half of 3900): not launch-bound
    assert (fwd["launches"], fwd["cpu_ns"], fwd["gpu_busy_ns"]) == (3, 3900, 1100)
    assert (fwd["gpu_idle_ns"], fwd["launch_span_ns"], fwd["launch_bound"]) == (2300, 1800, False)
    assert fwd["mean_queue_ns"] == pytest.approx(100 / 3) and fwd["shorter_than_launch"] == 2
    # opt: two launches 5100..8100, busy 200 of 4000 ns
    assert (opt["launches"], opt["gpu_idle_ns"], opt["launch_span_ns"], opt["launch_bound"]) == (2, 3800, 3000, True)
    outside = df.filter(df["tid"] == 101).to_dicts()[0]
    assert (outside["launches"], outside["gpu_busy_ns"], outside["depth"], outside["cpu_ns"]) == (1, 500, None, None)
    assert outside["launch_bound"] is None


def test_by_kernel_synthetic(ocg_export):
    rows = {r["kernel_name"]: r for r in ocg_export.overhead(by="kernel", every=True).to_dicts()}
    assert (rows["k1"]["launches"], rows["k1"]["cpu_ns"], rows["k1"]["gpu_busy_ns"]) == (2, 200, 100)
    assert rows["k1"]["launch_bound"] is False  # busy 100 is exactly half of 200, not less
    assert rows["k1"]["shorter_than_launch"] == 2 and rows["k3"]["shorter_than_launch"] == 0
    assert rows["k_dev1"]["median_queue_ns"] == 490.0


def test_graph_launch_counts_the_call_once_in_cpu_time(tmp_path):
    # graph_launch: one cudaGraphLaunch [200, 260] runs g1, g2, g3; cudaLaunchKernel [300, 320] runs k_single
    path = make_synthetic().graph_launch().write(tmp_path / "graph.sqlite")
    with nsysql.open(path, cache_dir=tmp_path / "cache") as ex:
        thread = ex.overhead(by="thread", every=True).to_dicts()[0]
        assert (thread["launches"], thread["cpu_ns"]) == (4, 60 + 20)
        assert thread["mean_api_ns"] == pytest.approx((3 * 60 + 20) / 4)


# -- real exports against a brute-force walk ---------------------------------------------------------
def test_by_thread_matches_brute_force(cases):
    for ident, ex, plain in cases:
        want = plain.overhead_by_thread()
        got = {(r["pid"], r["tid"]): r for r in ex.overhead(by="thread", every=True).to_dicts()}
        assert set(got) == set(want), ident
        for key, row in want.items():
            same(got[key], row, STATS + ["cpu_ns", "launch_span_ns", "gpu_idle_ns", "launch_bound", "thread_name"],
                 (ident, key))


def test_by_kernel_matches_brute_force(cases):
    for ident, ex, plain in cases:
        want = plain.overhead_by_kernel()
        got = {r["kernel_name"]: r for r in ex.overhead(by="kernel", every=True).to_dicts()}
        assert set(got) == set(want), ident
        for key, row in want.items():
            same(got[key], row, STATS + ["cpu_ns", "launch_bound"], (ident, key))


def test_by_range_matches_brute_force(cases):
    for ident, ex, plain in cases:
        if not ex.has("nvtx_range"):
            continue
        want = plain.overhead_by_range()
        got = {(r["pid"], r["tid"], r["range_path"]): r for r in ex.overhead(by="range", every=True).to_dicts()}
        assert set(got) == set(want), ident
        for key, row in want.items():
            same(got[key], row, STATS + ["instances", "cpu_ns", "gpu_idle_ns", "launch_span_ns", "launch_bound",
                                         "depth"], (ident, key))
        assert not any("op_id = " in key[2] for key in got), "op markers roll up into user ranges"


def test_launches_add_up_across_views(cases):
    for ident, ex, plain in cases:
        total = len(plain.launches())
        assert ex.overhead(by="thread", every=True)["launches"].sum() == total, ident
        assert ex.overhead(by="kernel", every=True)["launches"].sum() == total, ident
        # per kernel row: a CUDA graph traced at graph level has none (overhead_by_* count its launch)
        assert ex.launch_overhead().height == sum(o["kind"] == "kernel" for o in plain.launches()), ident


def test_launches_of_the_analysed_steps_by_default(cases, export_files):
    """Without --all only the launches whose call starts inside an analysed step: on cnn-dataloader-train (8
    profiled steps, all analysed) the launches inside the raw profiled_step ranges of the launching process."""
    import sqlite3
    found = {ident: (ex, plain) for ident, ex, plain in cases}
    if "cnn-dataloader-train" not in found:
        pytest.skip("fixtures/cnn-dataloader-train is not in this checkout")
    ex, plain = found["cnn-dataloader-train"]
    con = sqlite3.connect(f"file:{export_files['cnn-dataloader-train']}?mode=ro", uri=True)
    names = dict(con.execute("SELECT id, value FROM StringIds"))
    steps = [(s, e, (g >> 24) & 0xFFFFFF) for s, e, t, i, g in con.execute(
        "SELECT start, end, text, textId, globalTid FROM NVTX_EVENTS WHERE eventType = 59 AND end IS NOT NULL")
        if (t if t is not None else names.get(i)) == "profiled_step"]
    con.close()
    assert ex.run("analysis.steady_steps")["analysed"].all()
    inside = [o for o in plain.launches()
              if any(pid == o["call"]["pid"] and s <= o["call"]["start"] <= e for s, e, pid in steps)]
    for by in ("thread", "kernel"):
        assert ex.overhead(by=by)["launches"].sum() == len(inside) < len(plain.launches()), by
    paths = set(ex.overhead(by="range")["range_path"])  # a launch counts in each range around it: no sum here
    assert paths and all(p.startswith("profiled_step") or p == "(outside user ranges)" for p in paths), paths
    assert any(p.startswith("warmup") for p in ex.overhead(by="range", every=True)["range_path"])


# -- API and CLI -------------------------------------------------------------------------------------
def test_unknown_grouping_is_a_one_line_error(ocg_export):
    with pytest.raises(NsysqlError, match="range, kernel, thread"):
        ocg_export.overhead(by="layer")


def test_by_range_needs_nvtx(tmp_path):
    b = make_synthetic().one_launch()
    with nsysql.open(b.write(tmp_path / "no_nvtx.sqlite"), cache_dir=tmp_path / "cache") as ex:
        assert ex.overhead(by="thread", every=True)["launches"].to_list() == [1]
        with pytest.raises(MissingDataError, match="NVTX_EVENTS"):
            ex.overhead(by="range", every=True)


@pytest.mark.parametrize("by", ["range", "kernel", "thread"])
def test_cli_json(ocg_export, by, tmp_path):
    out = tmp_path / "o.json"
    res = CliRunner().invoke(app, ["overhead", str(ocg_export.path), "--by", by, "--format", "json", "-o", str(out),
                                   "--cache-dir", str(tmp_path / "cache")])
    assert res.exit_code == 0, res.output
    rows = json.loads(out.read_text())
    outermost = [r for r in rows if r.get("depth", 0) in (0, None)]  # range rows nest; the outermost add up
    assert sum(r["launches"] for r in outermost) == 7


def test_cli_csv_and_bad_option(ocg_export, tmp_path):
    runner = CliRunner()
    res = runner.invoke(app, ["overhead", str(ocg_export.path), "--by", "thread", "--format", "csv",
                              "--cache-dir", str(tmp_path / "cache")])
    assert res.exit_code == 0, res.output
    header, first = res.output.splitlines()[:2]
    assert header.split(",")[:4] == ["pid", "tid", "thread_name", "launches"]
    assert first.startswith("100,100,python3,5,500,")
    res = runner.invoke(app, ["overhead", str(ocg_export.path), "--by", "layer"])
    assert res.exit_code == 1 and "layer" in res.output


def test_busy_time_is_a_union_when_kernels_overlap(tmp_path):
    # three streams: k [100, 500], k [200, 300] inside it, k [400, 700] overlapping it -> union 600, sum 800
    module = make_synthetic()
    b = module.SyntheticExport().thread(1, 1, "python3")
    b.range("step", 0, 1000, tid=1, pid=1)
    for corr, (start, end, stream) in enumerate([(100, 500, 7), (200, 300, 8), (400, 700, 9)], start=1):
        b.launch(start=10 * corr, end=10 * corr + 5, tid=1, pid=1, correlation_id=corr, kernel=("k", start, end, stream, 0))
    with nsysql.open(b.write(tmp_path / "overlap.sqlite"), cache_dir=tmp_path / "cache") as ex:
        for by in ("range", "kernel", "thread"):
            row = ex.overhead(by=by).to_dicts()[0]
            assert (row["gpu_busy_ns"], row["kernel_ns"]) == (600, 800), by
        assert ex.overhead(by="range", every=True).to_dicts()[0]["gpu_idle_ns"] == 1000 - 600
