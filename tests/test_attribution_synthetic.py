"""Attribution edge cases a capture rarely shows, on synthetic exports (scripts/make_synthetic.py)."""
from __future__ import annotations

import pytest

import nsysql

from conftest import make_synthetic
from plainwalk import PlainAttribution

synthetic = make_synthetic()


def table(case, tmp_path):
    path = getattr(synthetic, case)().write(tmp_path / f"{case}.sqlite")
    with nsysql.open(path, cache_dir=tmp_path / "cache") as ex:
        df = ex.kernel_table()
        rows = {r["kernel"]: r for r in df.iter_rows(named=True)}
        layers = ex.layers(analysed=False)
    plain = PlainAttribution(path).attribute()
    assert [(r["direction"], r["layer"], r["op"], r["params"], r["seq"]) for r in df.iter_rows(named=True)] == \
        [p[2:] for p in plain]
    return rows, layers


def pick(row):
    return row["direction"], row["layer"], row["op"], row["params"], row["seq"]


def test_cross_thread_backward(tmp_path):
    rows, layers = table("cross_thread_backward", tmp_path)
    assert pick(rows["gemm_fwd"]) == ("fprop", "forward_pass/layer_0", "aten::addmm",
                                      "[[768], [8, 256], [256, 768]]", 8)
    # the backward GEMM on the autograd thread names the forward op's layer and shapes
    assert pick(rows["gemm_bwd"]) == ("bprop", "forward_pass/layer_0", "AddmmBackward0",
                                      "[[768], [8, 256], [256, 768]]", 8)
    # seq 7 is shown by aten::linear and aten::t: the latest forward op with it (aten::t) gives the shapes;
    # the CCCL library range around it is no layer
    assert pick(rows["t_bwd"]) == ("bprop", "forward_pass/layer_0", "TBackward0", "[[256, 768]]", 7)
    # no marker at all on the autograd thread: the waiting main thread's range
    assert pick(rows["lone_bwd"]) == ("bprop", "backward_pass", None, None, None)
    # a node whose seq has no forward op: falls back to the waiting thread's range, not a wrong layer
    assert pick(rows["mul_bwd"]) == ("bprop", "backward_pass", "MulBackward0", None, 99)
    assert pick(rows["sgd_kernel"])[:3] == ("optim", "optimizer_step", "Optimizer.step#SGD.step")
    assert pick(rows["orphan"]) == ("other", "?", None, None, None)
    by_layer = {r["layer"]: r for r in layers.iter_rows(named=True)}
    assert by_layer["forward_pass/layer_0"]["fprop_ns"] == 500
    assert by_layer["forward_pass/layer_0"]["bprop_ns"] == 400 + 300
    assert by_layer["forward_pass/layer_0"]["bprop_ratio"] == pytest.approx(1.4)
    assert list(by_layer)[-1] == "?"


def test_directions_by_name_optimizer_and_communication(tmp_path):
    """An optimizer range is known by its usual names, in any case (`opt`, `OPT_STEP`, `AdamW.step`, ...), not by
    `opt` inside another word; NCCL's kernels are comm wherever they run (by name or inside NCCL's range), copies
    never (scripts/make_synthetic.py: direction_names)."""
    rows, layers = table("direction_names", tmp_path)
    for i, name in enumerate(synthetic.OPTIMIZER_NAMES):
        assert pick(rows[f"k_{i}"])[:2] == ("optim", name)
    for i, name in enumerate(synthetic.NOT_OPTIMIZER_NAMES, start=len(synthetic.OPTIMIZER_NAMES)):
        assert pick(rows[f"k_{i}"])[:2] == ("fprop", name)
    direction = {kernel: row["direction"] for kernel, row in rows.items()}
    comm = {k for k, d in direction.items() if d == "comm"}
    assert comm == {"ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096UL>)", "allreduce_custom",
                    "void <unnamed>::oneRankReduce<FuncPreMulSum<float>>(void *)",
                    "ncclKernel_Broadcast_RING_LL_Sum_int8_t", "ncclDevKernel_AllGather_RING_LL"}
    assert direction["[CUDA memcpy Device-to-Device]"] == "fprop" and direction["mm_bwd"] == "bprop"
    by_layer = {r["layer"]: r for r in layers.iter_rows(named=True)}
    assert (by_layer["opt"]["optim_ns"], by_layer["opt"]["comm_ns"], by_layer["opt"]["total_ns"]) == (100, 100, 200)
    fwd = by_layer["forward_pass"]  # allreduce_custom 500 + oneRankReduce 300 + the borrowed broadcast 200
    assert (fwd["fprop_ns"], fwd["bprop_ns"], fwd["comm_ns"], fwd["total_ns"]) == (400, 300, 1000, 1700)
    assert (by_layer["?"]["comm_ns"], by_layer["?"]["total_ns"]) == (100, 100)


def test_ambiguous_waiting_threads_give_unknown(tmp_path):
    rows, _ = table("ambiguous_waiting_threads", tmp_path)
    assert pick(rows["k_amb"])[:2] == ("other", "?")
    assert pick(rows["k_out"])[:2] == ("other", "?")


def test_graph_replay_takes_graph_launch_ranges(tmp_path):
    rows, _ = table("graph_launch", tmp_path)
    for name in ("g1", "g2", "g3", "k_single"):
        assert pick(rows[name])[:2] == ("fprop", "graph_step")


def test_two_processes_equal_correlation_ids(tmp_path):
    rows, _ = table("two_processes_same_correlation", tmp_path)
    assert pick(rows["kA"])[:2] == ("fprop", "a_range")
    assert pick(rows["kB"])[:2] == ("fprop", "b_range")


def test_nested_ranges(tmp_path):
    table("nested_ranges", tmp_path)  # the plain walk and nsysql agree on every op


def test_annotated_backward_takes_its_forward_layer(tmp_path):
    """nsysql.annotate's `... [backward]` ranges: the forward range's layer, never over a seq link."""
    rows, layers = table("annotated_backward", tmp_path)
    attn = "forward_pass/layer_0/model/layers.0/attention_sublayer/attn"  # the module path once
    mlp = "forward_pass/layer_0/model/layers.0/mlp"
    assert pick(rows["attn_fwd"])[:2] == ("fprop", attn)
    assert pick(rows["mlp_fwd"])[:2] == ("fprop", mlp)
    assert pick(rows["mlp_bwd"])[:2] == ("bprop", mlp)  # this step's forward, not warmup's
    assert pick(rows["attn_bwd"])[:2] == ("bprop", attn)
    assert pick(rows["mm_bwd"]) == ("bprop", mlp, "MmBackward0", "[[4, 8], [8, 8]]", 9)
    assert pick(rows["block_bwd"])[:2] == ("bprop", "forward_pass/layer_0/model/layers.0")
    assert pick(rows["embed_bwd"])[:2] == ("bprop", "model/embed")  # no forward range: the module path
    assert pick(rows["loss_bwd"])[:2] == ("bprop", "backward_pass")  # outside them: borrowed as before
    by_layer = {r["layer"]: r for r in layers.iter_rows(named=True)}
    assert (by_layer[mlp]["fprop_ns"], by_layer[mlp]["bprop_ns"]) == (400, 200 + 50)
    with nsysql.open(tmp_path / "annotated_backward.sqlite", cache_dir=tmp_path / "cache") as ex:
        links = dict(ex.sql("SELECT o.op_name, CAST(a.link AS VARCHAR) FROM gpu_op_attribution AS a "
                            "JOIN gpu_op AS o USING (op_kind, op_id)").iter_rows())
        cov = ex.attribution_coverage()
    assert {k: links[k] for k in ("mlp_bwd", "attn_bwd", "block_bwd", "embed_bwd", "mm_bwd", "loss_bwd")} == {
        "mlp_bwd": "annotated", "attn_bwd": "annotated", "block_bwd": "annotated", "embed_bwd": "annotated",
        "mm_bwd": "seq", "loss_bwd": "borrowed"}
    assert cov["by_annotated_ns"] == 200 + 400 + 100 + 100
