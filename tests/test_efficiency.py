"""`nsysql efficiency`: FLOPs, bytes and tensor-core share from op-marker shapes, by hand and by a plain reading."""
from __future__ import annotations

import ast
from collections import Counter, defaultdict

import pytest
from typer.testing import CliRunner

from nsysql.cli.app import app

from conftest import plain_attribution
from plainwalk import kernel_names, op_instances, sizes_of
from plainwalk_overview import is_tensor_core
from test_steps import open_case

runner = CliRunner()


# -- synthetic: every formula once (scripts/make_synthetic.py efficiency_ops) -------------------------
@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    ex, _ = open_case(tmp_path_factory.mktemp("eff"), "efficiency_ops")
    yield ex
    ex.close()


def test_formulas_by_hand(synthetic):
    rows = {(r["direction"], r["name"]): r for r in synthetic.efficiency().iter_rows(named=True)}
    addmm = rows[("fprop", "aten::addmm")]
    assert addmm["gflop"] * 1e9 == pytest.approx(2 * 128 * 32 * 64)  # linear's addmm: 2MKN, bias not counted
    assert (addmm["kernels"], addmm["kernel_ns"], addmm["flop_ns"]) == (2, 1100, 1100)  # gemm + split-K reduce
    assert addmm["tflops"] == pytest.approx(2 * 128 * 32 * 64 / 1100 / 1e3)
    assert addmm["tensor_core_pct"] == pytest.approx(100 * 1000 / 1100)  # the reduce is not a tensor-core kernel
    bmm = rows[("fprop", "aten::bmm")]
    assert bmm["gflop"] * 1e9 == pytest.approx(2 * 4 * 8 * 16 * 2) and bmm["tensor_core_pct"] == 0.0  # ffma SIMT
    matmul = rows[("fprop", "aten::matmul")]  # encloses the bmm: its own copy kernel counts, no FLOPs twice
    assert (matmul["kernel_ns"], matmul["gflop"], matmul["flop_ns"], matmul["tensor_core_pct"]) == \
        (100, None, None, None)
    conv = rows[("fprop", "aten::cudnn_convolution")]  # output [2,4,8,8] from relu's input_op_ids (5,0)
    assert conv["gflop"] * 1e9 == pytest.approx(2 * (2 * 4 * 8 * 8) * (3 * 3 * 3))
    assert conv["tensor_core_pct"] == 100.0
    mm = rows[("bprop", "aten::mm")]  # inside MmBackward0 on the autograd thread
    assert mm["gflop"] * 1e9 == pytest.approx(2 * 128 * 64 * 32) and mm["tensor_core_pct"] == 100.0  # nvjet
    relu, add, copy = rows[("fprop", "aten::relu")], rows[("fprop", "aten::add")], rows[("fprop", "aten::copy_")]
    assert relu["bytes"] == 4 * (512 + 512)  # float: read 512, write 512
    assert add["bytes"] == 2 * (512 + 512 + 512) and add["gb_per_s"] == pytest.approx(3072 / 100)  # BFloat16 kernel
    assert copy["bytes"] == 2 * 4 * 512  # copy_: the source read once, written once
    foreach = rows[("optim", "aten::_foreach_add_")]
    assert (foreach["gflop"], foreach["bytes"], foreach["kernel_ns"]) == (None, None, 200)
    assert set(rows) == {("fprop", n) for n in ("aten::addmm", "aten::bmm", "aten::matmul", "aten::cudnn_convolution",
                                                "aten::relu", "aten::add", "aten::copy_")} | {
        ("bprop", "aten::mm"), ("optim", "aten::_foreach_add_")}


def test_by_layer_adds_up_to_by_op(synthetic):
    for ex in (synthetic,):
        ops, layers = ex.efficiency("op"), ex.efficiency("layer")
        for col in ("instances", "kernels", "kernel_ns", "flop_ns", "bytes"):
            assert ops[col].sum() == layers[col].sum(), col
        assert ops["gflop"].sum() == pytest.approx(layers["gflop"].sum())
        assert layers["params"].null_count() == layers.height


# -- real exports against a plain reading ----------------------------------------------------------
def plain_flops(op: str, s):
    if op == "aten::mm":
        return 2 * s[0][0] * s[0][1] * s[1][1]
    if op == "aten::addmm":
        return 2 * s[1][0] * s[1][1] * s[2][1]
    if op == "aten::bmm":
        return 2 * s[0][0] * s[0][1] * s[0][2] * s[1][2]
    if op == "aten::baddbmm":
        return 2 * s[1][0] * s[1][1] * s[1][2] * s[2][2]
    return None


@pytest.mark.parametrize("ident", ["gpt-tiny-train-fp32", "gpt-tiny-train-bf16", "bert-2layer-train", "dlrm-train"])
def test_matches_plain_reading(opened, export_files, ident):
    ex, path = opened[ident], export_files[ident]
    instances = op_instances(plain_attribution(path), kernel_names(path))
    kernel_ns, flops, flop_ns, tc_ns = Counter(), Counter(), Counter(), Counter()
    for text, kernels in instances.values():
        op = text.split(",")[0]
        ns = sum(d for _, d, _ in kernels)
        kernel_ns[op] += ns
        f = plain_flops(op, ast.literal_eval(sizes_of(text)))
        if f is not None:
            flops[op] += f
            flop_ns[op] += ns
            tc_ns[op] += sum(d for _, d, name in kernels if is_tensor_core(name))
    df = ex.efficiency()
    got = defaultdict(Counter)
    for r in df.iter_rows(named=True):
        got["kernel_ns"][r["name"]] += r["kernel_ns"]
        got["flops"][r["name"]] += (r["gflop"] or 0) * 1e9
        got["flop_ns"][r["name"]] += r["flop_ns"] or 0
        got["tc_ns"][r["name"]] += (r["tensor_core_pct"] or 0) / 100 * (r["flop_ns"] or 0)
    assert dict(got["kernel_ns"]) == dict(kernel_ns)
    assert flops, "the fixture has matmuls under op markers"
    for op in flops:
        assert got["flops"][op] == pytest.approx(flops[op]), op
        assert got["flop_ns"][op] == flop_ns[op], op
        assert got["tc_ns"][op] == pytest.approx(tc_ns[op]), op


def test_tensor_core_share_fp32_vs_bf16(opened):
    # fp32 without TF32 runs cuBLAS's FFMA/SIMT kernels; bf16 autocast runs nvjet (tensor-core) GEMMs
    def share(ident):
        df = opened[ident].efficiency()
        mm = df.filter(df["name"].is_in(["aten::mm", "aten::bmm"]))
        assert mm.height > 0
        return mm, (mm["tensor_core_pct"] * mm["flop_ns"]).sum() / mm["flop_ns"].sum()

    fp32, overall = share("gpt-tiny-train-fp32")
    assert set(fp32["tensor_core_pct"]) == {0.0} and overall == 0.0
    bf16, overall = share("gpt-tiny-train-bf16")
    # every bf16 GEMM is tensor-core; only cuBLAS's split-K reduction kernels (splitKreduce_kernel) are not
    assert (bf16["tensor_core_pct"] > 50).all() and overall > 90, overall


def test_cli(export_files, cache_dir):
    path = export_files["gpt-tiny-train-bf16"]
    res = runner.invoke(app, ["efficiency", str(path), "--by", "layer", "--format", "csv", "--top", "5",
                              "--cache-dir", str(cache_dir)])
    assert res.exit_code == 0, res.output
    lines = res.output.strip().splitlines()
    assert lines[0].startswith("direction,name,params,instances") and len(lines) == 6
    res = runner.invoke(app, ["efficiency", str(export_files["gpt-tiny-train-noops"]), "--cache-dir", str(cache_dir)])
    assert res.exit_code == 1 and "emit_nvtx(record_shapes=True)" in res.output
