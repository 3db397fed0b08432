"""CUDA graphs traced at graph level (nsys's default `--cuda-graph-trace=graph`): each replay is one
CUPTI_ACTIVITY_KIND_GRAPH_TRACE row and its kernels have no rows. nsysql counts those rows as GPU ops of kind
`graph`. Checked on our own captures (fixtures/cuda-graphs-*, scripts/capture_cuda_graphs.py) against a plain walk
of the raw SQLite rows that shares no code or SQL with nsysql, and against the same program traced at node level."""
from __future__ import annotations

import csv
import io
import lzma
import re
import shutil
import sqlite3
from collections import defaultdict
from pathlib import Path

import pytest

import nsysql
from nsysql.errors import MissingDataError, cli_text
from nsysql.present import plot
from nsysql.present.render import to_csv
from nsysql.sql import catalog

from conftest import FIXTURES, unxz
from plainwalk import pid_of, read_export, union_length

GRAPH, NODE, COMPILE, NONVTX = "cuda-graphs-graph", "cuda-graphs-node", "cuda-graphs-compile", "cuda-graphs-nonvtx"


class Raw:
    """The raw rows: GPU ops (graph rows included), CUDA calls, NVTX push/pop ranges; sqlite3 and loops only."""

    def __init__(self, path: Path):
        db, tables, strings = read_export(path)
        self.calls = {}
        for s, e, gtid, corr, name in db.execute(
                "SELECT start, end, globalTid, correlationId, nameId FROM CUPTI_ACTIVITY_KIND_RUNTIME"):
            self.calls[(pid_of(gtid), corr)] = dict(start=s, end=e, gtid=gtid, name=strings[name])
        self.ops = []  # dict(kind, id, start, end, device, pid, call)
        for kind, table in (("kernel", "CUPTI_ACTIVITY_KIND_KERNEL"), ("memcpy", "CUPTI_ACTIVITY_KIND_MEMCPY"),
                            ("memset", "CUPTI_ACTIVITY_KIND_MEMSET"), ("graph", "CUPTI_ACTIVITY_KIND_GRAPH_TRACE")):
            if table in tables:
                for rowid, s, e, dev, gpid, corr in db.execute(
                        f"SELECT rowid, start, end, deviceId, globalPid, correlationId FROM {table}"):
                    pid = pid_of(gpid)
                    self.ops.append(dict(kind=kind, id=rowid, start=s, end=e, device=dev, pid=pid,
                                         call=self.calls.get((pid, corr))))
        self.graph_ids = {}
        if "CUPTI_ACTIVITY_KIND_GRAPH_TRACE" in tables:
            self.graph_ids = dict(db.execute("SELECT rowid, graphId FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE"))
        self.ranges = []  # dict(text, start, end, gtid)
        if "NVTX_EVENTS" in tables:
            for s, e, gtid, text in db.execute(
                    "SELECT start, end, globalTid, text FROM NVTX_EVENTS WHERE eventType = 59 AND end IS NOT NULL"):
                self.ranges.append(dict(text=text, start=s, end=e, gtid=gtid))

    def graphs(self):
        return [o for o in self.ops if o["kind"] == "graph"]

    def innermost(self, call):
        """The innermost push/pop range around a CUDA call on its own thread."""
        around = [r for r in self.ranges if r["gtid"] == call["gtid"] and r["start"] <= call["start"]
                  and call["end"] <= r["end"]]
        return min(around, key=lambda r: r["end"] - r["start"]) if around else None


@pytest.fixture(scope="module")
def raw(export_files):
    return {ident: Raw(export_files[ident]) for ident in (GRAPH, NODE, COMPILE)}


@pytest.fixture(scope="module")
def nonvtx(tmp_path_factory):
    directory = tmp_path_factory.mktemp("nonvtx")
    path = directory / "nonvtx.sqlite"
    unxz(FIXTURES / NONVTX / "export.sqlite.xz", path)
    with nsysql.open(path, cache_dir=directory / "cache") as ex:
        yield ex, path


def test_graph_rows_are_gpu_ops_launched_by_cuda_graph_launch(opened, raw):
    for ident in (GRAPH, COMPILE):
        ex, plain = opened[ident], raw[ident]
        got = ex.sql("SELECT o.op_id, o.start_ns, o.end_ns, o.device_id, o.op_name, r.api_name "
                     "FROM gpu_op AS o LEFT JOIN runtime AS r USING (runtime_id) WHERE o.op_kind = 'graph' "
                     "ORDER BY o.op_id").rows()
        expected = [(o["id"], o["start"], o["end"], o["device"], f"[CUDA graph {plain.graph_ids[o['id']]}]",
                     o["call"]["name"]) for o in sorted(plain.graphs(), key=lambda o: o["id"])]
        assert got == expected and expected, ident
        assert {e[5] for e in expected} == {"cudaGraphLaunch_v10000"}
        assert ex.sql("SELECT COUNT(*) AS n FROM graph_trace")["n"][0] == len(expected)
    assert opened[NODE].sql("SELECT COUNT(*) AS n FROM gpu_op WHERE op_kind = 'graph'")["n"][0] == 0
    assert len(raw[GRAPH].graphs()) == 14  # 2 graphs x (2 warm-up + 5 profiled replays)


def test_busy_time_and_utilization_count_graphs(opened, raw):
    for ident in (GRAPH, NODE, COMPILE):
        ex, plain = opened[ident], raw[ident]
        ops = plain.ops
        busy = union_length([(o["start"], o["end"]) for o in ops])
        totals = ex.run("analysis.export_totals").row(0, named=True)
        assert totals["gpu_busy_ns"] == busy, ident
        util = ex.run("analysis.gpu_utilization").row(0, named=True)
        assert util["busy_ns"] == busy, ident
        without = union_length([(o["start"], o["end"]) for o in ops if o["kind"] != "graph"])
        if ident != NODE:  # the graphs are real GPU time that kernel rows alone miss
            assert busy - without > 0.5 * sum(o["end"] - o["start"] for o in plain.graphs()), ident


def test_gaps_never_cover_a_running_graph(opened, raw):
    for ident in (GRAPH, COMPILE):
        gaps = opened[ident].gaps(min_gap_us=0, calls=False)
        graphs = raw[ident].graphs()
        assert gaps.height
        for g in gaps.iter_rows(named=True):
            start, end = g["gap_start_ns"], g["gap_start_ns"] + g["gap_ns"]
            assert not [o for o in graphs if o["start"] < end and o["end"] > start], (ident, g)


def test_graphs_belong_to_the_range_around_their_launch(opened, raw):
    """Attribution and layers: a replay is charged to the innermost user range around its cudaGraphLaunch."""
    ex, plain = opened[GRAPH], raw[GRAPH]
    expected = defaultdict(int)
    for o in plain.graphs():
        r = plain.innermost(o["call"])
        expected[r["text"] if r else "?"] += o["end"] - o["start"]
    assert set(expected) == {"warmup", "train_graph", "eval_graph"}
    labels = ex.sql("SELECT l.layer, o.end_ns - o.start_ns AS d FROM gpu_op_label AS l "
                    "JOIN gpu_op AS o USING (op_kind, op_id) WHERE op_kind = 'graph'")
    got = defaultdict(int)
    for layer, d in labels.rows():
        got[layer.split("/")[-1]] += d
    assert dict(got) == dict(expected)
    layers = {r["layer"]: r for r in ex.layers(analysed=False).iter_rows(named=True)}
    kernels_by_layer = defaultdict(int)
    for o in plain.ops:
        if o["kind"] == "kernel" and o["call"] is not None and (r := plain.innermost(o["call"])) is not None \
                and r["text"] in ("train_graph", "eval_graph"):
            kernels_by_layer[r["text"]] += o["end"] - o["start"]
    for name in ("train_graph", "eval_graph"):
        assert layers[name]["total_ns"] == expected[name] + kernels_by_layer[name]
    cov = ex.attribution_coverage()
    assert cov["kernel_ns"] == sum(o["end"] - o["start"] for o in plain.ops if o["kind"] in ("kernel", "graph"))


def test_graph_and_node_level_agree_on_the_graph_ranges(opened):
    """The same program traced both ways: each graph range's GPU busy time agrees within a few percent (a graph row
    spans its first node's start to its last node's end, so it is a little longer than its kernels' union)."""
    by_mode = {}
    for ident in (GRAPH, NODE):
        rows = opened[ident].gpu_time_by_range().filter(~nsysql_is_marker()).iter_rows(named=True)
        by_mode[ident] = {r["range_name"]: r["inclusive_busy_ns"] for r in rows}
    for name in (":train_graph", ":eval_graph"):
        graph, node = by_mode[GRAPH][name], by_mode[NODE][name]
        assert node <= graph <= 1.1 * node, (name, graph, node)


def nsysql_is_marker():
    import polars as pl
    return pl.col("is_op_marker")


def test_steps_and_breakdown_count_graphs_as_kernel_time(opened, raw):
    ex, plain = opened[GRAPH], raw[GRAPH]
    steps = ex.steps()
    assert steps.height == 5
    breakdown = {r["step"]: r for r in ex.run("analysis.step_breakdown").iter_rows(named=True)}
    for s in steps.iter_rows(named=True):
        mine = [o for o in plain.ops if o["call"] is not None and o["pid"] == s["pid"]
                and s["start_ns"] <= o["call"]["start"] and o["call"]["end"] <= s["end_ns"]]
        assert sum(o["kind"] == "graph" for o in mine) == 2  # train_graph and eval_graph replays
        assert s["gpu_busy_ns"] == union_length([(o["start"], o["end"]) for o in mine])
        if s["step"] in breakdown:  # kernel category: kernels and graphs of the process, clipped to the step
            clipped = [(max(o["start"], s["start_ns"]), min(o["end"], s["end_ns"])) for o in plain.ops
                       if o["kind"] in ("kernel", "graph") and o["pid"] == s["pid"]
                       and o["start"] < s["end_ns"] and o["end"] > s["start_ns"]]
            assert breakdown[s["step"]]["kernel_ns"] == union_length(clipped)


def test_overhead_counts_graph_launches(opened, raw):
    ex, plain = opened[GRAPH], raw[GRAPH]
    rows = {r["kernel_name"]: r for r in ex.overhead(by="kernel", every=True).iter_rows(named=True)}
    for graph_id in set(plain.graph_ids.values()):
        replays = [o for o in plain.graphs() if plain.graph_ids[o["id"]] == graph_id]
        row = rows[f"[CUDA graph {graph_id}]"]
        assert row["launches"] == len(replays) == 7
        assert row["kernel_ns"] == sum(o["end"] - o["start"] for o in replays)
        assert row["cpu_ns"] == sum(o["call"]["end"] - o["call"]["start"] for o in replays)
    threads = ex.overhead(by="thread", every=True)
    assert threads["launches"].sum() == sum(1 for o in plain.ops if o["kind"] in ("kernel", "graph")
                                            and o["call"] is not None)


def test_timeline_draws_graphs(opened, raw, tmp_path):
    ex = opened[GRAPH]
    lo = min(o["start"] for o in raw[GRAPH].ops)
    hi = max(o["end"] for o in raw[GRAPH].ops)
    ops = ex.run("analysis._plot_timeline_ops", from_ns=lo, to_ns=hi)
    assert (ops["op_kind"] == "graph").sum() == 14
    assert plot.timeline(ex, tmp_path / "t.png", step=3).exists()


def test_summary_says_how_to_see_kernels_inside_graphs(opened):
    from nsysql.answers.overview import build
    graph_notes = " ".join(build(opened[GRAPH]).notes)
    assert "14 graph launches of 2 graphs" in graph_notes
    assert "--cuda-graph-trace=node" in graph_notes
    assert "--cuda-graph-trace" not in " ".join(build(opened[NODE]).notes)


def test_nvidia_reports_leave_graph_rows_out(opened):
    # NVIDIA's nvtx_gpu_proj_sum has no train_graph range at graph level (its only GPU op is a graph row);
    # at node level the graph's kernels project onto it. The golden tests compare every cell.
    assert ":train_graph" not in opened[GRAPH].report("nvtx_gpu_proj_sum")["Range"].to_list()
    assert ":train_graph" in opened[NODE].report("nvtx_gpu_proj_sum")["Range"].to_list()


# -- a CUDA program without NVTX ------------------------------------------------------------------
NONVTX_REPORTS = ["cuda_api_sum", "cuda_gpu_kern_sum", "cuda_kern_exec_sum", "cuda_gpu_mem_time_sum",
                  "cuda_gpu_mem_size_sum", "osrt_sum", "cuda_gpu_trace", "cuda_api_trace"]


@pytest.mark.parametrize("name", NONVTX_REPORTS)
def test_nonvtx_reports_match_nvidia(nonvtx, name):
    ex, _ = nonvtx
    q = catalog.get(f"reports.{name}")
    decimals = {c.name: c.decimals for c in q.columns if c.decimals is not None}
    mine = list(csv.reader(io.StringIO(to_csv(ex.report(name), decimals))))
    golden = FIXTURES / NONVTX / f"nsys-stats_{name}.csv"
    text = golden.read_text() if golden.exists() else lzma.open(f"{golden}.xz", "rt").read()
    assert mine == list(csv.reader(io.StringIO(text)))


def test_nonvtx_degrades_gracefully(nonvtx, tmp_path):
    ex, path = nonvtx
    plain = Raw(path)
    assert ex.run("analysis.export_totals")["gpu_busy_ns"][0] == union_length([(o["start"], o["end"])
                                                                               for o in plain.ops])
    assert plot.timeline(ex, tmp_path / "t.png").exists()  # GPU ops alone
    with pytest.raises(MissingDataError) as err:
        ex.overhead()
    assert "--by thread" in cli_text(err.value)
    assert ex.overhead(by="thread")["launches"].sum() > 0
    with pytest.raises(MissingDataError) as err:  # diff's default, per NVTX range, names the option that works
        ex.diff(ex)
    assert "--by kernel" in cli_text(err.value)
    kernels = ex.diff(ex, by="kernel")
    assert kernels["a_count"].sum() == len([o for o in plain.ops if o["kind"] == "kernel"])
    from nsysql.answers.summary import build_summary, render_text
    text = render_text(build_summary(ex, full=True), width=100)
    for absent in ("NVTX range", "PyTorch's autograd thread", "layers by kernel time", "NVTX coverage"):
        assert absent not in text, absent  # sections and sentences that need NVTX ranges
    assert re.search(r"14 graph launches of 2 graphs", text)


# -- several exports: skip and name what cannot answer ---------------------------------------------
def test_several_exports_skip_what_cannot_answer(nonvtx, export_files, tmp_path):
    from typer.testing import CliRunner

    from nsysql.cli.app import app
    _, nonvtx_path = nonvtx
    good = export_files[GRAPH]
    broken = tmp_path / "broken.sqlite"
    broken.write_bytes(good.read_bytes()[:4096])  # a truncated copy: no export nsysql can open
    cache = ["--cache-dir", str(tmp_path / "cache")]
    res = CliRunner().invoke(app, ["steps", str(good), str(nonvtx_path), str(broken), "-f", "csv", *cache])
    assert res.exit_code == 0, res.output
    notes = [line for line in res.output.splitlines() if line.startswith("note: skipped")]
    assert [n.split(":")[1].split()[-1] for n in notes] == ["broken"], notes
    rows = list(csv.DictReader(io.StringIO("\n".join(l for l in res.output.splitlines()
                                                      if not l.startswith("note:")))))
    # the capture without NVTX has steps too: the iterations of its GPU op sequence (docs/steps.md)
    assert {r["export"] for r in rows} == {GRAPH, "nonvtx"} and "pid" in rows[0]
    assert sum(r["export"] == GRAPH for r in rows) == 5
    assert {r["source"] for r in rows if r["export"] == "nonvtx"} == {"kernel-pattern"}
    again = tmp_path / "broken-again.sqlite"
    again.write_bytes(broken.read_bytes())
    res = CliRunner().invoke(app, ["steps", str(again), str(broken), *cache])
    assert res.exit_code == 1 and "Error: every export failed" in res.output, res.output
    res = CliRunner().invoke(app, ["summarize", str(good), str(broken), *cache])
    assert res.exit_code == 0 and "note: skipped broken:" in res.output, res.output


def test_idle_gpus_are_counted_not_listed(export_files, tmp_path):
    """A capture that saw two GPUs and used one (the graph capture with a second TARGET_INFO_GPU row, id 1): only
    the GPU the job used has a row; the summary says one other GPU ran nothing."""
    path = tmp_path / "two_gpus.sqlite"
    shutil.copy(export_files[GRAPH], path)
    db = sqlite3.connect(path)
    db.execute("INSERT INTO TARGET_INFO_GPU SELECT * FROM TARGET_INFO_GPU WHERE id = 0")
    db.execute("UPDATE TARGET_INFO_GPU SET id = 1 WHERE rowid = (SELECT MAX(rowid) FROM TARGET_INFO_GPU)")
    db.commit()
    db.close()
    with nsysql.open(path, cache_dir=tmp_path / "cache") as ex:
        gpus = {r["device_id"]: r for r in ex.run("analysis.overview_gpus").iter_rows(named=True)}
        windows = ex.run("analysis.steady_steps").filter(nsysql_analysed())
        assert set(gpus) == {0}
        assert gpus[0]["utilization_pct"] > 0
        assert gpus[0]["window_ns"] == int((windows["end_ns"] - windows["start_ns"]).sum())
        from nsysql.answers.summary import build_summary, render_text
        text = render_text(build_summary(ex), width=200)
        assert "GPU 1 in the analysed steps" not in text
        assert "1 other GPU of the capture ran nothing in the analysed steps." in text


def nsysql_analysed():
    import polars as pl
    return pl.col("analysed")


def test_diff_by_layer_compares_graph_and_node_level(opened):
    rows = {r["name"]: r for r in opened[NODE].diff(opened[GRAPH], by="layer").iter_rows(named=True)}
    for name, replays in (("train_graph", 5), ("eval_graph", 5)):
        assert rows[name]["b_count"] == replays and rows[name]["a_count"] > replays  # kernels at node level
        assert 1.0 <= rows[name]["b_ns"] / rows[name]["a_ns"] <= 1.1
