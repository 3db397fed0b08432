"""What a step is, read from the program (docs/steps.md): nsysql's steps against the ranges the program pushed and the
ops it launched, never against nsysql's own output.

The new shapes (a decode loop with a warm-up request, the CPU running ahead of CUDA-graph decode steps, a decode
loop without NVTX) are synthetic until real captures of them are in fixtures/ (scripts/make_program_shapes.py holds
what each program did); every fixture's steps are checked against its raw NVTX rows, so the structure rules change
nothing where the steps were right."""
from __future__ import annotations

import bisect
import re
import sqlite3
import statistics

import polars as pl
import pytest
from typer.testing import CliRunner

import nsysql
from nsysql.cli.app import app
from nsysql.errors import NsysqlError

from conftest import load_script
from plainwalk import quantile, union_length

shapes = load_script("scripts/make_program_shapes.py")
runner = CliRunner()
STEP_NAME = re.compile(r"^(profiled_step|((train|training|eval|inference)_)?(step|iteration|iter)([ _#-]?[0-9]+)?"
                       r"|ProfilerStep#[0-9]+)$", re.IGNORECASE)


def _open(tmp_path, case: str, **how):
    export, truth = getattr(shapes, case)()
    path = export.write(tmp_path / f"{case}.sqlite")
    return nsysql.open(path, cache_dir=tmp_path / "cache", **how), truth, path


def test_decode_loop_steps_are_the_decode_steps_and_the_warmup_request_is_left_out(tmp_path):
    ex, truth, _ = _open(tmp_path, "decode_loop")
    steady = ex.run("analysis.steady_steps")
    analysed = steady.filter("analysed").sort("step")
    # the ranges the program pushed: every real decode_step, by its own bounds (on the CPU's clock)
    steps = ex.steps().sort("step")
    real = steps.filter(steps["step"].is_in(analysed["step"].implode()))
    assert [(r["start_ns"], r["end_ns"]) for r in real.iter_rows(named=True)] == \
        [(s["start_ns"], s["end_ns"]) for s in truth["decode_steps"]]
    left_out = steady.filter(~steady["analysed"])
    assert left_out.height == len(truth["warmup_steps"])
    assert set(left_out["excluded_because"]) == {"warmup_range"}
    st = ex.structure().row(0, named=True)
    assert (st["program_kind"], st["step_rule"], st["step_level"]) == ("inference", "decode steps",
                                                                       "request/decode_step")
    assert st["close_level"] == "request"  # the requests tile the work too: summarize says so
    # no step runs past its own range: the last decode step does not swallow the next request's prefill
    assert (steps["end_ns"] - steps["start_ns"]).max() == max(s["end_ns"] - s["start_ns"] for s in
                                                               truth["decode_steps"] + truth["warmup_steps"])


def test_step_range_override_and_a_level_that_is_not_there(tmp_path):
    ex, truth, path = _open(tmp_path, "decode_loop", step_range="request")
    steady = ex.run("analysis.steady_steps")
    assert steady.filter("analysed").height == len(truth["requests"])
    assert ex.structure()["step_rule"][0] == "override"
    with pytest.raises(NsysqlError, match="no NVTX range level 'decode'"):
        nsysql.open(path, cache_dir=tmp_path / "cache", step_range="decode")
    res = runner.invoke(app, ["steps", str(path), "--step-range", "nope", "--cache-dir", str(tmp_path / "c2")])
    assert res.exit_code == 1 and len(res.output.strip().splitlines()) == 1, res.output
    res = runner.invoke(app, ["steps", str(path), "--candidates", "-f", "csv", "--cache-dir", str(tmp_path / "c2")])
    assert res.exit_code == 0, res.output
    assert "request/decode_step" in res.output and "request/prefill" in res.output


def test_cpu_running_ahead_takes_each_step_on_the_gpus_clock(tmp_path):
    ex, truth, _ = _open(tmp_path, "graph_decode_ahead")
    steady = ex.run("analysis.steady_steps").sort("step")
    assert set(steady["clock"]) == {"period"}
    # a plain walk: each step from when the GPU had finished the work launched before it to its own GPU end
    every = truth["warmup_steps"] + truth["decode_steps"]
    expected = []
    for i, s in enumerate(every):
        done_before = max((p["gpu_end_ns"] for p in every[:i]), default=s["start_ns"])
        expected.append(max(s["end_ns"], s["gpu_end_ns"]) - max(s["start_ns"], done_before))
    assert steady["wall_ns"].to_list() == expected
    assert steady["range_wall_ns"].to_list() == [s["end_ns"] - s["start_ns"] for s in every]
    rules = set(ex.findings()["rule"].to_list())
    assert "outlier_step" not in rules  # the steady state is no outlier on the GPU's clock
    text = runner.invoke(app, ["summarize", str(ex.path), "--cache-dir", str(tmp_path / "c3")],
                         env={"COLUMNS": "80"}).output
    assert "The CPU runs ahead of the GPU" in " ".join(text.split())
    assert "Bound by: the GPU" in " ".join(text.split())  # the GPU sets the pace, not the launches


def test_without_nvtx_the_iterations_come_from_the_op_sequence_and_leave_the_load_phase_out(tmp_path):
    ex, truth, _ = _open(tmp_path, "decode_no_nvtx")
    steps = ex.steps().sort("step")
    assert set(steps["source"]) == {"kernel-pattern"}
    assert steps["start_ns"].min() > truth["load_end_ns"]  # no weight upload in any step
    # each request launches the same ops (the outer period), and inside it the decode steps repeat after the
    # prefill: the steps are the decode steps, per token, the requests the outer iterations
    decode = sorted(truth["warmup_steps"] + truth["decode_steps"], key=lambda d: d["start_ns"])
    assert steps["start_ns"].to_list() == [d["start_ns"] for d in decode]
    # an iteration ends with its last op's launching call, inside the step's time
    assert all(s < e <= d["end_ns"] for s, e, d in zip(steps["start_ns"], steps["end_ns"], decode))
    st = ex.structure().row(0, named=True)
    assert st["program_kind"] == "inference" and st["request_ops"] == truth["ops_per_request"]
    assert set(steps["period_ops"]) == {st["period_ops"]} and (steps["gpu_ops"] == st["period_ops"]).all()
    requests = ex.requests().sort("request")
    assert requests["start_ns"].to_list() == truth["request_starts"]
    assert requests["decode_steps"].to_list() == [len(truth["warmup_steps"]) // len(truth["warmup_requests"])] * \
        (len(truth["requests"]) + len(truth["warmup_requests"]))


def test_a_process_that_runs_a_backward_has_no_requests(tmp_path):
    """The same op sequence from a process with a PyTorch autograd thread is training (gradient accumulation
    repeats micro-batches inside a step the same way): its iterations stay the outer ones, no requests."""
    export, truth = shapes.decode_no_nvtx()
    export.thread(shapes.P, shapes.T + 1, "pt_autograd_0")
    ex = nsysql.open(export.write(tmp_path / "trains.sqlite"), cache_dir=tmp_path / "cache")
    steps = ex.steps()
    assert set(steps["period_ops"]) == {truth["ops_per_request"]}
    assert steps["start_ns"].to_list() == truth["request_starts"]
    assert ex.structure()["request_ops"][0] is None


def _raw_step_ranges(path) -> list[tuple[int, int]]:
    """A plain walk of NVTX_EVENTS: the push/pop ranges named like a step at the outermost depth at which any is,
    on threads that are not PyTorch's autograd threads (what the structure rules call step-named)."""
    con = sqlite3.connect(path)
    if not con.execute("SELECT 1 FROM sqlite_master WHERE name = 'NVTX_EVENTS'").fetchone():
        return []  # a capture without NVTX
    names = {i: v for i, v in con.execute("SELECT id, value FROM StringIds")}
    threads = {t: names.get(n, "") for n, t in con.execute("SELECT nameId, globalTid FROM ThreadNames")} \
        if con.execute("SELECT 1 FROM sqlite_master WHERE name = 'ThreadNames'").fetchone() else {}
    rows = con.execute("SELECT start, end, text, textId, globalTid FROM NVTX_EVENTS WHERE eventType = 59 "
                       "AND end IS NOT NULL AND (endGlobalTid IS NULL OR endGlobalTid = globalTid) "
                       "ORDER BY globalTid, start, end DESC").fetchall()
    con.close()
    found: list[tuple[int, int, int]] = []  # (depth, start, end)
    open_by_thread: dict[int, list[int]] = {}
    for start, end, text, text_id, tid in rows:
        stack = open_by_thread.setdefault(tid, [])
        while stack and stack[-1] <= start:
            stack.pop()
        label = text if text is not None else names.get(text_id, "")
        if not threads.get(tid, "").startswith("pt_autograd") and STEP_NAME.match(label or ""):
            found.append((len(stack), start, end))
        stack.append(end)
    top = min((d for d, _, _ in found), default=None)
    return sorted((s, e) for d, s, e in found if d == top)


def test_every_fixtures_steps_are_its_step_named_ranges(export_files, opened):
    checked = 0
    for ident, path in export_files.items():
        expected = _raw_step_ranges(path)
        if not expected:
            continue
        got = opened[ident].steps()
        assert sorted(zip(got["start_ns"], got["end_ns"])) == expected, ident
        checked += 1
    assert checked >= 10


def _plain_windows(path, truth) -> dict[int, tuple[int, int]]:
    """{step range start: the step's window on its clock}, by tests/plainwalk_overview.py's walk of the raw rows
    over the decode steps the program pushed (the steady_steps rules, computed apart from nsysql)."""
    from plainwalk_overview import PlainExport, plain_clock
    px = PlainExport(path)
    pushed = sorted(truth["warmup_steps"] + truth["decode_steps"], key=lambda s: s["start_ns"])
    steps = [dict(step=i, pid=shapes.P, start_ns=s["start_ns"], end_ns=s["end_ns"]) for i, s in enumerate(pushed, 1)]
    return {s["start_ns"]: s["window"] for s in plain_clock(steps, px.ops, px.call_of)}


def test_requests_against_the_program_and_the_raw_rows(tmp_path):
    ex, truth, path = _open(tmp_path, "decode_loop")
    got = ex.requests().sort("request").to_dicts()
    every = sorted(truth["warmup_requests"] + truth["requests"], key=lambda r: r["start_ns"])
    assert [(r["start_ns"], r["wall_ns"], r["warmup"]) for r in got] == \
        [(r["start_ns"], r["end_ns"] - r["start_ns"], r in truth["warmup_requests"]) for r in every]
    windows = _plain_windows(path, truth)
    steps = truth["warmup_steps"] + truth["decode_steps"]
    for row, req in zip(got, every):
        assert row["prefill_ns"] == req["prefill"]["end_ns"] - req["prefill"]["start_ns"]
        assert row["ttft_ns"] == req["prefill"]["gpu_end_ns"] - req["start_ns"]  # the first token's GPU end
        times = sorted(windows[s["start_ns"]][1] - windows[s["start_ns"]][0] for s in steps
                       if req["start_ns"] <= s["start_ns"] and s["end_ns"] <= req["end_ns"])
        assert row["decode_steps"] == len(times) and row["decode_ns"] == sum(times)
        assert row["tpot_p50_ns"] == round(statistics.median(times))
        assert row["tokens_per_s"] == pytest.approx(len(times) * 1e9 / sum(times))
    text = runner.invoke(app, ["summarize", str(path), "--cache-dir", str(tmp_path / "c4")], env={"COLUMNS": "80"})
    lines = text.output.splitlines()
    assert text.exit_code == 0 and any(line.startswith("Requests (time to first token") for line in lines)
    res = runner.invoke(app, ["requests", str(shapes_path(tmp_path, "graph_decode_ahead")), "-f", "csv",
                              "--cache-dir", str(tmp_path / "c4")])
    assert res.exit_code == 0 and res.output.splitlines()[0].startswith("request,pid,warmup,start_ns")


def shapes_path(tmp_path, case: str):
    return getattr(shapes, case)()[0].write(tmp_path / f"{case}-cli.sqlite")


def test_no_requests_is_one_line(export_files, tmp_path):
    res = runner.invoke(app, ["requests", str(export_files["gpt-tiny-forward"]), "--cache-dir", str(tmp_path)])
    assert res.exit_code == 1 and len(res.output.strip().splitlines()) == 1 and "has no requests" in res.output


def _tiling_coverage(level: list[dict], every: list[list[dict]]) -> tuple[float, float]:
    """step_candidates' two scores, worked out from the ranges the program pushed: the level's total time over its
    span, and its span over the span of every repeating level (the lists in `every`)."""
    span = max(r["end_ns"] for r in level) - min(r["start_ns"] for r in level)
    first = min(r["start_ns"] for lv in every for r in lv)
    last = max(r["end_ns"] for lv in every for r in lv)
    return sum(r["end_ns"] - r["start_ns"] for r in level) / span, span / (last - first)


def test_micro_batches_are_not_steps_and_the_scores_are_the_programs(tmp_path):
    ex, truth, _ = _open(tmp_path, "train_accum")
    steps = ex.steps()
    assert sorted(zip(steps["start_ns"], steps["end_ns"])) == [(s["start_ns"], s["end_ns"]) for s in truth["steps"]]
    cands = {r["level"]: r for r in ex.steps(candidates=True).to_dicts()}
    assert cands["profiled_step"]["rule"] == "step name"
    micro = cands["profiled_step/micro_batch_N"]
    assert (micro["steady"], micro["chosen"], micro["close"]) == (len(truth["micro_batches"]), False, False)
    # the repeating levels here: profiled_step and micro_batch_N span the same work (the phases inside them too)
    tiling, coverage = _tiling_coverage(truth["micro_batches"], [truth["steps"], truth["micro_batches"]])
    assert (micro["tiling"], micro["coverage"]) == (pytest.approx(tiling), pytest.approx(coverage))
    st = ex.structure().row(0, named=True)
    assert (st["step_level"], st["close_level"]) == ("profiled_step", None)


def test_decode_levels_are_scored_on_the_programs_ranges(tmp_path):
    ex, truth, _ = _open(tmp_path, "decode_loop")
    cands = {r["level"]: r for r in ex.steps(candidates=True).to_dicts()}
    requests, decode = truth["requests"], truth["decode_steps"]
    prefills = [r["prefill"] for r in truth["warmup_requests"] + requests]
    every = [requests, decode, [r["prefill"] for r in requests]]
    for level, rows in (("request", requests), ("request/decode_step", decode)):
        tiling, coverage = _tiling_coverage(rows, every)
        assert (cands[level]["tiling"], cands[level]["coverage"]) == (pytest.approx(tiling), pytest.approx(coverage))
    assert cands["request/prefill"]["instances"] == len(prefills)


# --- the real captures of these shapes (fixtures/gpt-decode-*, fixtures/README.md) ------------------------------
def _real(export_files, ident: str):
    if ident not in export_files:
        pytest.skip(f"fixtures/{ident} is not in this checkout")
    return export_files[ident]


def _raw_ranges(con) -> list[tuple[int, int, str]]:
    names = dict(con.execute("SELECT id, value FROM StringIds"))
    return sorted((s, e, t if t is not None else names.get(i, "")) for s, e, t, i in con.execute(
        "SELECT start, end, text, textId FROM NVTX_EVENTS WHERE eventType = 59 AND end IS NOT NULL"))


def _raw_ops(con) -> list[tuple[int, int, int, int]]:
    """(call start, call end, GPU start, GPU end) of every GPU op, by its launching call (correlationId, process)."""
    calls = {(c, (g >> 24) & 0xFFFFFF): (s, e) for s, e, c, g in con.execute(
        "SELECT start, end, correlationId, globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME")}
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    ops = []
    for table in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
                  "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"):
        if table in tables:
            for s, e, c, g in con.execute(f"SELECT start, end, correlationId, globalPid FROM {table}"):
                call = calls.get((c, (g >> 24) & 0xFFFFFF))
                if call:
                    ops.append((call[0], call[1], s, e))
    return sorted(ops)


@pytest.mark.parametrize("ident", ["gpt-decode-eager", "gpt-decode-graphs"])
def test_real_decode_steps_are_the_real_requests_decode_steps(export_files, opened, ident):
    path = _real(export_files, ident)
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    ranges = _raw_ranges(con)
    con.close()
    warm = [(s, e) for s, e, t in ranges if t == "warmup"]
    decode = [(s, e) for s, e, t in ranges if t == "decode_step"]
    real = [d for d in decode if not any(ws <= d[0] <= we for ws, we in warm)]
    ex = opened[ident]
    steady = ex.run("analysis.steady_steps")
    steps = ex.steps()
    analysed = steps.filter(steps["step"].is_in(steady.filter("analysed")["step"].implode()))
    assert sorted(zip(analysed["start_ns"], analysed["end_ns"])) == real
    assert steady.filter(~steady["analysed"]).height == len(decode) - len(real) > 0  # the warm-up request's
    st = ex.structure().row(0, named=True)
    assert (st["program_kind"], st["step_level"]) == ("inference", "request/decode_step")
    requests = ex.requests()
    assert requests.filter(~requests["warmup"]).height == sum(1 for *_, t in ranges if t == "request") - len(warm)


def test_real_graph_decode_is_timed_on_the_gpus_clock(export_files, opened):
    """Each step's period from the raw rows: from when the GPU had finished every op launched before the step (or
    the step's start, if later) to the end of its own ops' GPU work (or its range, if later)."""
    path = _real(export_files, "gpt-decode-graphs")
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    ranges, ops = _raw_ranges(con), _raw_ops(con)
    con.close()
    decode = [(s, e) for s, e, t in ranges if t == "decode_step"]
    ex = opened["gpt-decode-graphs"]
    got = {(r["start_ns"], r["end_ns"]): r["period_ns"] for r in ex.steps().iter_rows(named=True)}
    ahead = 0
    for i, (s, e) in enumerate(decode):
        nxt = decode[i + 1][0] if i + 1 < len(decode) else None
        mine = [o for o in ops if s <= o[0] and o[1] <= e and (nxt is None or o[0] < nxt)]
        done = max((o[3] for o in ops if o[0] < s), default=s)
        period = max(e, max((o[3] for o in mine), default=e)) - max(s, done)
        assert got[(s, e)] == period
        ahead += max((o[3] for o in mine), default=e) > e
    assert ahead > len(decode) / 2  # the CPU runs ahead: most steps' GPU work ends after their range
    assert ex.structure()["clock"][0] == "period"
    assert not ex.findings()["rule"].str.contains("slow").any()  # the steady state is no outlier


def _named_ops(con) -> list[tuple[int, int, int, int, str]]:
    """(call start, call end, GPU start, GPU end, name) of every kernel, copy and set in launch order: the program's
    op-name sequence (a kernel by its demangled name, a copy by its kind)."""
    names = dict(con.execute("SELECT id, value FROM StringIds"))
    calls = {(c, (g >> 24) & 0xFFFFFF): (s, e) for s, e, c, g in con.execute(
        "SELECT start, end, correlationId, globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME")}
    ops = []
    for table, name in (("CUPTI_ACTIVITY_KIND_KERNEL", "demangledName"), ("CUPTI_ACTIVITY_KIND_MEMCPY", "copyKind"),
                        ("CUPTI_ACTIVITY_KIND_MEMSET", "-1")):
        for s, e, c, g, n in con.execute(f"SELECT start, end, correlationId, globalPid, {name} FROM {table}"):
            cs, ce = calls[(c, (g >> 24) & 0xFFFFFF)]
            ops.append((cs, ce, s, e, names[n] if name == "demangledName" else f"{table[-6:]} {n}"))
    return sorted(ops)


def _nonvtx_truth(export_files) -> dict:
    """The eager capture's ranges as positions in its op sequence (the NVTX-less capture of the same program
    launches the same sequence): each request's first op, each decode step's first op and op count."""
    con = sqlite3.connect(f"file:{_real(export_files, 'gpt-decode-eager')}?mode=ro", uri=True)
    ranges, eager = _raw_ranges(con), _named_ops(con)
    con.close()
    con = sqlite3.connect(f"file:{_real(export_files, 'gpt-decode-nonvtx')}?mode=ro", uri=True)
    ops = _named_ops(con)
    con.close()
    calls = [o[0] for o in eager]

    def first(s):
        return bisect.bisect_left(calls, s)
    def count(s, e):
        return sum(1 for o in eager if s <= o[0] and o[1] <= e)
    requests = [(first(s), count(s, e)) for s, e, t in ranges if t == "request"]
    decode = [(first(s), count(s, e)) for s, e, t in ranges if t == "decode_step"]
    return {"eager": eager, "ops": ops, "requests": requests, "decode": decode}


def test_real_decode_without_nvtx_finds_the_decode_steps_the_eager_capture_marks(export_files, opened):
    """The same program as gpt-decode-eager, captured without NVTX, launches the same op sequence: the iterations
    found in it are its decode steps (the per-token period, inside the per-request one), starting at the ops the
    eager capture's decode_step ranges start at, and the load phase and prefills are in none of them."""
    truth = _nonvtx_truth(export_files)
    ops, decode = truth["ops"], truth["decode"]
    assert [o[4] for o in ops] == [o[4] for o in truth["eager"]]  # one program, one sequence
    period = {n for _, n in decode}
    assert len(period) == 1
    p = period.pop()
    for (a, _), (b, _) in zip(decode, decode[1:]):  # the period, checked by its repeats: every step alike
        assert [o[4] for o in ops[a:a + p]] == [o[4] for o in ops[b:b + p]]
    ex = opened["gpt-decode-nonvtx"]
    steps = ex.steps()
    assert set(steps["source"]) == {"kernel-pattern"} and set(steps["period_ops"]) == {p}
    at = {o[0]: i for i, o in enumerate(ops)}
    assert [at[s] for s in steps["start_ns"]] == [a for a, _ in decode]
    assert steps["end_ns"].to_list() == [ops[a + p - 1][1] for a, _ in decode]
    assert steps["gpu_ops"].to_list() == [n for _, n in decode]
    assert steps["start_ns"].min() > ops[truth["requests"][0][0]][0]  # the load phase and prefill: no step
    st = ex.structure().row(0, named=True)
    assert (st["program_kind"], st["step_source"], st["period_ops"]) == ("inference", "kernel-pattern", p)
    assert st["request_ops"] == truth["requests"][0][1]
    steady = ex.run("analysis.steady_steps")
    first_request = [i for i, (a, _) in enumerate(decode) if a < truth["requests"][1][0]]
    assert steady.filter(~steady["analysed"])["step"].to_list() == [i + 1 for i in first_request]
    assert set(steady.filter(~steady["analysed"])["excluded_because"]) == {"slow_leading_request"}


def test_real_decode_without_nvtx_requests_against_the_raw_kernel_ends(export_files, opened):
    """Per request, from the raw rows at the eager capture's request and decode-step positions: the prefill runs
    from the request's first launch to the first decode step's, TTFT to the latest GPU end of the ops launched
    between, the decode steps' times are their launch spans; `nsysql requests` on gpt-decode-eager (NVTX) has as
    many requests and decode steps each."""
    truth = _nonvtx_truth(export_files)
    ops, decode, requests = truth["ops"], truth["decode"], truth["requests"]
    got = opened["gpt-decode-nonvtx"].requests().sort("request").to_dicts()
    named = opened["gpt-decode-eager"].requests().sort("request")
    assert [r["decode_steps"] for r in got] == named["decode_steps"].to_list()
    assert [r["warmup"] for r in got] == named["warmup"].to_list() == [True] + [False] * (len(requests) - 1)
    for r, (first, n) in zip(got, requests):
        mine = [(a, c) for a, c in decode if first <= a < first + n]
        start, prefill_end = ops[first][0], ops[mine[0][0]][0]
        assert (r["start_ns"], r["wall_ns"]) == (start, ops[first + n - 1][1] - start)
        assert r["prefill_ns"] == prefill_end - start
        assert r["ttft_ns"] == max(o[3] for o in ops if start <= o[0] < prefill_end and o[1] <= prefill_end) - start
        walls = [ops[a + c - 1][1] - ops[a][0] for a, c in mine]
        assert r["decode_steps"] == len(mine) and r["decode_ns"] == sum(walls)
        assert r["tpot_p50_ns"] == round(quantile(walls, 0.5))
        assert abs(r["tpot_mean_ns"] - sum(walls) / len(walls)) <= 1
        assert abs(r["tpot_p99_ns"] - quantile(walls, 0.99)) <= 1
        busy = sum(union_length([(o[2], o[3]) for o in ops if ops[a][0] <= o[0] and o[1] <= ops[a + c - 1][1]])
                   for a, c in mine)
        assert abs(r["decode_gpu_idle_pct"] - 100 * (1 - busy / sum(walls))) < 1e-6


@pytest.mark.parametrize("ident", ["gpt-decode-eager", "gpt-decode-graphs", "gpt-decode-nonvtx"])
def test_inference_findings_assume_no_training(export_files, opened, ident):
    _real(export_files, ident)
    ex = opened[ident]
    assert ex.structure()["program_kind"][0] == "inference"
    text = ex.findings().select(pl.concat_str(["title", "evidence", "action"], separator=" ")).to_series()
    assert not text.str.contains("(?i)optimizer|dataloader|pin_memory=true|forward and loss").any()


def test_inference_advice_names_decode_steps_and_no_optimizer(export_files, opened):
    _real(export_files, "gpt-decode-eager")
    found = opened["gpt-decode-eager"].findings()
    assert {"launch_bound", "short_kernels"} <= set(found["rule"])
    assert not found["action"].str.contains("optimizer").any()
    assert found.filter(found["rule"] == "launch_bound")["action"].str.contains("decode step").all()
    trains = opened["cnn-pinned-launch-bound"].findings()  # a training program keeps the optimizer advice
    assert trains.filter(trains["rule"] == "launch_bound")["action"].str.contains("foreach optimizers").all()


def test_real_graph_decode_bubble_between_replays(export_files, opened):
    """The GPU's idle time between consecutive graph executions of a device, from the raw rows: the part of each
    stretch from one execution's end to the next one's start that no kernel, copy, set or graph covered."""
    path = _real(export_files, "gpt-decode-graphs")
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    busy = sorted(o[2:] for o in _raw_ops(con))
    graphs = sorted(con.execute("SELECT start, end FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE").fetchall())
    con.close()
    idle = []
    for (_, e0), (s1, _) in zip(graphs, graphs[1:]):
        covered, cursor = 0, e0
        for s, e in busy:  # the union of the ops inside (e0, s1), walked in start order
            lo, hi = max(s, cursor), min(e, s1)
            if hi > lo:
                covered += hi - lo
                cursor = hi
        idle.append(max(s1 - e0, 0) - covered if s1 > e0 else 0)
    got = opened["gpt-decode-graphs"].run("analysis.graph_launches").row(0, named=True)
    assert got["replay_gap_ns"] == sum(idle)
    assert got["replay_gap_median_ns"] == int(statistics.median(idle))
