"""Backward inference (gpu_op_attribution rule 7, link `inferred`) against the ground truth of the same capture.

The fixtures bwdtruth-* run plain profiled steps, then one under PyTorch's op markers (`--op-ranges-last`):
the marked step's seq link gives, by a plain walk of the raw rows (tests/plainwalk.py), the true layer of each
backward op; the plain steps run the same ops in the same order. Issue 16's goal: >= 90 % of backward kernel
time on the true layer path (the true layer or a range enclosing it), <= 1 % on a wrong one.
"""
from __future__ import annotations

import pytest
from typer.testing import CliRunner

from plainwalk import PlainBackwardTruth

TRANSFORMERS = ["bwdtruth-gpt-tiny", "bwdtruth-bert", "bwdtruth-hf-gpt2"]  # gpt-small: the bench (slow walk)
TRUTH = TRANSFORMERS + ["bwdtruth-resnet18"]


def _nsysql_rows(ex) -> dict:
    df = ex.sql("SELECT a.op_kind, a.op_id, CAST(a.link AS VARCHAR) AS link, a.confidence, u.layer "
                "FROM gpu_op_attribution AS a LEFT JOIN user_range AS u ON u.range_id = a.layer_range_id")
    return {(k, i): (link, conf, layer) for k, i, link, conf, layer in df.iter_rows()}


def _on_path(inferred: str, truth: str) -> bool:
    return truth == inferred or truth.startswith(inferred + "/")


@pytest.fixture(scope="module")
def measured(opened, export_files):
    out = {}
    for name in TRUTH:
        truth = PlainBackwardTruth(export_files[name])
        rows = _nsysql_rows(opened[name])
        kernel = assigned = correct = wrong = 0
        for ops in truth.plain:
            assert truth.same_as_marked(ops), f"{name}: a plain step ran other kernels than the marked one"
            for op, true_layer in zip(ops, truth.truth):
                link, _conf, layer = rows[op["key"]]
                if op["key"][0] != "kernel":
                    continue
                kernel += op["duration_ns"]
                if link == "inferred":
                    assigned += op["duration_ns"]
                    if true_layer is not None:
                        correct += op["duration_ns"] if _on_path(layer, true_layer) else 0
                        wrong += 0 if _on_path(layer, true_layer) else op["duration_ns"]
        out[name] = dict(truth=truth, rows=rows, kernel=kernel, assigned=assigned, correct=correct, wrong=wrong)
    return out


@pytest.mark.parametrize("name", TRUTH)
def test_no_backward_kernel_on_a_wrong_layer(measured, name):
    m = measured[name]
    assert len(m["truth"].plain) == 2 and m["kernel"] > 0
    assert m["assigned"] > 0
    assert m["wrong"] == 0, f"{name}: {100 * m['wrong'] / m['kernel']:.2f} % of backward kernel time on a wrong layer"


@pytest.mark.parametrize("name", TRUTH)
def test_every_model_meets_the_goal(measured, name):
    m = measured[name]
    assert m["correct"] >= 0.9 * m["kernel"], f"{name}: {100 * m['correct'] / m['kernel']:.1f} % correct"


def test_a_block_owing_a_product_takes_the_next_one(measured):
    """Rule 7's owed products (docs/attribution.md, item 5): ResNet-18's stage_3 and stage_4 begin with a
    stride-2 convolution whose input gradient has the previous stage's shape. Its backward runs last in the
    stage's, after a kernel placed in the stage whose evidence names only later forward ops, so the first
    convolution kernel after that is the stage's own: every data-gradient kernel the truth walk puts in
    `stage_N/block_0/conv1` is inferred to stage_N. The classifier's backward runs between the loss's and
    stage_4's and its forward ran a matrix product: the first matrix product there is `head`'s."""
    m = measured["bwdtruth-resnet18"]
    truth, rows = m["truth"], m["rows"]
    for stage in ("stage_3", "stage_4"):
        first_conv = [op for ops in truth.plain for op, t in zip(ops, truth.truth)
                      if t == f"forward_pass/{stage}/block_0/conv1" and "dgrad" in op["signature"][0]]
        assert len(first_conv) == len(truth.plain), f"{stage}: one data-gradient kernel per pass expected"
        assert all(rows[op["key"]][0] == "inferred" and _on_path(rows[op["key"]][2], f"forward_pass/{stage}")
                   for op in first_conv)
    for ops in truth.plain:
        head = [op for op, t in zip(ops, truth.truth) if t == "forward_pass/head" and "gemm" in op["signature"][0]]
        assert head and rows[head[0]["key"]][:3:2] == ("inferred", "forward_pass/head")


@pytest.mark.parametrize("name", TRUTH)
def test_ops_between_blocks_go_to_a_layer_around_them(measured, name):
    """An inferred layer is a block or a range holding blocks, never the range around the whole forward
    (`forward_pass`, directly in the step), which would make any backward kernel 'correct'. The stack's
    parent is charged only where the truth walk has every such kernel under it."""
    m = measured[name]
    truth = m["truth"]
    inferred = {key: layer for key, (link, _conf, layer) in m["rows"].items() if link == "inferred"}
    assert inferred and "forward_pass" not in inferred.values()
    if name != "bwdtruth-resnet18":
        return
    on_stage = [(op, t) for ops in truth.plain for op, t in zip(ops, truth.truth)
                if inferred.get(op["key"]) == "forward_pass/stage_1"]
    assert on_stage, "no kernel between two of stage_1's blocks was charged to stage_1"
    assert all(t is not None and t.startswith("forward_pass/stage_1/") for _op, t in on_stage)


@pytest.mark.parametrize("name", TRUTH)
def test_inference_touches_only_borrowed_backward_ops(measured, name):
    """Never over a seq link, an annotation or an op's own range: every inferred row is one the plain walk
    of rules 1-6 charges to a range borrowed from the thread waiting in backward() (backward_pass, or warmup
    in the warm-up step); an inferred row has a confidence in (0, 1], any other none."""
    m = measured[name]
    assert all(m["rows"][op["key"]][0] != "inferred" for op in m["truth"].marked)
    inferred = {key: conf for key, (link, conf, _layer) in m["rows"].items() if link == "inferred"}
    assert inferred and all(0 < conf <= 1 for conf in inferred.values())
    assert all(conf is None for link, conf, _ in m["rows"].values() if link != "inferred")
    plain = m["truth"].rows
    assert {plain[key] for key in inferred} <= {("bprop", "backward_pass", None), ("bprop", "warmup", None)}


def test_annotated_capture_needs_no_inference(opened):
    """nsysql.annotate's backward ranges already charge the layers: nothing there is inferred."""
    cov = opened["gpt-tiny-train-annotated"].attribution_coverage()
    assert cov["by_annotated_ns"] > 0 and cov["by_inferred_ns"] == 0


@pytest.mark.parametrize("name", TRUTH)
def test_coverage_counts_the_inferred_kernel_time(opened, measured, name):
    m = measured[name]
    durations = m["truth"].durations
    inferred = sum(durations[key] for key, (link, *_rest) in m["rows"].items() if link == "inferred" and key[0] == "kernel")
    assert opened[name].attribution_coverage()["by_inferred_ns"] == inferred > 0


def test_layers_shows_backward_per_layer_and_says_what_was_inferred(export_files, tmp_path):
    from nsysql.cli.app import app
    res = CliRunner().invoke(app, ["layers", str(export_files["bwdtruth-gpt-tiny"]), "--depth", "2", "-f", "csv",
                                   "-o", str(tmp_path / "l.csv"), "--cache-dir", str(tmp_path / "c")])
    assert res.exit_code == 0, res.output
    assert "of backward inferred from the repeated layers" in res.stderr
    import polars as pl
    df = pl.read_csv(tmp_path / "l.csv")
    for n in (0, 1):
        row = df.filter(pl.col("layer") == f"forward_pass/layer_{n}").row(0, named=True)
        assert 1.2 < row["bprop_ratio"] < 3.5  # the seed's "backward about twice the forward"
