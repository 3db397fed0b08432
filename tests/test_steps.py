"""`nsysql steps`: synthetic cases worked out by hand, real exports against a plain reading (plainwalk)."""
from __future__ import annotations

import pytest
from typer.testing import CliRunner

import nsysql
from nsysql.cli.app import app

from conftest import make_synthetic, plain_attribution
from plainwalk import PlainAttribution, ops_in_steps, plain_steps, top_level_user_ranges, union_length

# the plain walk of every golden export: dealt out first under xdist (conftest.py)
pytestmark = pytest.mark.heavy

runner = CliRunner()
synth = make_synthetic()


def open_case(tmp_path, name):
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = getattr(synth, name)().write(tmp_path / f"{name}.sqlite")
    return nsysql.open(path, cache_dir=tmp_path / "cache"), path


# -- synthetic: numbers from the case docstrings in scripts/make_synthetic.py ------------------------
def test_pattern_steps(tmp_path):
    ex, _ = open_case(tmp_path, "steps_pattern")
    rows = ex.steps().to_dicts()
    assert [(r["step"], r["name"], r["source"], r["tid"], r["start_ns"], r["end_ns"], r["wall_ns"]) for r in rows] == [
        (1, "forward_pass", "pattern", 100, 1000, 3500, 2500),
        (2, "forward_pass", "pattern", 100, 4000, 7200, 3200),
    ]
    # warm-up kernel and the kernel launched between the steps are in no step; the autograd thread's
    # repeating grad_hook ranges make no steps of their own
    assert [(r["gpu_ops"], r["kernels"], r["off_thread_ops"], r["gpu_busy_ns"]) for r in rows] == [
        (4, 4, 2, 1100), (4, 3, 1, 1000)]
    assert rows[0]["gpu_busy_pct"] == pytest.approx(44.0)
    # directions: forward_pass -> fprop, the autograd thread -> bprop, optimizer_step -> optim
    assert [(r["fprop_ns"], r["bprop_ns"], r["optim_ns"], r["other_ns"]) for r in rows] == [
        (300, 600, 200, 0), (400, 400, 200, 0)]
    ex.close()


def test_named_steps(tmp_path):
    ex, _ = open_case(tmp_path, "steps_named")
    rows = ex.steps().to_dicts()
    assert [(r["name"], r["source"], r["start_ns"], r["end_ns"]) for r in rows] == [
        ("ProfilerStep#1", "range", 1000, 3000), ("ProfilerStep#2", "range", 3000, 5000),
        ("Iteration 7", "range", 6000, 7000)]
    assert [(r["gpu_ops"], r["off_thread_ops"], r["gpu_busy_ns"]) for r in rows] == [
        (2, 1, 700), (1, 0, 100), (2, 0, 300)]
    ex.close()


def test_no_steps(tmp_path):
    ex, path = open_case(tmp_path, "no_steps")
    assert ex.steps().is_empty()
    ex.close()
    res = runner.invoke(app, ["steps", str(path), "--cache-dir", str(tmp_path / "cache")])
    assert res.exit_code == 1
    assert "has no steps" in res.output and "Traceback" not in res.output


# -- real exports ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def cases(export_files, opened):
    return {ident: (opened[ident], plain_attribution(path)) for ident, path in export_files.items()}


def test_steps_match_plain_reading(cases):
    checked = 0
    for ident, (ex, pa) in cases.items():
        if ident in PROGRAM_SHAPES:
            continue
        expected = plain_steps(pa)
        got = ex.steps().to_dicts()
        assert [(r["step"], r["name"], r["source"], r["pid"], r["start_ns"], r["end_ns"]) for r in got] == \
               [(s["step"], s["name"], s["source"], s["pid"], s["start"], s["end"]) for s in expected], ident
        ops = ops_in_steps(pa, expected)
        direction = {(kind, rowid): d for kind, rowid, d, *_ in pa.attribute()}
        for i, row in enumerate(got):
            mine = ops.get(i, [])
            step_gtid = expected[i]["gtid"]
            assert row["gpu_ops"] == len(mine), ident
            assert row["kernels"] == sum(1 for o in mine if o[0] == "kernel"), ident
            assert row["off_thread_ops"] == sum(1 for o in mine if o[4] != step_gtid), ident
            assert row["gpu_busy_ns"] == union_length([(o[2], o[3]) for o in mine]), ident
            for d in ("fprop", "bprop", "optim", "comm", "other", "recompute"):
                assert row[f"{d}_ns"] == union_length([(o[2], o[3]) for o in mine if direction[(o[0], o[1])] == d]), \
                    (ident, d)
            checked += 1
    assert checked >= 6


# fixtures captured by their own small programs, not capture/workload.py (fixtures/README.md): iter_N ranges
NOT_WORKLOAD = {"um-faults", "um-faults-syscall", "mpi-2rank"}
# programs whose steps are no top-level step-named ranges (decode steps inside requests, no NVTX): the structure
# rules choose them, and tests/test_program_shapes.py checks them against the ranges and ops of the program
PROGRAM_SHAPES = {"gpt-decode-eager", "gpt-decode-graphs", "gpt-decode-nonvtx"}


def test_fixture_steps_are_the_profiled_steps_not_the_backward_burst(cases):
    # capture/workload.py: top-level model_init, warmup, one profiled_step per --steps, result; the backward
    # of every step runs on pt_autograd_0, which must not add steps
    for ident, (ex, pa) in cases.items():
        if ident.startswith("shared") or ident in NOT_WORKLOAD | PROGRAM_SHAPES:
            continue
        df = ex.steps()
        profiled = [r for r in top_level_user_ranges(pa) if r["text"] == "profiled_step"]
        assert profiled and df["name"].to_list() == ["profiled_step"] * len(profiled), ident
        # each process's steps in its own order (one export of several ranks: step k of every rank, then k + 1)
        for pid in {r["pid"] for r in profiled}:
            mine = df.filter(df["pid"] == pid)
            assert mine["start_ns"].to_list() == sorted(r["start"] for r in profiled if r["pid"] == pid), ident
            assert mine["step"].to_list() == list(range(1, mine.height + 1)), ident
        assert df["source"].to_list() == ["range"] * len(profiled)
        if "train" in ident:
            assert df["off_thread_ops"][0] > 0 and df["bprop_ns"][0] > 0, ident  # autograd work counted


def test_steps_cli_csv(export_files, cache_dir):
    path = export_files["gpt-tiny-train-fp32"]
    res = runner.invoke(app, ["steps", str(path), "--format", "csv", "--cache-dir", str(cache_dir)])
    assert res.exit_code == 0, res.output
    header, row = res.output.strip().splitlines()
    assert header.split(",")[:3] == ["step", "name", "source"]
    assert row.startswith("1,profiled_step,range,")


# -- several processes: each numbers its own steps (synthetic: no real capture of that shape, see two_ranks) -----
def test_each_process_numbers_its_own_steps(tmp_path):
    ex, path = open_case(tmp_path, "two_ranks")
    rows = ex.steps().to_dicts()
    # (step, pid) order; the ranks' steps run at the same time, so one global sequence would interleave them
    assert [(r["step"], r["pid"], r["start_ns"], r["end_ns"]) for r in rows] == [
        (1, 100, 1000, 2000), (1, 200, 1100, 2100), (2, 100, 2000, 3000), (2, 200, 2100, 3100),
        (3, 100, 3000, 4000), (3, 200, 3100, 4200)]
    assert {(r["gpu_ops"], r["kernels"], r["gpu_busy_ns"]) for r in rows} == {(2, 2, 750)}  # docstring: each rank
    pa = PlainAttribution(path)
    expected = plain_steps(pa)
    assert [(r["step"], r["pid"], r["start_ns"], r["end_ns"]) for r in rows] == \
           [(s["step"], s["pid"], s["start"], s["end"]) for s in expected]
    ops = ops_in_steps(pa, expected)
    assert [r["gpu_busy_ns"] for r in rows] == [union_length([(o[2], o[3]) for o in ops[i]]) for i in range(6)]
    ex.close()


def test_a_real_two_rank_capture_numbers_each_rank_from_one(cases):
    # fixtures/mpi-2rank: two MPI ranks, each with its own step_0..step_2 ranges; the plain walk above checks the
    # rows, this that the capture really has that shape
    if "mpi-2rank" not in cases:
        pytest.skip("fixtures/mpi-2rank absent")
    ex, pa = cases["mpi-2rank"]
    rows = ex.steps().to_dicts()
    ranks = sorted({pa_range["pid"] for pa_range in top_level_user_ranges(pa) if pa_range["text"].startswith("step_")})
    assert len(ranks) == 2
    for pid in ranks:
        mine = [r for r in rows if r["pid"] == pid]
        assert [r["step"] for r in mine] == [1, 2, 3] and [r["name"] for r in mine] == ["step_0", "step_1", "step_2"]


def test_steps_table_shows_the_pid_when_several_processes_have_steps(tmp_path):
    path = synth.two_ranks().write(tmp_path / "two_ranks.sqlite")
    res = runner.invoke(app, ["steps", str(path), "--cache-dir", str(tmp_path / "cache")], env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    head = res.output.splitlines()[2].split()
    assert head[:3] == ["step", "name", "pid"]  # not hidden to fit, though optional on a one-process export
    one = synth.steps_named().write(tmp_path / "one.sqlite")
    res = runner.invoke(app, ["steps", str(one), "--cache-dir", str(tmp_path / "cache")], env={"COLUMNS": "80"})
    assert "pid" not in res.output.splitlines()[2].split()
