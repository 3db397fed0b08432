"""Activation checkpointing with gradient accumulation, on a real capture (fixtures/gpt-train-ckpt-accum: every
block checkpointed, 4 micro-batches a step). In the backward PyTorch's autograd thread re-runs each block's forward
under the block's own ranges (`attention_sublayer`, `ffn_sublayer`) with no `layer_N` around them, last block
first, and runs the block's backward right after its re-run. The truth here is a plain walk of the raw rows: the
re-run ranges on the autograd thread in order, against the `layer_N` ranges of the forward they repeat."""
from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

import nsysql

from conftest import FIXTURES, unxz

EXPORT = FIXTURES / "gpt-train-ckpt-accum" / "export.sqlite.xz"
LAYER = re.compile(r"^layer_[0-9]+$")


@pytest.fixture(scope="module")
def export(tmp_path_factory) -> Path:
    if not EXPORT.exists():
        pytest.skip(f"{EXPORT} is not in this checkout")
    return unxz(EXPORT, tmp_path_factory.mktemp("ckpt") / "export.sqlite")


def _truth(path: Path) -> tuple[list[tuple[int, int, int, str, str]], int]:
    """Per kernel launched from the autograd thread in a backward pass: (GPU start, device, duration, direction,
    block) for the kernels of a re-run (recompute, the block re-run) and those between two re-run blocks (bprop,
    the block just re-run); and the duration of every kernel launched inside a re-run range."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    names = dict(con.execute("SELECT id, value FROM StringIds"))
    autograd = {t for n, t in con.execute("SELECT nameId, globalTid FROM ThreadNames")
                if names.get(n, "").startswith("pt_autograd")}
    ranges = [(s, e, t if t is not None else names.get(i, ""), tid) for s, e, t, i, tid in con.execute(
        "SELECT start, end, text, textId, globalTid FROM NVTX_EVENTS WHERE eventType = 59 AND end IS NOT NULL "
        "ORDER BY start, end DESC")]
    roots, open_end = [], {}  # re-run blocks: autograd-thread ranges inside no other range of that thread
    for s, e, _text, tid in ranges:
        if tid in autograd:
            if open_end.get(tid, -1) <= s:
                roots.append((s, e))
                open_end[tid] = e
    layers = [(s, e, text) for s, e, text, tid in ranges if tid not in autograd and LAYER.match(text)]
    passes = [(s, e) for s, e, text, tid in ranges if tid not in autograd and text == "backward_pass"]
    forwards = [(s, e) for s, e, text, tid in ranges if tid not in autograd and text == "forward_pass"]
    calls = {}
    for corr, gtid, start in con.execute("SELECT correlationId, globalTid, start FROM CUPTI_ACTIVITY_KIND_RUNTIME"):
        calls[(corr, (gtid >> 24) & 0xFFFFFF)] = (gtid, start)
    kernels = []
    for start, end, dev, corr, gpid in con.execute(
            "SELECT start, end, deviceId, correlationId, globalPid FROM CUPTI_ACTIVITY_KIND_KERNEL"):
        gtid, call = calls[(corr, (gpid >> 24) & 0xFFFFFF)]
        kernels.append((call, gtid, start, dev, end - start))
    con.close()
    truth, rerun_ns = [], 0
    for call, gtid, _start, _dev, dur in kernels:
        if gtid in autograd and any(s <= call <= e for s, e in roots):
            rerun_ns += dur
    for p_start, p_end in passes:
        f_start, f_end = max((f for f in forwards if f[1] <= p_start), default=(0, 0))  # the pass's forward
        forward = sorted((s, text) for s, e, text in layers if f_start <= s and e <= f_end)
        blocks = [text for _, text in forward]
        in_pass = sorted((s, e) for s, e in roots if p_start <= s <= p_end)
        if not blocks or not in_pass:
            continue
        per_block = len(in_pass) // len(blocks)
        assert per_block * len(blocks) == len(in_pass)  # every block re-run, each under the same ranges
        groups = [in_pass[k * per_block:(k + 1) * per_block] for k in range(len(blocks))]
        for k, group in enumerate(groups):
            block = blocks[len(blocks) - 1 - k]  # last block first
            after = groups[k + 1][0][0] if k + 1 < len(groups) else None
            for call, gtid, start, dev, dur in kernels:
                if gtid not in autograd:
                    continue
                if any(s <= call <= e for s, e in group):
                    truth.append((start, dev, dur, "recompute", block))
                elif after is not None and group[-1][1] < call < after:
                    truth.append((start, dev, dur, "bprop", block))
    return truth, rerun_ns


def test_recompute_and_backward_are_charged_to_the_layer_they_belong_to(export, tmp_path):
    truth, _ = _truth(export)
    assert {d for *_, d, _ in truth} == {"recompute", "bprop"}
    ex = nsysql.open(export, cache_dir=tmp_path / "cache")
    table = ex.kernel_table()
    got = {(r["start_ns"], r["device"]): (r["direction"], r["layer"]) for r in table.iter_rows(named=True)}
    for direction in ("recompute", "bprop"):
        rows = [t for t in truth if t[3] == direction]
        right = sum(dur for start, dev, dur, _, block in rows
                    if got[(start, dev)][0] == direction and f"/{block}/" in f"/{got[(start, dev)][1]}/")
        share = right / sum(t[2] for t in rows)
        assert share >= 0.9, (direction, share)


def test_recompute_is_its_own_direction_in_layers_and_steps(export, tmp_path):
    _, rerun_ns = _truth(export)
    ex = nsysql.open(export, cache_dir=tmp_path / "cache")
    every = ex.layers(analysed=False)
    assert every["recompute_ns"].sum() == rerun_ns  # every kernel launched inside a re-run range, nothing else
    assert every.filter(every["recompute_ns"] > 0)["layer"].str.contains("layer_").all()  # never layer-less
    steps = ex.steps()
    assert (steps["recompute_ns"] > 0).all()
    cov = ex.attribution_coverage()
    assert cov["recompute_ns"] == rerun_ns == cov["by_rerun_ns"]


def test_layers_fold_the_micro_batches_and_keep_to_the_analysed_steps(export, tmp_path):
    ex = nsysql.open(export, cache_dir=tmp_path / "cache")
    default = ex.layers(analysed=True)
    assert not default["layer"].str.contains(r"micro_batch_[0-9]").any()
    assert default["layer"].str.contains(r"micro_batch_\*").any()
    assert not default["layer"].str.starts_with("warmup").any()  # the warm-up step is not analysed
    assert default.height <= 40
    every = ex.layers(analysed=False, fold=False)
    assert every["layer"].str.contains("micro_batch_4/").any() and every["layer"].str.starts_with("warmup").any()
    assert every["total_ns"].sum() > default["total_ns"].sum()


def _recompute_per_step(path: Path) -> list[int]:
    """Per `profiled_step` outside the warm-up, the busy time (union) of the GPU ops (kernels, copies, sets)
    launched inside a re-run range of the autograd thread during the step: a plain walk of the raw rows."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    names = dict(con.execute("SELECT id, value FROM StringIds"))
    autograd = {t for n, t in con.execute("SELECT nameId, globalTid FROM ThreadNames")
                if names.get(n, "").startswith("pt_autograd")}
    ranges = [(s, e, t if t is not None else names.get(i, ""), tid) for s, e, t, i, tid in con.execute(
        "SELECT start, end, text, textId, globalTid FROM NVTX_EVENTS WHERE eventType = 59 AND end IS NOT NULL "
        "ORDER BY start, end DESC")]
    calls = {(c, (g >> 24) & 0xFFFFFF): (g, s, e) for c, g, s, e in con.execute(
        "SELECT correlationId, globalTid, start, end FROM CUPTI_ACTIVITY_KIND_RUNTIME")}
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    kernels = [(calls[(c, (g >> 24) & 0xFFFFFF)], s, e) for table in ("KERNEL", "MEMCPY", "MEMSET")
               if f"CUPTI_ACTIVITY_KIND_{table}" in tables
               for s, e, c, g in con.execute(f"SELECT start, end, correlationId, globalPid FROM CUPTI_ACTIVITY_KIND_{table}")]
    con.close()
    warm = [(s, e) for s, e, t, tid in ranges if "warmup" in t.lower()]
    steps = [(s, e) for s, e, t, tid in ranges if t == "profiled_step" and not any(a <= s < b for a, b in warm)]
    reruns = [(s, e) for s, e, t, tid in ranges if tid in autograd]
    out = []
    for s, e in steps:
        spans = sorted((ks, ke) for (gtid, cs, ce), ks, ke in kernels
                       if gtid in autograd and s <= cs and ce <= e and any(a <= cs <= b for a, b in reruns))
        total, end = 0, None
        for a, b in spans:  # the union, in start order
            if end is None or a > end:
                total, end = total + b - a, b
            elif b > end:
                total, end = total + b - end, b
        out.append(total)
    return out


def test_recompute_finding_costs_what_the_reruns_take(export, tmp_path):
    per_step = _recompute_per_step(export)
    ex = nsysql.open(export, cache_dir=tmp_path / "cache")
    found = ex.findings()
    row = found.filter(found["rule"] == "recompute").row(0, named=True)
    assert row["recoverable_ns"] == sum(per_step) > 0
    assert "layer_0" in row["where"] and "layer_1" in row["where"]  # the blocks re-run, by their forward ranges
    assert "selective" in row["action"] and "every other block" in row["action"] and "memory" in row["action"]


def test_no_recompute_finding_without_checkpointing(export_files, opened):
    found = opened["gpt-tiny-train-bf16"].findings()
    assert "recompute" not in set(found["rule"])
