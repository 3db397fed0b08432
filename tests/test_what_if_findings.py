"""A finding's predicted gain is its own cause removed (issue 41): a per-thread cause (a launch-bound thread, its
synchronizations, its copies, its data loading) is removed on the finding's threads only, and two findings share
a replay only when their scales are equal."""
from __future__ import annotations

import sqlite3

import polars as pl
import pytest

import nsysql
from nsysql.answers import what_if as wi
from nsysql.answers.findings import run_findings

from conftest import FIXTURES, unxz


@pytest.fixture(scope="module")
def opened(tmp_path_factory, cache_dir):
    handles, plain = {}, {}

    def get(name: str):
        if name not in handles:
            path = FIXTURES / name / "export.sqlite.xz"
            if not path.exists():
                pytest.skip(f"fixtures/{name} absent")
            plain[name] = unxz(path, tmp_path_factory.mktemp(name) / "export.sqlite")
            handles[name] = nsysql.open(plain[name], cache_dir=cache_dir)
        return handles[name], plain[name]
    yield get
    for h in handles.values():
        h.close()


def _replays(monkeypatch, ex, findings) -> tuple[list[int | None], list[tuple]]:
    """predicted_gains of `findings`, and the scales of every replay it ran."""
    calls: list[tuple] = []
    real = wi.step_times

    def recording(export, scales, *a, **k):
        calls.append(tuple(scales))
        return real(export, scales, *a, **k)
    monkeypatch.setattr(wi, "step_times", recording)
    return wi.predicted_gains(ex, findings, 2.0), calls


@pytest.mark.parametrize("name", ["cnn-dataloader-train", "ddp-2gpu-torchrun", "fsdp-2gpu-torchrun",
                                  "cnn-pinned-launch-bound"])
def test_findings_share_a_replay_only_when_their_scales_are_equal(name, opened, monkeypatch):
    ex, _ = opened(name)
    found = run_findings(ex, gains=False, causes=True)
    scales = wi.finding_scales([ex], found, 2.0)
    gains, calls = _replays(monkeypatch, ex, found)
    assert len(calls) == len(set(calls)), calls  # each distinct cause replayed once
    modelled = [tuple(s) for s in scales if s]
    assert set(calls) == set(modelled)  # ... and nothing else
    rows = found.to_dicts()
    for i, a in enumerate(rows):
        for j in range(i + 1, len(rows)):
            b = rows[j]
            if scales[i] and scales[j] and (a["rule"], a["_threads"]) != (b["rule"], b["_threads"]):
                assert scales[i] != scales[j], (a, b)


def test_two_launch_bound_threads_each_get_their_own_gain(opened):
    """cnn-dataloader-train has two launch-bound threads (the step's and autograd's): each finding's replay
    removes the CUDA-call time of its thread only, so their gains differ (both were 31.6 ms before issue 41: every
    thread's calls removed for each), and the calls it removes are that thread's calls, counted from the raw rows."""
    ex, path = opened("cnn-dataloader-train")
    found = ex.findings()
    lb = found.filter(pl.col("rule") == "launch_bound")
    assert lb.height == 2
    gains = lb["predicted_gain_ns"].to_list()
    assert None not in gains and gains[0] != gains[1] and min(gains) > 0, lb
    everyone = wi.saved_ns(wi.step_times(ex, [wi.Scale("api", "*", 0.0)], budget=None))
    assert max(gains) < everyone  # one thread's calls save less than every thread's
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    steps = ex.run("analysis.steady_steps").filter(pl.col("analysed"))
    lo, hi = int(steps["start_ns"].min()), int(steps["end_ns"].max())
    for row in lb.iter_rows(named=True):
        (tid,) = wi.cause_threads("launch_bound", row["where"])
        (scales,) = wi.finding_scales([ex], pl.DataFrame([row]), None)
        df = wi.step_times(ex, scales, matched=True)
        matched = sum(m[0]["items"] for m in df["matched"])
        raw = con.execute("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE globalTid & 16777215 = ? "
                          "AND start >= ? AND start < ?", (tid, lo, hi)).fetchone()[0]
        assert 0 < matched <= raw, (tid, matched, raw)  # (a driver call inside a runtime call is part of it)
        assert wi.saved_ns(df) == row["predicted_gain_ns"] or row["predicted_gain_ns"] == row["recoverable_ns"]


def test_a_jobs_finding_removes_its_cause_on_every_rank_it_fired_on(opened):
    """The DDP job's launch-bound finding fired on both ranks' threads: its cause is all of them."""
    ex, _ = opened("ddp-2gpu-torchrun")
    found = run_findings(ex, causes=True)
    (lb,) = found.filter(pl.col("rule") == "launch_bound").iter_rows(named=True)
    pids = set(ex.run("analysis.steady_steps")["pid"].to_list())
    assert pids <= set(lb["_threads"]), lb  # each rank's main thread (tid = pid) among them
