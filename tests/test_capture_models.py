"""The seed models on CPU: they run forward/backward, and emit exactly the seed's ranges."""
from __future__ import annotations

import contextlib
import math

import pytest

torch = pytest.importorskip("torch")

from capture import nvtx, workload  # noqa: E402
from capture.models import GPT_SIZES, load  # noqa: E402

EMIT_NVTX = "[emit_nvtx]"  # marks where the workload enters nvtx.op_ranges(True)

# Tiny CPU configurations of every model (seed sizes stay the defaults).
TINY = {
    "gpt": ["--size", "tiny", "--batch", "2", "--seq", "16", "--vocab", "100"],
    "bert": ["--layers", "2", "--hidden", "32", "--heads", "4", "--intermediate", "64",
             "--vocab", "100", "--max-positions", "32", "--batch", "2", "--seq", "16"],
    "ncf": ["--users", "40", "--items", "30", "--batch", "16"],
    "dlrm": ["--rows", "20", "--rows-step", "1", "--batch", "8"],
}


class Recorder:
    """Stands in for capture.nvtx's push/pop/op_ranges and records a tree of range names."""

    def __init__(self) -> None:
        self.root: list[tuple[str, list]] = []
        self.stack = [self.root]

    def push(self, name: str) -> None:
        node: tuple[str, list] = (name, [])
        self.stack[-1].append(node)
        self.stack.append(node[1])

    def pop(self) -> None:
        assert len(self.stack) > 1, "pop without a matching push"
        self.stack.pop()

    def op_ranges(self, enabled: bool):
        if not enabled:
            return contextlib.nullcontext()
        return nvtx.range(EMIT_NVTX)


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> Recorder:
    rec = Recorder()
    monkeypatch.setattr(nvtx, "push", rec.push)
    monkeypatch.setattr(nvtx, "pop", rec.pop)
    monkeypatch.setattr(nvtx, "op_ranges", rec.op_ranges)
    return rec


def leaf(name: str) -> tuple[str, list]:
    return (name, [])


GPT_ATTENTION = [
    leaf("attention projections"),
    leaf("rope encoding"),
    leaf("causal mask construction"),
    ("scaled_dot_product_attention", [
        ("annotated_scaled_dot_product_attention", [
            leaf("computing attention scores"),
            leaf("computing softmax"),
            leaf("final matmul"),
        ]),
    ]),
    leaf("output projection"),
]


def gpt_forward(layers: int) -> list:
    return ([leaf("token_embeddings")]
            + [(f"layer_{i}", [("attention_sublayer", GPT_ATTENTION), leaf("ffn_sublayer")])
               for i in range(layers)]
            + [leaf("final_norm"), leaf("lm_head")])


def bert_forward(layers: int) -> list:
    return ([leaf("embeddings")]
            + [(f"layer_{i}", [("attention_sublayer", [leaf("computing softmax")]),
                               leaf("ffn_sublayer")])
               for i in range(layers)]
            + [leaf("mlm_head")])


NCF_FORWARD = [
    leaf("MF_User_Embedding"), leaf("MF_Item_Embedding"), leaf("GMF"),
    leaf("MLP_User_Embedding"), leaf("MLP_Item_Embedding"), leaf("MLP_Concat"),
    ("MLP_0", [leaf("Dropout")]), ("MLP_1", [leaf("Dropout")]), ("MLP_2", [leaf("Dropout")]),
    leaf("NeuMF_Concat"), leaf("NeuMF_MLP"),
]

DLRM_FORWARD = ([leaf("Bottom_MLP")] + [leaf(f"Embedding_{i}") for i in range(26)]
                + [leaf("Interaction"), leaf("Concat"), leaf("Top_MLP")])

FORWARD = {"gpt": gpt_forward(2), "bert": bert_forward(2), "ncf": NCF_FORWARD,
           "dlrm": DLRM_FORWARD}
LOSS_RANGE = {"gpt": "loss_computation", "bert": "loss_computation", "ncf": "Loss",
              "dlrm": "Loss"}


def expected_tree(model: str, mode: str, warmup: int, steps: int, op_ranges: bool = True) -> list:
    phases = [("forward_pass", FORWARD[model])]
    if mode in ("backward", "train"):
        phases += [leaf(LOSS_RANGE[model]), leaf("backward_pass")]
    if mode == "train":
        phases.append(leaf("optimizer_step"))
    tree = [leaf("model_init")]
    tree += [("warmup", FORWARD[model] * warmup)] if warmup else []
    profiled = [("profiled_step", phases)] * steps
    return tree + ([(EMIT_NVTX, profiled)] if op_ranges else profiled) + [leaf("result")]


def run_tiny(model: str, *extra: str) -> dict:
    args = workload.parse_args([model, *TINY[model], "--device", "cpu", *extra])
    return workload.run(args, echo=lambda line: None)


@pytest.mark.parametrize("mode", ["forward", "backward", "train"])
@pytest.mark.parametrize("model", ["gpt", "bert", "ncf", "dlrm"])
def test_ranges_and_nesting(recorder: Recorder, model: str, mode: str) -> None:
    result = run_tiny(model, "--mode", mode, "--warmup", "1", "--steps", "1")
    assert recorder.stack == [recorder.root], "unbalanced push/pop"
    assert recorder.root == expected_tree(model, mode, warmup=1, steps=1)
    if mode == "forward":
        assert math.isfinite(result["output_mean"])
    else:
        assert math.isfinite(result["loss"])


def test_gpt_tiny_train_tree_spelled_out(recorder: Recorder) -> None:
    run_tiny("gpt", "--mode", "train", "--warmup", "0", "--steps", "1")
    [init, (emit, [(step, phases)]), result] = recorder.root
    assert (init, result) == (leaf("model_init"), leaf("result"))
    assert (emit, step) == (EMIT_NVTX, "profiled_step")
    assert [name for name, _ in phases] == [
        "forward_pass", "loss_computation", "backward_pass", "optimizer_step"]
    forward = phases[0][1]
    assert [name for name, _ in forward] == [
        "token_embeddings", "layer_0", "layer_1", "final_norm", "lm_head"]
    attention = forward[1][1][0]
    assert attention[0] == "attention_sublayer"
    assert attention[1][0] == ("attention projections", [])


def test_warmup_and_steps_counts_and_no_op_ranges(recorder: Recorder) -> None:
    run_tiny("ncf", "--mode", "train", "--warmup", "2", "--steps", "3", "--no-op-ranges")
    assert recorder.root == expected_tree("ncf", "train", warmup=2, steps=3, op_ranges=False)


def test_bf16_autocast_runs_with_same_ranges(recorder: Recorder) -> None:
    result = run_tiny("gpt", "--mode", "train", "--dtype", "bf16", "--warmup", "1")
    assert recorder.root == expected_tree("gpt", "train", warmup=1, steps=1)
    assert math.isfinite(result["loss"])


def test_fixed_seed_gives_the_same_loss() -> None:
    first = run_tiny("gpt", "--mode", "backward", "--warmup", "0")
    second = run_tiny("gpt", "--mode", "backward", "--warmup", "0")
    other = run_tiny("gpt", "--mode", "backward", "--warmup", "0", "--seed", "1")
    assert first["loss"] == second["loss"]
    assert first["loss"] != other["loss"]


@pytest.mark.parametrize("model", ["gpt", "bert", "ncf", "dlrm"])
def test_backward_reaches_every_parameter(model: str) -> None:
    module = load(model)
    args = workload.parse_args([model, *TINY[model], "--device", "cpu"])
    torch.manual_seed(0)
    net = module.build(args)
    batch = module.make_batch(args, torch.Generator().manual_seed(0))
    output = module.forward(net, batch)
    expected_shape = {"gpt": (2, 16, 100), "bert": (2, 16, 100), "ncf": (16, 1), "dlrm": (8, 1)}
    assert tuple(output.shape) == expected_shape[model]
    module.loss(output, batch).backward()
    missing = [name for name, p in net.named_parameters()
               if p.grad is None or not torch.isfinite(p.grad).all()]
    assert missing == []


def test_gpt_sizes_are_the_issue_table() -> None:
    assert GPT_SIZES == {
        "tiny": (64, 256, 2, 4), "small": (768, 3072, 12, 12), "medium": (1024, 4096, 24, 16),
        "large": (1280, 5120, 36, 20), "xl": (1600, 6400, 48, 25),
        "2.7B": (2560, 10240, 32, 32)}


def test_gpt_2_7b_matches_the_seed_weight_bytes() -> None:
    # Seed 003 copies 13,627.402 MB host-to-device: the fp32 weights (plus 0.16 MB of RoPE
    # tables). Built on the meta device, so no memory is used.
    module = load("gpt")
    args = workload.parse_args(["gpt", "--size", "2.7B", "--seq", "512"])
    with torch.device("meta"):
        net = module.build(args)
    params = sum(p.numel() for p in net.parameters())
    assert params == 3_406_809_600
    assert abs(params * 4 / 1e6 - 13_627.402) < 0.2


def test_model_defaults_are_the_seed_sizes() -> None:
    ncf = workload.parse_args(["ncf"])
    assert (ncf.users, ncf.items, ncf.mf_dim, ncf.mlp_dim, ncf.batch) == (
        138493, 26744, 64, 128, 1048576)
    dlrm = workload.parse_args(["dlrm"])
    assert load("dlrm").table_rows(dlrm) == [100000 + 100 * i for i in range(26)]
    assert (dlrm.dense, dlrm.batch) == (13, 32768)
    bert = workload.parse_args(["bert"])
    assert (bert.layers, bert.hidden, bert.heads, bert.intermediate, bert.vocab,
            bert.max_positions, bert.type_vocab, bert.batch, bert.seq) == (
        2, 1024, 16, 4096, 30522, 512, 2, 4, 128)
    gpt = workload.parse_args(["gpt"])
    assert (gpt.vocab, gpt.seq, gpt.batch, gpt.warmup, gpt.steps, gpt.op_ranges) == (
        10000, 512, 4, 3, 1, True)


def test_dlrm_interaction_width() -> None:
    # 27 vectors -> 351 pairs, + 128 bottom features = 479, padded to 480 (seed 001)
    args = workload.parse_args(["dlrm", "--rows", "10", "--rows-step", "1"])
    net = load("dlrm").build(args)
    assert net.top[0].in_features == 480
    assert len(net.embeddings) == 26


def test_python_m_capture_rejects_options_of_other_models() -> None:
    with pytest.raises(SystemExit):
        workload.parse_args(["gpt", "--users", "10"])
    with pytest.raises(SystemExit):
        workload.parse_args(["ncf", "--seq", "10"])
