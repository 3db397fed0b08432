"""The steady-state overview (`nsysql overview`): its queries against a plain walk of the raw rows
(tests/plainwalk_overview.py), and the warm-up and breakdown rules on small hand-worked tables.

Real exports: every golden export (fixtures/*/export.sqlite.xz and the shared sample). The walk takes only the
step windows from analysis.steps (tested in test_steps.py); which steps are analysed, and every figure over them,
it works out itself from CUPTI, OSRT, NVTX and TARGET_INFO_GPU rows with sqlite3.
"""
from __future__ import annotations

import json
import statistics

import duckdb
import polars as pl
import pytest
from typer.testing import CliRunner

from nsysql.cli.app import app
from nsysql.sql import catalog, macros

from plainwalk import is_op_marker
from plainwalk_overview import (
    CATEGORIES,
    PlainExport,
    is_synchronizing_name,
    plain_breakdown,
    plain_gpus,
    plain_steady,
    plain_step_stats,
    plain_top_api,
    plain_top_kernels,
    plain_top_ops,
    plain_top_ranges,
)

REL = 1e-6


def approx(x):
    """x within REL; None (a measure of a GPU without kernels) as itself."""
    return x if x is None else pytest.approx(x, rel=REL, abs=1e-9)


@pytest.fixture(scope="module")
def cases(export_files, opened):
    """{id: (opened export, PlainExport, plain steady_steps rows)} for every golden export with CUDA data."""
    out = {}
    for ident, path in export_files.items():
        ex = opened[ident]
        if not ex.has("kernel"):
            continue
        px = PlainExport(path)
        steps = ex.steps().to_dicts()
        found = ex.run("analysis._kernel_iterations").filter(pl.col("request").is_not_null())
        requests = set(zip(found["pid"], found["request_start_ns"], found["request_end_ns"]))  # the structure, given
        windows = plain_steady(steps, px.user_ranges(), px.ops, px.call_of, requests)
        out[ident] = (ex, px, windows)
    assert out, "no golden export with kernels"
    return out


# -- real exports against the plain walk ---------------------------------------------------------------
def test_steady_steps_match_plain_rules(cases):
    """Which steps are analysed (warm-up ranges, slow leading steps; a gpu_span window without steps)."""
    for ident, (ex, _, windows) in cases.items():
        got = ex.run("analysis.steady_steps").to_dicts()
        assert got == windows, ident


def test_step_breakdown_matches_sweep(cases):
    """Every analysed step: seven categories adding up to wall_ns, each equal to an elementary-segment sweep
    of the raw kernels, copies, sets, CUDA calls, data-loading ranges and outermost OS runtime calls."""
    totals = dict.fromkeys(CATEGORIES, 0)
    for ident, (ex, px, windows) in cases.items():
        got = {(r["pid"], r["step"]): r for r in ex.run("analysis.step_breakdown").to_dicts()}
        analysed = [w for w in windows if w["analysed"]]
        assert sorted(got) == sorted((w["pid"], w["step"]) for w in analysed), ident
        for w in analysed:
            row = got[(w["pid"], w["step"])]
            assert row["wall_ns"] == w["wall_ns"], ident
            assert sum(row[k] for k in CATEGORIES) == row["wall_ns"], (ident, w["step"])
            expected = plain_breakdown(w, px.ops, px.calls, px.ranges, px.osrt)
            assert {k: row[k] for k in CATEGORIES} == expected, (ident, w["step"])
            for k in CATEGORIES:
                totals[k] += row[k]
    # the real exports exercise the categories (data loading: the DataLoader capture's enumerate(DataLoader) ranges)
    assert all(totals[k] > 0 for k in ("kernel_ns", "memcpy_ns", "memset_ns", "runtime_ns", "cpu_exec_ns", "other_ns"))
    if "cnn-dataloader-train" in cases:
        assert totals["dataloader_ns"] > 0


def test_overview_gpus_match_plain_walk(cases):
    """Utilization (union of the device's ops clipped to the analysed windows), SM efficiency, achieved
    occupancy by an occupancy calculator of our own, tensor-core share by the header's name rule."""
    for ident, (ex, px, windows) in cases.items():
        got = {r["device_id"]: r for r in ex.run("analysis.overview_gpus").to_dicts()}
        expected = plain_gpus(px.ops, px.gpus, windows)
        assert sorted(got) == sorted(expected), ident
        for dev, want in expected.items():
            row = got[dev]
            for key in ("window_ns", "busy_ns", "kernel_ns"):
                assert row[key] == want[key], (ident, dev, key)
            assert row["utilization_pct"] == pytest.approx(want["utilization_pct"], abs=1e-9), (ident, dev)
            for key in ("sm_efficiency_pct", "achieved_occupancy_pct", "tensor_core_pct", "tensor_core_unknown_pct",
                        "efficiency_unknown_pct"):
                assert row[key] == approx(want[key]), (ident, dev, key)
            if want["busy_ns"]:  # a GPU of the host that this export's processes left idle is listed at 0
                assert 0 < row["utilization_pct"] <= 100, (ident, dev)
            if row["kernel_ns"]:
                assert 0 < row["sm_efficiency_pct"] <= row["utilization_pct"], (ident, dev)
                assert 0 < row["achieved_occupancy_pct"] <= 100, (ident, dev)
    # the bf16 capture runs GEMMs on tensor cores, the fp32 one (TF32 off) does not
    if "gpt-tiny-train-bf16" in cases:
        ex = cases["gpt-tiny-train-bf16"][0]
        assert ex.run("analysis.overview_gpus")["tensor_core_pct"][0] > 0
    # cuDNN's TF32 convolutions (sm90_xmma_*_f32f32_tf32f32_*) are tensor-core work: most of ResNet-18's GEMM time
    if "bwdtruth-resnet18" in cases:
        assert cases["bwdtruth-resnet18"][0].run("analysis.overview_gpus")["tensor_core_pct"][0] > 30
    # graph-level replays: no grids, so the SM estimates cover the other kernels and say how much they miss
    if "cuda-graphs-graph" in cases:
        assert cases["cuda-graphs-graph"][0].run("analysis.overview_gpus")["efficiency_unknown_pct"][0] > 0


def test_top_kernels_match_raw_sums(cases):
    for ident, (ex, px, windows) in cases.items():
        got = ex.run("analysis.top_kernels").to_dicts()
        expected = plain_top_kernels(px, windows)
        assert {r["short_name"] for r in got} == set(expected), ident
        total = sum(e["total_ns"] for e in expected.values())
        for r in got:
            want = expected[r["short_name"]]
            assert (r["calls"], r["total_ns"]) == (want["calls"], want["total_ns"]), (ident, r["short_name"])
            assert r["avg_ns"] == approx(want["total_ns"] / want["calls"])
            assert r["pct"] == approx(100.0 * want["total_ns"] / total)
            costs = want["by_name"]
            top = max(costs.values())
            assert costs[r["full_name"]] == top, (ident, r["short_name"])
        assert [r["total_ns"] for r in got] == sorted((r["total_ns"] for r in got), reverse=True)


def test_top_api_match_raw_sums(cases):
    seen = {}
    for ident, (ex, px, windows) in cases.items():
        got = ex.run("analysis.top_api").to_dicts()
        expected = plain_top_api(px, windows)
        assert {r["api_name"] for r in got} == set(expected), ident
        total = sum(e["total_ns"] for e in expected.values())
        for r in got:
            want = expected[r["api_name"]]
            assert (r["calls"], r["total_ns"], r["max_ns"]) == (want["calls"], want["total_ns"], want["max_ns"]), \
                (ident, r["api_name"])
            assert r["avg_ns"] == approx(want["total_ns"] / want["calls"])
            assert r["pct"] == approx(100.0 * want["total_ns"] / total)
            assert r["synchronizing"] == (want["recorded"] or is_synchronizing_name(r["api_name"])), \
                (ident, r["api_name"])
            seen.setdefault(r["api_name"], set()).add(r["synchronizing"])
    for name in ("cudaDeviceSynchronize", "cudaStreamSynchronize"):
        assert seen.get(name, {True}) == {True}, name
    assert seen.get("cudaLaunchKernel") == {False}
    assert any(name in seen for name in ("cudaDeviceSynchronize", "cudaStreamSynchronize"))


def test_top_ops_match_innermost_op_markers(cases):
    """Per op name: calls, host total/self time and device self/total time from the op markers starting in the
    analysed steps, a GPU op charged to the innermost op marker (an evaluate_function wrapper never) around its
    launching call on the launching thread: PyTorch's autograd thread's backward nodes included, so no seq link
    is needed. Self device times add up to the GPU time of the ops with such a marker."""
    with_markers = ranges_checked = nested = 0
    for ident, (ex, px, windows) in cases.items():
        if not ex.has("nvtx_range"):
            continue  # a capture without NVTX: summarize shows the top kernels only
        got = ex.run("analysis.top_ops").to_dicts()
        expected, marked_ns = plain_top_ops(px, windows)
        if not expected:  # no op markers: the innermost user ranges instead (kind = range)
            check_top_ranges(ident, got, px, windows)
            ranges_checked += 1
            continue
        with_markers += 1
        assert all(r["kind"] == "op" for r in got), ident
        assert {r["name"] for r in got} == set(expected), ident
        for r in got:
            want = expected[r["name"]]
            for key in ("calls", "device_self_ns", "device_total_ns", "host_self_ns", "host_total_ns"):
                assert r[key] == want[key], (ident, r["name"], key)
            shapes = want["shapes"]
            assert r["shape_variants"] == sum(1 for s in shapes if s is not None), (ident, r["name"])
            assert r["shapes"] in shapes and shapes[r["shapes"]] == max(shapes.values()), (ident, r["name"])
        assert sum(r["device_self_ns"] for r in got) == marked_ns > 0, ident
        nested += sum(1 for r in got if r["device_total_ns"] > r["device_self_ns"])  # ops holding ops with GPU time
    assert with_markers and nested, "no export with (nested) op markers"
    assert ranges_checked, "no export without op markers"


def check_top_ranges(ident, got, px, windows):
    """top_ops of an export without op markers in its analysed steps: innermost user ranges by layer path."""
    expected = plain_top_ranges(px, windows)
    assert all(r["kind"] == "range" for r in got), ident
    assert {r["name"] for r in got} == set(expected), ident
    seq_links = any(is_op_marker(r["text"]) for r in px.ranges)  # backward ops would take their forward op's layer
    for r in got:
        want = expected[r["name"]]
        assert r["calls"] == want["calls"], (ident, r["name"])
        assert r["host_self_ns"] == r["host_total_ns"] == want["host_ns"], (ident, r["name"])
        assert r["device_self_ns"] == r["device_total_ns"] and r["shapes"] is None and r["shape_variants"] == 0
        if not seq_links:
            assert r["device_self_ns"] == want["device_ns"], (ident, r["name"])
    assert sum(r["device_self_ns"] for r in got) > 0, ident


def test_step_stats_match_python(cases):
    for ident, (ex, _, windows) in cases.items():
        got = ex.run("analysis.step_stats").row(0, named=True)
        want = plain_step_stats(windows)
        for key in ("analysed_steps", "excluded_steps", "processes", "first_step", "last_step", "total_ns",
                    "max_ns", "outlier_steps", "outlier_pids"):
            assert got[key] == want[key], (ident, key)
        assert got["mean_ns"] == approx(want["mean_ns"]) and got["median_ns"] == approx(want["median_ns"])
        walls = {(w["pid"], w["step"]): w["wall_ns"] for w in windows if w["analysed"]}
        assert walls[(got["slowest_pid"], got["slowest_step"])] == want["max_ns"], ident


# -- the CLI ------------------------------------------------------------------------------------------
runner = CliRunner()


def test_overview_cli_formats(cases, export_files, cache_dir):
    ident = "gpt-tiny-train-w18s3" if "gpt-tiny-train-w18s3" in cases else sorted(cases)[0]
    path, (_ex, px, windows) = export_files[ident], cases[ident]
    analysed = [w for w in windows if w["analysed"]]
    common = [str(path), "--cache-dir", str(cache_dir)]

    res = runner.invoke(app, ["overview", *common, "-f", "json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert [s["step"] for s in doc["steps"]] == [w["step"] for w in analysed]
    for s, w in zip(doc["steps"], analysed):
        assert s["wall_ns"] == w["wall_ns"]
        assert list(s["breakdown"]) == list(CATEGORIES)
        assert sum(s["breakdown"].values()) == s["wall_ns"]
        assert s["breakdown"] == plain_breakdown(w, px.ops, px.calls, px.ranges, px.osrt)
    assert doc["gpus"] and all({"device_id", "utilization_pct", "sm_efficiency_pct", "achieved_occupancy_pct",
                                "tensor_core_pct"} <= set(g) for g in doc["gpus"])

    res = runner.invoke(app, ["overview", *common, "-f", "csv"])
    assert res.exit_code == 0, res.output
    lines = [l for l in res.stdout.splitlines() if l.strip()]
    header = lines[0].split(",")
    assert {"step", "wall_ns", *CATEGORIES} <= set(header)
    assert len(lines) - 1 == len(analysed)
    for line, w in zip(lines[1:], analysed):
        row = dict(zip(header, line.split(",")))  # no comma in step names here
        assert int(row["step"]) == w["step"] and int(row["wall_ns"]) == w["wall_ns"]
        assert sum(int(row[k]) for k in CATEGORIES) == w["wall_ns"]

    res = runner.invoke(app, ["overview", *common], env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    assert res.stdout.strip()
    too_wide = [l for l in res.stdout.splitlines() if len(l) > 80]
    assert not too_wide, too_wide


# -- warm-up rules and the breakdown on hand-worked tables (in-memory DuckDB) --------------------------
def run_query(query_id, tables):
    """Run a catalog query's SQL on an in-memory DuckDB holding `tables` ({name: (column defs, rows)}), with the
    SQL library's macros (queries/macros/) as on an export's connection."""
    con = duckdb.connect()
    macros.install(con)
    for name, (columns, rows) in tables.items():
        con.execute(f"CREATE TABLE {name} ({columns})")
        if rows:
            marks = ", ".join("?" * len(rows[0]))
            con.executemany(f"INSERT INTO {name} VALUES ({marks})", rows)
    _derive_inputs(con, catalog.get(query_id), set(tables))
    rel = con.execute(catalog.get(query_id).sql)
    cols = [d[0] for d in rel.description]
    out = [dict(zip(cols, r)) for r in rel.fetchall()]
    return con, out


def _derive_inputs(con, query, given):
    """The analyses a query reads (`requires: analysis.X`) and the test did not give, built from their SQL."""
    for requirement in query.requires:
        name = requirement.split(".", 1)[1] if requirement.startswith("analysis.") else None
        if name and name not in given:
            inner = catalog.get(requirement)
            _derive_inputs(con, inner, given)
            con.execute(f"CREATE TABLE {name} AS {inner.sql.rstrip().rstrip(';')}")
            given.add(name)


STEPS_COLS = "step BIGINT, name VARCHAR, source VARCHAR, pid BIGINT, tid BIGINT, start_ns BIGINT, end_ns BIGINT, " \
             "wall_ns BIGINT, gpu_end_ns BIGINT, period_ns BIGINT"


def steady_tables(steps, ranges=(), ops=(), calls=(), gpu=None):
    """steps: (step, pid, start, wall); ranges: (range_id, pid, start, end, text); ops: (start, end, runtime_id);
    calls: (runtime_id, pid, tid); gpu: {step: (gpu_end, period)} of the steps whose GPU work is given (else none,
    and the period is the wall)."""
    gpu = gpu or {}
    return {
        "steps": (STEPS_COLS, [(n, "step", "range", pid, 100 + pid, s, s + w, w, *gpu.get(n, (None, w)))
                               for n, pid, s, w in steps]),
        "user_range": ("range_id BIGINT, pid BIGINT, start_ns BIGINT, end_ns BIGINT",
                       [(i, pid, s, e) for i, pid, s, e, _ in ranges]),
        "nvtx_range": ("range_id BIGINT, text VARCHAR, is_op_marker BOOLEAN",
                       [(i, text, False) for i, *_, text in ranges]),
        "gpu_op": ("start_ns BIGINT, end_ns BIGINT, runtime_id BIGINT", list(ops)),
        "runtime": ("runtime_id BIGINT, pid BIGINT, tid BIGINT", list(calls)),
        "_kernel_iterations": ("pid BIGINT, request BIGINT, request_start_ns BIGINT, request_end_ns BIGINT", []),
    }


def verdicts(rows):
    return [(r["step"], r["analysed"], r["excluded_because"]) for r in rows]


def steps_at(pid, walls, first=1, start=0, gap=10, step_every=1):
    """(step, pid, start, wall) for consecutive steps of one process."""
    out, t = [], start
    for i, w in enumerate(walls):
        out.append((first + i * step_every, pid, t, w))
        t += w + gap
    return out


def test_steady_no_warmup():
    _, rows = run_query("analysis.steady_steps", steady_tables(steps_at(1, [100, 110, 105, 100])))
    assert verdicts(rows) == [(1, True, None), (2, True, None), (3, True, None), (4, True, None)]
    assert [(r["start_ns"], r["end_ns"], r["wall_ns"], r["tid"], r["source"]) for r in rows][1] == \
        (110, 220, 110, 101, "range")


def test_steady_slow_leading_steps():
    # step 1: 500 > 1.5 * median(300, 100, 110, 400, 105, 100) = 161.25; step 2: 300 > 1.5 * 105 = 157.5;
    # step 3: 100 <= 1.5 * 107.5 ends the lead, so step 5 (400 > 1.5 * median(105, 100)) is kept
    _, rows = run_query("analysis.steady_steps", steady_tables(steps_at(1, [500, 300, 100, 110, 400, 105, 100])))
    assert verdicts(rows) == [(1, False, "slow_leading_step"), (2, False, "slow_leading_step"), (3, True, None),
                              (4, True, None), (5, True, None), (6, True, None), (7, True, None)]
    # the last step is never slow-leading: two steps, the first much faster, the second slower
    _, rows = run_query("analysis.steady_steps", steady_tables(steps_at(1, [100, 1000])))
    assert verdicts(rows) == [(1, True, None), (2, True, None)]
    _, rows = run_query("analysis.steady_steps", steady_tables(steps_at(1, [1000, 100])))
    assert verdicts(rows) == [(1, False, "slow_leading_step"), (2, True, None)]
    _, rows = run_query("analysis.steady_steps", steady_tables(steps_at(1, [1000])))
    assert verdicts(rows) == [(1, True, None)]
    # the bound is strict: 160 > 1.5 * 100 is warm-up, 150 is not (and ends the lead)
    _, rows = run_query("analysis.steady_steps", steady_tables(steps_at(1, [160, 150, 100, 100])))
    assert verdicts(rows) == [(1, False, "slow_leading_step"), (2, True, None), (3, True, None), (4, True, None)]


def test_steady_slow_leading_request():
    # decode steps found in the op sequence, three a request: the first request (a long head, 1,330 ns against
    # 330) is warm-up, every step of it; a slow request after a fast one is not
    steps = steps_at(1, [100] * 9)
    tables = steady_tables(steps)
    tables["_kernel_iterations"] = (tables["_kernel_iterations"][0],
                                    [(1, 1, -1000, 330), (1, 2, 330, 660), (1, 3, 660, 990)])
    _, rows = run_query("analysis.steady_steps", tables)
    assert verdicts(rows) == [(n, n > 3, None if n > 3 else "slow_leading_request") for n in range(1, 10)]
    tables["_kernel_iterations"] = (tables["_kernel_iterations"][0],
                                    [(1, 1, 0, 330), (1, 2, -2000, 660), (1, 3, 660, 990)])
    _, rows = run_query("analysis.steady_steps", tables)
    assert all(r["analysed"] for r in rows)


def test_steady_period_clock_when_the_cpu_runs_ahead():
    # the GPU work of each step ends 300 ns after its 100 ns range (more than a step): each step is its period
    steps = steps_at(1, [100, 100, 100, 100], gap=0)
    gpu = {n: (s + w + 300, p) for (n, _, s, w), p in zip(steps, [400, 120, 120, 120])}
    _, rows = run_query("analysis.steady_steps", steady_tables(steps, gpu=gpu))
    assert {r["clock"] for r in rows} == {"period"}
    assert [(r["start_ns"], r["end_ns"], r["wall_ns"], r["range_wall_ns"]) for r in rows] == [
        (400 - 400, 400, 400, 100), (500 - 120, 500, 120, 100), (600 - 120, 600, 120, 100), (700 - 120, 700, 120, 100)]
    # the slow-leading rule reads the period: 400 > 1.5 x 120
    assert verdicts(rows)[0] == (1, False, "slow_leading_step")
    # 90 ns past the range is not running ahead (not over a step): the range's clock
    gpu = {n: (s + w + 90, w + 90) for n, _, s, w in steps}
    _, rows = run_query("analysis.steady_steps", steady_tables(steps, gpu=gpu))
    assert {r["clock"] for r in rows} == {"range"} and [r["wall_ns"] for r in rows] == [100] * 4


def test_steady_warmup_range():
    steps = steps_at(1, [100, 100, 100, 100])  # starts 0, 110, 220, 330
    ranges = [(1, 1, 0, 220, "Warm-Up phase"),  # holds steps 1, 2; step 3 starts at its end, so outside
              (2, 2, 0, 1000, "warmup"),  # another process's warm-up range says nothing about pid 1
              (3, 1, 300, 400, "warmer"),  # not a warm-up name
              (4, 1, 320, 340, "data")]
    _, rows = run_query("analysis.steady_steps", steady_tables(steps, ranges))
    assert verdicts(rows) == [(1, False, "warmup_range"), (2, False, "warmup_range"), (3, True, None),
                              (4, True, None)]
    # a step only ending inside a warm-up range is analysed
    _, rows = run_query("analysis.steady_steps", steady_tables(steps, [(1, 1, 50, 215, "warm_up")]))
    assert verdicts(rows)[:2] == [(1, True, None), (2, False, "warmup_range")]
    # a warm-up range beats the slow-leading rule as the reason
    _, rows = run_query("analysis.steady_steps", steady_tables(steps_at(1, [900, 100, 100]),
                                                               [(1, 1, 0, 50, "WARM UP")]))
    assert verdicts(rows) == [(1, False, "warmup_range"), (2, True, None), (3, True, None)]


def test_steady_every_step_in_warmup_range():
    steps = steps_at(1, [100, 100, 100])
    _, rows = run_query("analysis.steady_steps", steady_tables(steps, [(1, 1, -5, 10_000, "warmup")]))
    assert verdicts(rows) == [(1, True, None), (2, True, None), (3, True, None)]
    # ... while the slow-leading rule still applies
    _, rows = run_query("analysis.steady_steps", steady_tables(steps_at(1, [900, 100, 100]),
                                                               [(1, 1, -5, 10_000, "warmup")]))
    assert verdicts(rows) == [(1, False, "slow_leading_step"), (2, True, None), (3, True, None)]


def test_steady_processes_judged_separately():
    # interleaved numbering: pid 1 has steps 1, 3, 5 (300, 100, 100), pid 2 steps 2, 4, 6 (200, 400, 400).
    # Per process step 1 is slow (300 > 1.5 * 100) and step 2 is not (200 <= 1.5 * 400); judged over all steps
    # after it step 1 would not be (300 <= 1.5 * median(200, 100, 400, 100, 400) = 300).
    steps = [(1, 1, 0, 300), (2, 2, 5, 200), (3, 1, 400, 100), (4, 2, 410, 400), (5, 1, 900, 100), (6, 2, 910, 400)]
    ranges = [(1, 2, 0, 100, "warmup")]  # pid 2's warm-up range holds its step 2 only (pid 1's step 1 too, in time)
    _, rows = run_query("analysis.steady_steps", steady_tables(steps, ranges))
    assert verdicts(rows) == [(1, False, "slow_leading_step"), (2, False, "warmup_range"), (3, True, None),
                              (4, True, None), (5, True, None), (6, True, None)]
    assert [r["pid"] for r in rows] == [1, 2, 1, 2, 1, 2]


def test_steady_without_steps_is_the_gpu_span():
    ops = [(500, 700, 1), (650, 900, 2), (100, 200, 3), (300, 400, 4), (950, 990, 5), (800, 1200, None),
           (120, 130, 6)]
    calls = [(1, 1, 10), (2, 1, 10), (3, 1, 11), (4, 1, 11), (5, 1, 11), (6, 2, 20)]
    _, rows = run_query("analysis.steady_steps", steady_tables([], ops=ops, calls=calls))
    # thread 11 of pid 1 launched the most ops (3); the window runs from the first op to the last one
    # (any op, whoever launched it)
    assert rows == [dict(step=0, name="GPU activity", source="gpu_span", pid=1, tid=11, start_ns=100,
                         end_ns=1200, wall_ns=1100, analysed=True, excluded_because=None, clock="range",
                         range_wall_ns=1100, range_start_ns=100, range_end_ns=1200)]
    _, rows = run_query("analysis.steady_steps", steady_tables([]))
    assert rows == []


def test_step_stats_on_hand_worked_windows():
    # steps 1, 2 warm-up (slow leading); analysed 100, 110, 400, 105, 100 -> median 105, outlier step 5
    con, rows = run_query("analysis.steady_steps", steady_tables(steps_at(1, [500, 300, 100, 110, 400, 105, 100])))
    con.execute(f"CREATE TABLE steady_steps AS {catalog.get('analysis.steady_steps').sql.rstrip().rstrip(';')}")
    rel = con.execute(catalog.get("analysis.step_stats").sql)
    got = dict(zip([d[0] for d in rel.description], rel.fetchone()))
    assert got == dict(analysed_steps=5, excluded_steps=2, processes=1, first_step=3, last_step=7, total_ns=815,
                       mean_ns=163.0, median_ns=105.0, max_ns=400, slowest_step=5, slowest_pid=1, outlier_steps=[5],
                       outlier_pids=[1])
    want = plain_step_stats(rows)
    assert {k: got[k] for k in want} == want
    # fewer than 3 analysed steps: no outliers
    con, rows = run_query("analysis.steady_steps", steady_tables(steps_at(1, [100, 400])))
    con.execute(f"CREATE TABLE steady_steps AS {catalog.get('analysis.steady_steps').sql.rstrip().rstrip(';')}")
    got = con.execute(catalog.get("analysis.step_stats").sql).fetchone()
    assert got[0] == 2 and got[-1] == []


def test_step_stats_of_two_processes():
    """Two ranks, each with its own steps 1-4 at the same time: an outlier is judged against its own process's
    median (rank 1's 160 ns step is 1.6x its median, though under 1.5x the pooled median of 230 ns)."""
    steps = steps_at(1, [100, 100, 100, 160]) + steps_at(2, [300, 300, 300, 900])
    con, rows = run_query("analysis.steady_steps", steady_tables(steps))
    assert [(r["pid"], r["step"], r["analysed"]) for r in rows] == [
        (1, 1, True), (2, 1, True), (1, 2, True), (2, 2, True), (1, 3, True), (2, 3, True), (1, 4, True),
        (2, 4, True)]  # in (step, pid) order
    con.execute(f"CREATE TABLE steady_steps AS {catalog.get('analysis.steady_steps').sql.rstrip().rstrip(';')}")
    rel = con.execute(catalog.get("analysis.step_stats").sql)
    got = dict(zip([d[0] for d in rel.description], rel.fetchone()))
    assert got == dict(analysed_steps=8, excluded_steps=0, processes=2, first_step=1, last_step=4, total_ns=2260,
                       mean_ns=282.5, median_ns=230.0, max_ns=900, slowest_step=4, slowest_pid=2,
                       outlier_steps=[4, 4], outlier_pids=[1, 2])
    want = plain_step_stats(rows)
    assert {k: got[k] for k in want} == want


def breakdown_tables():
    """Step 1 (pid 1, thread 10, [1000, 2000)) worked out by hand:
         1000-1050 kernel (a kernel from 900)       1450-1500 cpu_exec
         1050-1100 runtime (thread 11's call)       1500-1600 dataloader (enumerate(DataLoader)...)
         1100-1300 kernel                           1600-1650 cpu_exec (10 waits in poll, 11 runs)
         1300-1350 memcpy (from 1250: under kernel) 1650-1800 other (10 and 11 both wait)
         1350-1360 memset                           1800-1900 cpu_exec (11 waits alone, then nobody)
         1360-1400 cpu_exec                         1900-2000 dataloader (batch_3, to 2100)
         1400-1450 runtime
       pid 2's kernel and call, thread 11's data range, thread 12's wait (no CUDA call in the step) and a nested
       OS call do not count. Step 2 is warm-up (not analysed). Step 3 ([3000, 3100)): thread 10 waits throughout.
    """
    wins = [(1, 1, 10, 1000, 2000, True), (2, 1, 10, 2500, 2600, False), (3, 1, 10, 3000, 3100, True)]
    ops = [("kernel", 1, 900, 1050), ("kernel", 1, 1100, 1300), ("kernel", 2, 1300, 1400),
           ("memcpy", 1, 1250, 1350), ("memset", 1, 1340, 1360), ("kernel", 1, 2500, 2550)]
    calls = [(1, 11, 1050, 1150), (1, 10, 1400, 1450), (2, 20, 1450, 1500)]
    ranges = [(1, 10, 1500, 1600, None, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"),
              (1, 11, 1600, 1700, None, "data_loading"), (1, 10, 1900, 2100, None, "batch_3"),
              (1, 10, 1700, 1750, None, "databases"), (1, 10, 1360, 1400, 99, "load_batch")]
    osrt = [(1, 10, 1600, 1800, 0), (1, 11, 1650, 1850, 0), (1, 11, 1700, 1720, 1), (1, 12, 1000, 2000, 0),
            (1, 10, 2900, 3200, 0)]
    return wins, ops, calls, ranges, osrt


# analysis.comm_waits with no communication kernel (the hand-worked tables have none)
NO_COMM = ("pid BIGINT, device_id BIGINT, kernel_id BIGINT, start_ns BIGINT, wait_end_ns BIGINT, end_ns BIGINT", [])


def breakdown_rows(wins, ops, calls, ranges, osrt):
    """analysis.step_breakdown over hand-worked tables (breakdown_tables' shapes)."""
    _, rows = run_query("analysis.step_breakdown", {
        "steady_steps": ("step BIGINT, pid BIGINT, tid BIGINT, start_ns BIGINT, end_ns BIGINT, analysed BOOLEAN, "
                         "wall_ns BIGINT", [w + (w[4] - w[3],) for w in wins]),
        "gpu_op": ("op_kind VARCHAR, pid BIGINT, start_ns BIGINT, end_ns BIGINT, op_id BIGINT",
                   [o + (i,) for i, o in enumerate(ops)]),
        "runtime": ("pid BIGINT, tid BIGINT, start_ns BIGINT, end_ns BIGINT", calls),
        "nvtx_range": ("pid BIGINT, tid BIGINT, start_ns BIGINT, end_ns BIGINT, end_global_tid BIGINT, text VARCHAR",
                       ranges),
        "osrt": ("pid BIGINT, tid BIGINT, start_ns BIGINT, end_ns BIGINT, nesting_level BIGINT", osrt),
        "comm_waits": NO_COMM,
    })
    return rows


def breakdown_walk(wins, ops, calls, ranges, osrt):
    """The plain sweep the real exports are checked with, over the same hand-worked tables: one dict per analysed
    window, in the order of `wins`."""
    return [plain_breakdown(dict(pid=p, tid=t, start_ns=s, end_ns=e),
                            [dict(kind=k, pid=q, start=a, end=b) for k, q, a, b in ops],
                            [dict(pid=q, tid=u, start=a, end=b) for q, u, a, b in calls],
                            [dict(pid=q, tid=u, start=a, end=b, cross=x is not None, text=txt)
                             for q, u, a, b, x, txt in ranges],
                            [dict(pid=q, tid=u, start=a, end=b) for q, u, a, b, lvl in osrt if lvl == 0])
            for _, p, t, s, e, ok in wins if ok]


def test_step_breakdown_hand_worked():
    tables = breakdown_tables()
    rows = breakdown_rows(*tables)
    expected = [dict(step=1, pid=1, wall_ns=1000, kernel_ns=250, comm_transfer_ns=0, comm_wait_ns=0, memcpy_ns=50,
                     memset_ns=10, runtime_ns=100, dataloader_ns=200, cpu_exec_ns=240, other_ns=150),
                dict(step=3, pid=1, wall_ns=100, kernel_ns=0, comm_transfer_ns=0, comm_wait_ns=0, memcpy_ns=0,
                     memset_ns=0, runtime_ns=0, dataloader_ns=0, cpu_exec_ns=0, other_ns=100)]
    assert rows == expected
    assert breakdown_walk(*tables) == [{k: r[k] for k in CATEGORIES} for r in expected]
    assert statistics.fmean(r["wall_ns"] for r in rows) == 550


def test_step_breakdown_of_two_processes_at_once():
    """Process 2 has its own step 1 over the same time as process 1's step 1 (steps are numbered per process): each
    is broken down from its own process's ops, calls and threads. Process 2's step 1, thread 20, [1000, 2000): its
    kernel 1300-1400, its call 1450-1500, the rest cpu_exec (no OS call of thread 20)."""
    wins, ops, calls, ranges, osrt = breakdown_tables()
    wins = wins + [(1, 2, 20, 1000, 2000, True)]
    rows = breakdown_rows(wins, ops, calls, ranges, osrt)
    assert [(r["step"], r["pid"]) for r in rows] == [(1, 1), (1, 2), (3, 1)]
    by_step = {(r["pid"], r["step"]): {k: r[k] for k in CATEGORIES} for r in rows}
    assert by_step[(1, 1)] == dict(kernel_ns=250, comm_transfer_ns=0, comm_wait_ns=0, memcpy_ns=50, memset_ns=10,
                                   runtime_ns=100, dataloader_ns=200, cpu_exec_ns=240, other_ns=150)  # as without 2's
    assert by_step[(2, 1)] == dict(kernel_ns=100, comm_transfer_ns=0, comm_wait_ns=0, memcpy_ns=0, memset_ns=0,
                                   runtime_ns=50, dataloader_ns=0, cpu_exec_ns=850, other_ns=0)
    analysed = [(p, n) for n, p, _, _, _, ok in wins if ok]
    assert breakdown_walk(wins, ops, calls, ranges, osrt) == [by_step[key] for key in analysed]


H100 = dict(smCount=132, maxBlocksPerSm=32, maxWarpsPerSm=64, maxRegistersPerSm=65536, maxShmemPerSm=233472,
            threadsPerWarp=32, computeMajor=9)


def test_overview_gpus_hand_worked():
    """Two H100s. Analysed windows: pid 1 [1000, 2000) and [3000, 4000) (its [2000, 3000) is warm-up), pid 2
    [1500, 2500). Device 0 (pid 1's ops; pid 3 has no step) and device 1 (pid 2's two concurrent kernels).
    Theoretical occupancy, by hand (W = warps per block; limits: 32 blocks, 64 warps, 65536 registers,
    233472 B shared memory per SM; 1 KiB reserved per block):
      k1 256 thr (W 8), 32 regs: 1024 regs/warp -> 8 blocks; warps 8 -> 8 blocks * 8 / 64 = 100%
      k2 256 thr (W 8), 36 regs: 1152 -> 1280 regs/warp -> 65536 / 10240 = 6 blocks -> 75% (7 without rounding)
      k3 64 thr (W 2), 16 regs, 16384 + 29696 B: 46080 + 1024 = 47104 B -> 4 blocks (5 without the 1 KiB) -> 12.5%
      k4 32 thr (W 1), 8 regs -> 32 blocks (the block limit) -> 50%      (runs only in pid 1's warm-up step)
      k5 100 thr (W 4), 100 B -> 1152 B -> 202 blocks; warps 16 -> 100%
      k6 1024 thr (W 32), 64 regs: 65536 / 65536 = 1 block -> 50%;  k7 128 thr (W 4) -> 16 blocks -> 100%
    Device 0: k1 [1000, 1100) (from 900), k2 [1050, 1250), memcpy [1300, 1400), k3 [1950, 2000) (to 2100, the rest
    in warm-up), k5 [3500, 3600), memset [3550, 3700): busy 250 + 100 + 50 + 200 = 600 of 2000 -> 30%;
    kernel time 100 + 200 + 50 + 100 = 450; SM efficiency (264 blocks -> 1, 66 -> 0.5, 6 -> 6/132, 33 -> 0.25):
    (100 + 100 + 50 * 6 / 132 + 25) / 2000; occupancy (100 + 150 + 6.25 + 100) / 450; tensor cores: k1 (bf16) and
    k5 (nvjet), not k3 (f32f32_f32f32 ffma): 200 / 450.
    Device 1: k6, k7 both [1600, 1800), 264 blocks each: busy 200 of 1000 -> 20%; SM efficiency 400 / 1000 capped
    at 20%; occupancy (50 * 200 + 100 * 200) / 400 = 75%; no tensor-core name.
    Device 2: one copy of pid 1 [1000, 1500), no kernel: busy 500 of 2000 -> 25%; SM efficiency 0 (a sum over no
    kernels; copy engines are not SMs); occupancy and tensor-core share undefined (NULL).
    Device 3 (no TARGET_INFO_GPU row): one tensor-core kernel [3000, 3400): busy 400 of 2000 -> 20%; SM efficiency
    and occupancy unknown (NULL), tensor cores 100%.
    """
    kernels = [  # id, dev, pid, start, end, grid, block, regs, static, dynamic, name
        (1, 0, 1, 900, 1100, (264, 1, 1), (256, 1, 1), 32, 0, 0, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n"),
        (2, 0, 1, 1050, 1250, (66, 1, 1), (16, 16, 1), 36, 0, 0, "ampere_sgemm_128x64_nn"),
        (3, 0, 1, 1950, 2100, (2, 3, 1), (64, 1, 1), 16, 16384, 29696, "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize32x32x8_ffma"),
        (4, 0, 1, 2500, 2600, (132, 1, 1), (32, 1, 1), 8, 0, 0, "elementwise_kernel"),
        (5, 0, 1, 3500, 3600, (33, 1, 1), (100, 1, 1), 0, 100, 0, "nvjet_hsh_64x8_64x16_2x1_v_bz_coopA_TNT"),
        (6, 1, 2, 1600, 1800, (264, 1, 1), (1024, 1, 1), 64, 0, 0, "reduce_kernel"),
        (7, 1, 2, 1600, 1800, (264, 1, 1), (128, 1, 1), 0, 0, 0, "vectorized_elementwise_kernel"),
        (8, 0, 3, 1000, 2000, (1, 1, 1), (32, 1, 1), 8, 0, 0, "no_step_kernel"),
        (9, 3, 1, 3000, 3400, (1, 1, 1), (32, 1, 1), 8, 0, 0, "hmma_kernel_on_unknown_gpu"),
    ]
    others = [("memcpy", 1, 0, 1, 1300, 1400), ("memset", 1, 0, 1, 3550, 3700),  # kind, id, dev, pid, start, end
              ("memcpy", 2, 2, 1, 1000, 1500)]
    wins = [(1, 1, 1000, 2000, True), (2, 1, 2000, 3000, False), (3, 1, 3000, 4000, True), (4, 2, 1500, 2500, True)]
    gpu_cols = ("device_id BIGINT, gpu_name VARCHAR, sm_count BIGINT, memory_bytes BIGINT, max_blocks_per_sm BIGINT, "
                "max_warps_per_sm BIGINT, max_registers_per_sm BIGINT, max_shmem_per_sm BIGINT, "
                "threads_per_warp BIGINT, compute_major BIGINT")
    h = H100
    _, rows = run_query("analysis.overview_gpus", {
        "steady_steps": ("step BIGINT, pid BIGINT, start_ns BIGINT, end_ns BIGINT, analysed BOOLEAN, tid BIGINT, "
                         "wall_ns BIGINT", [w + (0, w[3] - w[2]) for w in wins]),
        "gpu_op": ("op_kind VARCHAR, op_id BIGINT, device_id BIGINT, pid BIGINT, start_ns BIGINT, end_ns BIGINT",
                   [("kernel", k[0], k[1], k[2], k[3], k[4]) for k in kernels] + others),
        "kernel": ("kernel_id BIGINT, grid_x BIGINT, grid_y BIGINT, grid_z BIGINT, block_x BIGINT, block_y BIGINT, "
                   "block_z BIGINT, registers_per_thread BIGINT, static_smem_bytes BIGINT, dynamic_smem_bytes BIGINT, "
                   "kernel_name VARCHAR", [(k[0], *k[5], *k[6], *k[7:]) for k in kernels]),
        "gpu": (gpu_cols, [(d, "H100", h["smCount"], 80 << 30, h["maxBlocksPerSm"], h["maxWarpsPerSm"],
                            h["maxRegistersPerSm"], h["maxShmemPerSm"], h["threadsPerWarp"], h["computeMajor"])
                           for d in (0, 1, 2)]),
        "comm_waits": NO_COMM,
    })
    expected = {
        0: dict(window_ns=2000, busy_ns=600, kernel_ns=450, utilization_pct=30.0,
                sm_efficiency_pct=100 * (225 + 50 * 6 / 132) / 2000, achieved_occupancy_pct=100 * 356.25 / 450,
                tensor_core_pct=100 * 200 / 450),
        1: dict(window_ns=1000, busy_ns=200, kernel_ns=400, utilization_pct=20.0, sm_efficiency_pct=20.0,
                achieved_occupancy_pct=75.0, tensor_core_pct=0.0),
        2: dict(window_ns=2000, busy_ns=500, kernel_ns=0, utilization_pct=25.0, sm_efficiency_pct=0.0,
                achieved_occupancy_pct=None, tensor_core_pct=None),
        3: dict(window_ns=2000, busy_ns=400, kernel_ns=400, utilization_pct=20.0, sm_efficiency_pct=None,
                achieved_occupancy_pct=None, tensor_core_pct=100.0),
    }
    assert [r["device_id"] for r in rows] == [0, 1, 2, 3]
    for r in rows:
        want = expected[r["device_id"]]
        assert {k: r[k] for k in want} == {k: v if v is None else approx(v) for k, v in want.items()}, r
        assert (r["gpu_name"], r["sm_count"], r["memory_bytes"]) == (("H100", 132, 80 << 30) if r["device_id"] < 3
                                                                       else (None, None, None))
    # the plain walk the real exports are checked with gives the same
    ops = [dict(kind="kernel", device=k[1], pid=k[2], start=k[3], end=k[4], blocks=k[5][0] * k[5][1] * k[5][2],
                threads=k[6][0] * k[6][1] * k[6][2], regs=k[7], smem=k[8] + k[9], name=k[10]) for k in kernels]
    ops += [dict(kind=kind, device=dev, pid=pid, start=s, end=e) for kind, _, dev, pid, s, e in others]
    windows = [dict(step=n, pid=p, start_ns=s, end_ns=e, wall_ns=e - s, analysed=a) for n, p, s, e, a in wins]
    walk = plain_gpus(ops, {0: H100, 1: H100, 2: H100}, windows)
    assert sorted(walk) == sorted(expected)
    assert ({dev: {k: walk[dev][k] for k in want} for dev, want in expected.items()}
            == {dev: {k: v if v is None else approx(v) for k, v in want.items()} for dev, want in expected.items()})
    assert all(walk[dev]["efficiency_unknown_pct"] in (0, None) for dev in walk)  # no graph-level replays here


def test_overview_of_two_processes_says_whose_step(tmp_path):
    """Each rank numbers its own steps (scripts/make_synthetic.py two_ranks): the summary, the overview's JSON and
    CSV and the findings' header name the process of every step."""
    from conftest import make_synthetic
    path = make_synthetic().two_ranks().write(tmp_path / "two_ranks.sqlite")
    common = [str(path), "--cache-dir", str(tmp_path / "cache")]
    res = runner.invoke(app, ["summarize", *common], env={"COLUMNS": "100"})
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())  # lines wrap at the width
    assert "Analysed: 6 of 6 steps in 2 processes (profiled_step; pid 100: 1-3; pid 200: 1-3)" in text
    assert "max 1.10 µs (step 3 of pid 200)" in text  # rank 1's step 3 is 1100 ns, every other 1000 ns
    # the breakdown's rows: the ranks (NCCL ran on each: numbered by GPU, no RANK in one export)
    assert "1 r0" in res.output and "1 r1" in res.output
    doc = json.loads(runner.invoke(app, ["overview", *common, "-f", "json"]).stdout)
    assert [(s["pid"], s["step"], s["wall_ns"]) for s in doc["steps"]] == [
        (100, 1, 1000), (200, 1, 1000), (100, 2, 1000), (200, 2, 1000), (100, 3, 1000), (200, 3, 1100)]
    assert (doc["step_time"]["slowest_step"], doc["step_time"]["slowest_pid"]) == (3, 200)
    res = runner.invoke(app, ["overview", *common, "-f", "csv"])
    lines = res.stdout.splitlines()
    assert lines[0].startswith("step,pid,name,wall_ns,") and len(lines) == 7
    res = runner.invoke(app, ["findings", *common], env={"COLUMNS": "100"})
    assert "Analysed pid 100: steps 1-3; pid 200: steps 1-3 (6 of 6" in " ".join(res.output.split())
