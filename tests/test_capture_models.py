"""The seed models and the cnn on CPU: they run forward/backward, and emit exactly their ranges.

Also the training-loop options around them (DataLoader feeding, --no-sync, checkpoints,
loss logging, TF32, the one-process all-reduce), on tiny configurations.
"""
from __future__ import annotations

import contextlib
import math

import pytest

torch = pytest.importorskip("torch")

from capture import nvtx, workload  # noqa: E402
from capture.models import GPT_SIZES, load  # noqa: E402

# real CPU training runs (torchrun): dealt out first under xdist (conftest.py)
pytestmark = pytest.mark.heavy

EMIT_NVTX = "[emit_nvtx]"  # marks where the workload enters nvtx.op_ranges(True)

# Tiny CPU configurations of every model (seed sizes stay the defaults).
TINY = {
    "gpt": ["--size", "tiny", "--batch", "2", "--seq", "16", "--vocab", "100"],
    "bert": ["--layers", "2", "--hidden", "32", "--heads", "4", "--intermediate", "64",
             "--vocab", "100", "--max-positions", "32", "--batch", "2", "--seq", "16"],
    "ncf": ["--users", "40", "--items", "30", "--batch", "16"],
    "dlrm": ["--rows", "20", "--rows-step", "1", "--batch", "8"],
    "cnn": ["--width", "4", "--stages", "2", "--blocks", "1", "--classes", "10",
            "--image-size", "16", "--pool", "4", "--batch", "4"],
}
MODELS = ["gpt", "bert", "ncf", "dlrm", "cnn"]


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

CNN_FORWARD = [
    leaf("stem"),
    ("stage_1", [("block_0", [leaf("conv1"), leaf("conv2")])]),
    ("stage_2", [("block_0", [leaf("conv1"), leaf("conv2"), leaf("shortcut")])]),
    leaf("head"),
]

FORWARD = {"gpt": gpt_forward(2), "bert": bert_forward(2), "ncf": NCF_FORWARD,
           "dlrm": DLRM_FORWARD, "cnn": CNN_FORWARD}
LOSS_RANGE = {"gpt": "loss_computation", "bert": "loss_computation", "ncf": "Loss",
              "dlrm": "Loss", "cnn": "loss_computation"}


def expected_tree(model: str, mode: str, warmup: int, steps: int, op_ranges: bool = False) -> list:
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
    """The model's own ranges only (--no-annotate) unless `extra` says --annotate."""
    args = workload.parse_args([model, *TINY[model], "--device", "cpu", "--no-annotate", *extra])
    return workload.run(args, echo=lambda line: None)


@pytest.mark.parametrize("mode", ["forward", "backward", "train"])
@pytest.mark.parametrize("model", MODELS)
def test_ranges_and_nesting(recorder: Recorder, model: str, mode: str) -> None:
    result = run_tiny(model, "--mode", mode, "--warmup", "1", "--steps", "1")
    assert recorder.stack == [recorder.root], "unbalanced push/pop"
    assert recorder.root == expected_tree(model, mode, warmup=1, steps=1)
    if mode == "forward":
        assert math.isfinite(result["output_mean"])
    else:
        assert math.isfinite(result["loss"])


def test_gpt_tiny_train_tree_spelled_out(recorder: Recorder) -> None:
    run_tiny("gpt", "--mode", "train", "--warmup", "0", "--steps", "1", "--op-ranges")
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


def test_op_ranges_last_marks_only_the_last_profiled_step(recorder: Recorder) -> None:
    """--op-ranges-last: the earlier profiled steps plain, the last one under emit_nvtx (the same step
    with op markers: the ground truth of backward inference)."""
    run_tiny("bert", "--mode", "train", "--warmup", "1", "--steps", "3", "--op-ranges-last")
    assert recorder.stack == [recorder.root], "unbalanced push/pop"
    plain = expected_tree("bert", "train", warmup=1, steps=2)
    marked = expected_tree("bert", "train", warmup=0, steps=1, op_ranges=True)
    assert recorder.root == plain[:-1] + marked[1:]  # model_init, warmup, 2 steps | [emit_nvtx] step, result
    assert recorder.root[-2][0] == EMIT_NVTX and len(recorder.root[-2][1]) == 1


@pytest.mark.parametrize("argv, message", [
    (["--steps", "1", "--op-ranges-last"], "--op-ranges-last needs at least 2 --steps"),
    (["--steps", "2", "--op-ranges-last", "--op-ranges"], "--op-ranges-last conflicts with --op-ranges"),
])
def test_op_ranges_last_refusals(argv: list[str], message: str, capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit):
        workload.parse_args(["gpt", *TINY["gpt"], *argv])
    assert message in capsys.readouterr().err


def test_annotate_forward_only(recorder: Recorder) -> None:
    """--no-annotate-backward: the module ranges of the forward only, none in backward_pass."""
    run_tiny("gpt", "--annotate", "--no-annotate-backward", "--mode", "train", "--warmup", "0",
             "--steps", "1")
    assert recorder.stack == [recorder.root], "unbalanced push/pop"
    phases = dict(dict(recorder.root)["profiled_step"])
    assert phases["backward_pass"] == []
    assert dict(phases["forward_pass"])["token_embeddings"] == [leaf("model/token_embeddings")]


def range_names(tree: list) -> list[str]:
    return [n for name, children in tree for n in (name, *range_names(children))]


def test_hf_gpt2_runs_with_module_ranges(recorder: Recorder) -> None:
    """The Hugging Face model has no ranges of its own: nsysql.annotate names its layers."""
    pytest.importorskip("transformers")
    args = workload.parse_args(["hf", "--layers", "2", "--hidden", "32", "--heads", "4", "--vocab", "50",
                                "--batch", "2", "--seq", "8", "--device", "cpu", "--warmup", "0",
                                "--steps", "1", "--no-annotate-backward"])
    result = workload.run(args, echo=lambda line: None)
    assert math.isfinite(result["loss"])
    assert recorder.stack == [recorder.root], "unbalanced push/pop"
    phases = dict(dict(recorder.root)["profiled_step"])
    names = range_names(phases["forward_pass"])
    assert {"model/transformer", "model/transformer/h.0", "model/transformer/h.1/attn", "model/lm_head"} <= set(names)
    assert phases["backward_pass"] == []


def test_annotate_names_each_layer_forward_and_backward(recorder: Recorder) -> None:
    """--annotate: module ranges inside the model's own ranges; on CPU the backward runs on the calling
    thread, inside backward_pass, last layer first."""
    run_tiny("gpt", "--annotate", "--mode", "train", "--warmup", "1", "--steps", "1")
    assert recorder.stack == [recorder.root], "unbalanced push/pop"
    tree = dict(recorder.root)
    phases = dict(dict(tree["profiled_step"]))
    forward = dict(phases["forward_pass"])
    assert forward["token_embeddings"] == [leaf("model/token_embeddings")]
    [(block, parts)] = forward["layer_1"]
    assert block == "model/layers.1"
    assert [name for name, _ in parts] == ["attention_sublayer", "ffn_sublayer"]
    assert [name for name, _ in dict(parts)["attention_sublayer"]] == ["model/layers.1/ln1", "model/layers.1/attn"]
    backward = phases["backward_pass"]
    assert [name for name, _ in backward] == [
        "model/lm_head [backward]", "model/ln_final [backward]", "model/layers.1 [backward]",
        "model/layers.0 [backward]", "model/token_embeddings [backward]"]
    assert [name for name, _ in dict(backward)["model/layers.0 [backward]"]] == [
        f"model/layers.0/{m} [backward]" for m in ("ffn", "ln2", "attn", "ln1")]
    assert "model/layers.0" in [name for name, _ in dict(tree["warmup"])["layer_0"]]


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


@pytest.mark.parametrize("model", MODELS)
def test_backward_reaches_every_parameter(model: str) -> None:
    module = load(model)
    args = workload.parse_args([model, *TINY[model], "--device", "cpu"])
    torch.manual_seed(0)
    net = module.build(args)
    batch = module.make_batch(args, torch.Generator().manual_seed(0))
    output = module.forward(net, batch)
    expected_shape = {"gpt": (2, 16, 100), "bert": (2, 16, 100), "ncf": (16, 1), "dlrm": (8, 1),
                      "cnn": (4, 10)}
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
    assert (gpt.vocab, gpt.seq, gpt.batch, gpt.warmup, gpt.steps, gpt.op_ranges, gpt.annotate) == (
        10000, 512, 4, 3, 1, False, True)


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


# --- cnn ----------------------------------------------------------------------------------

def test_cnn_default_is_resnet18_for_cifar100() -> None:
    args = workload.parse_args(["cnn"])
    assert (args.image_size, args.width, args.stages, args.blocks, args.classes, args.batch) == (
        32, 64, 4, 2, 100, 128)
    with torch.device("meta"):
        net = load("cnn").build(args)
    assert sum(p.numel() for p in net.parameters()) == 11_220_132  # torchvision-style count
    assert [len(stage) for stage in net.stages] == [2, 2, 2, 2]
    assert net.fc.in_features == 512


@pytest.mark.parametrize("source", [16, 40])
def test_cnn_augmentation_is_per_sample_and_reproducible(source: int) -> None:
    cnn = load("cnn")
    def make():
        return cnn.SyntheticImages(6, 16, source, 2, 10, torch.Generator().manual_seed(0))
    first, again = make(), make()
    a, b = first[0], again[0]
    assert a["image"].shape == (3, 16, 16) and a["image"].dtype == torch.float32
    assert a["image"].is_contiguous() and a["label"].dtype == torch.int64
    assert torch.equal(a["image"], b["image"])  # sample i has its own seed
    assert not torch.equal(first[0]["image"], first[2]["image"])  # same source, new crop
    assert torch.equal(first[0]["label"], first[2]["label"])
    assert abs(float(a["image"].mean())) < 1.5  # normalised, not 0..255
    with pytest.raises(IndexError):
        first[6]


def test_cnn_rejects_a_source_smaller_than_the_image() -> None:
    with pytest.raises(ValueError, match="smaller than image size"):
        load("cnn").SyntheticImages(4, 32, 16, 2, 10, torch.Generator())


def test_cnn_channels_last() -> None:
    args = workload.parse_args(["cnn", *TINY["cnn"], "--channels-last"])
    cnn = load("cnn")
    net = cnn.build(args)
    assert net.stem[0].weight.is_contiguous(memory_format=torch.channels_last)
    batch = cnn.make_batch(args, torch.Generator().manual_seed(0))
    assert cnn.forward(net, batch).shape == (4, 10)


# --- the training loop's options ----------------------------------------------------------

LOOP_PHASES = ["forward_pass", "loss_computation", "backward_pass", "optimizer_step"]


def step_names(recorder: Recorder) -> list[list[str]]:
    """The phase names of each profiled step (runs with --no-op-ranges)."""
    return [[name for name, _ in children] for name, children in recorder.root
            if name == "profiled_step"]


def test_dataloader_range_opens_each_profiled_step(recorder: Recorder) -> None:
    run_tiny("cnn", "--dataloader", "--warmup", "1", "--steps", "2", "--no-op-ranges")
    assert step_names(recorder) == [["dataloader", *LOOP_PHASES]] * 2
    warmup = dict(recorder.root)["warmup"]
    assert warmup == CNN_FORWARD  # warm-up steps keep only the model's ranges


@pytest.mark.parametrize("model", ["gpt", "cnn"])
def test_dataloader_first_batch_is_the_fixed_batch(model: str) -> None:
    fixed = run_tiny(model, "--mode", "backward", "--warmup", "0")
    loaded = run_tiny(model, "--mode", "backward", "--warmup", "0", "--dataloader")
    assert loaded["loss"] == fixed["loss"]


def test_dataloader_workers_give_the_same_batches() -> None:
    options = ("--warmup", "1", "--steps", "2", "--dataloader", "--source-size", "24")
    in_thread = run_tiny("cnn", *options)
    in_workers = run_tiny("cnn", *options, "--workers", "2", "--pin-memory")  # no pinning on CPU
    assert in_workers["loss"] == in_thread["loss"]


def test_row_dataset_repeats_the_batch() -> None:
    from capture.data import RowDataset

    rows = RowDataset({"x": torch.arange(3)}, length=7)
    assert [int(rows[i]["x"]) for i in range(7)] == [0, 1, 2, 0, 1, 2, 0]
    with pytest.raises(IndexError):
        rows[7]


class SyncRecorder(Recorder):
    """Also records torch.cuda.synchronize() calls, as leaves named SYNC."""

    def synchronize(self, device: object) -> None:
        self.stack[-1].append(leaf(SYNC))


SYNC = "[sync]"


@pytest.fixture
def sync_recorder(monkeypatch: pytest.MonkeyPatch) -> SyncRecorder:
    rec = SyncRecorder()
    for name in ("push", "pop", "op_ranges", "synchronize"):
        monkeypatch.setattr(nvtx, name, getattr(rec, name))
    return rec


def synced_phases(recorder: Recorder) -> list[str]:
    return [name for step, phases in recorder.root if step == "profiled_step"
            for name, children in phases if leaf(SYNC) in children]


def test_sync_ends_every_phase_and_no_sync_none(sync_recorder: SyncRecorder) -> None:
    run_tiny("ncf", "--warmup", "1", "--steps", "1", "--no-op-ranges")
    assert synced_phases(sync_recorder) == LOOP_PHASES[:1] + ["Loss"] + LOOP_PHASES[2:]
    sync_recorder.root.clear()
    result = run_tiny("ncf", "--warmup", "1", "--steps", "2", "--no-op-ranges", "--no-sync")
    assert synced_phases(sync_recorder) == []
    assert math.isfinite(result["loss"])


def test_log_and_checkpoint_steps_count_warmup_too(recorder: Recorder, tmp_path) -> None:
    path = tmp_path / "ckpt.pt"
    run_tiny("cnn", "--warmup", "1", "--steps", "4", "--no-op-ranges", "--log-every", "3",
             "--checkpoint-every", "2", "--checkpoint-path", str(path))
    # steps 1 (warm-up), 2..5 (profiled): checkpoints after steps 2 and 4, a logged loss at 3
    assert step_names(recorder) == [
        [*LOOP_PHASES, "checkpoint"], [*LOOP_PHASES, "log_loss"], [*LOOP_PHASES, "checkpoint"],
        LOOP_PHASES]
    state = torch.load(path)
    assert set(state) == {"model", "optimizer"}
    assert "stem.0.weight" in state["model"]


def test_allreduce_in_a_world_of_one(recorder: Recorder) -> None:
    dist = pytest.importorskip("torch.distributed")
    if not dist.is_available():
        pytest.skip("torch.distributed is not available")
    plain = run_tiny("cnn", "--warmup", "1", "--steps", "2", "--no-op-ranges")
    recorder.root.clear()
    reduced = run_tiny("cnn", "--warmup", "1", "--steps", "2", "--no-op-ranges", "--allreduce")
    assert step_names(recorder) == [
        ["forward_pass", "loss_computation", "backward_pass", "allreduce", "optimizer_step"]] * 2
    assert reduced["loss"] == plain["loss"]  # the average over one rank is the gradient
    assert not dist.is_initialized()  # the group is destroyed at the end


def test_tf32_switch_sets_cublas_and_cudnn() -> None:
    before = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    try:
        workload._set_tf32(True)
        assert (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32) == (
            True, True)
        workload._set_tf32(False)
        assert (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32) == (
            False, False)
        workload._set_tf32(None)  # torch's defaults stay as they are
        assert torch.backends.cudnn.allow_tf32 is False
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before


def test_loop_defaults_are_the_seed_loop() -> None:
    args = workload.parse_args(["gpt"])
    assert (args.dataloader, args.workers, args.pin_memory, args.sync, args.log_every,
            args.checkpoint_every, args.tf32, args.allreduce) == (
        False, 0, False, True, 0, 0, None, False)


@pytest.mark.parametrize("argv", [
    ["cnn", "--workers", "2"],
    ["cnn", "--mode", "forward", "--log-every", "1"],
    ["cnn", "--mode", "forward", "--allreduce"],
    ["gpt", "--image-size", "32"],
])
def test_loop_option_errors(argv: list[str]) -> None:
    with pytest.raises(SystemExit):
        workload.parse_args(argv)


# --- several ranks (--distributed, as `nsysql capture --nproc N` starts them under torchrun) -------------

def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def world_of_one(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """torchrun's environment for one rank (gloo on the CPU); returns the sleeps capture.data takes."""
    dist = pytest.importorskip("torch.distributed")
    if not dist.is_available():
        pytest.skip("torch.distributed is not available")
    for key, value in {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1", "LOCAL_WORLD_SIZE": "1",
                       "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(_free_port())}.items():
        monkeypatch.setenv(key, value)
    import capture.data

    sleeps: list[float] = []
    monkeypatch.setattr(capture.data.time, "sleep", sleeps.append)
    return sleeps


@pytest.mark.parametrize("kind", ["ddp", "fsdp"])
def test_distributed_rank_has_the_same_ranges_and_loss(recorder: Recorder, world_of_one: list[float],
                                                       kind: str) -> None:
    import torch.distributed as dist

    plain = run_tiny("gpt", "--warmup", "1", "--steps", "2")
    recorder.root.clear()
    ranked = run_tiny("gpt", "--warmup", "1", "--steps", "2", "--distributed", kind)
    assert step_names(recorder) == [["forward_pass", "loss_computation", "backward_pass",
                                     "optimizer_step"]] * 2
    assert [name for name, _ in recorder.root][:2] == ["model_init", "warmup"]
    assert math.isclose(ranked["loss"], plain["loss"], rel_tol=1e-5)  # the average over one rank
    assert not dist.is_initialized()  # the group is destroyed at the end
    assert world_of_one == []


@pytest.mark.parametrize("step, slept", [(["--straggle-step", "2"], [2]), ([], [1, 2, 3])])
def test_straggler_sleeps_inside_dataloader(recorder: Recorder, world_of_one: list[float],
                                            monkeypatch: pytest.MonkeyPatch, step: list[str],
                                            slept: list[int]) -> None:
    import capture.data

    where: list[tuple[int, str, float]] = []  # (profiled step, innermost open range, seconds)

    def sleep(seconds: float) -> None:
        steps = sum(name == "profiled_step" for name, _ in recorder.root)
        where.append((steps, recorder.stack[-2][-1][0], seconds))

    monkeypatch.setattr(capture.data.time, "sleep", sleep)
    run_tiny("gpt", "--warmup", "2", "--steps", "3", "--distributed", "ddp", "--straggle-rank", "0",
             "--straggle-ms", "25", *step)
    # a `dataloader` range in every profiled step (none in warm-up), without --dataloader
    assert step_names(recorder) == [["dataloader", "forward_pass", "loss_computation", "backward_pass",
                                     "optimizer_step"]] * 3
    assert where == [(s, "dataloader", 0.025) for s in slept]


def test_straggler_rank_must_be_in_the_job(world_of_one: list[float]) -> None:
    with pytest.raises(SystemExit, match=r"--straggle-rank 1, but the job has 1 rank\(s\)"):
        run_tiny("gpt", "--warmup", "0", "--distributed", "ddp", "--straggle-rank", "1", "--straggle-ms", "5")


def test_distributed_needs_torchrun(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("RANK", "LOCAL_RANK", "WORLD_SIZE"):
        monkeypatch.delenv(key, raising=False)
    with pytest.raises(SystemExit, match="needs torchrun's environment"):
        run_tiny("gpt", "--warmup", "0", "--distributed", "ddp")


@pytest.mark.parametrize("argv, message", [
    (["--straggle-ms", "5"], "--straggle-rank and --straggle-ms go together"),
    (["--straggle-rank", "1"], "--straggle-rank and --straggle-ms go together"),
    (["--straggle-step", "1"], "--straggle-step needs --straggle-rank"),
    (["--straggle-rank", "0", "--straggle-ms", "5", "--straggle-step", "3", "--steps", "2"],
     "--straggle-step 3 is past the last profiled step"),
    (["--distributed", "ddp", "--allreduce"], "--allreduce is a world of one"),
    (["--distributed", "fsdp", "--mode", "forward"], "several ranks exchange gradients"),
    (["--straggle-ms", "0", "--straggle-rank", "0"], "must be at least 1"),
])
def test_ranks_option_errors(argv: list[str], message: str, capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit):
        workload.parse_args(["gpt", *argv])
    assert message in capsys.readouterr().err


def test_fsdp_models_have_blocks_to_shard() -> None:
    from capture.models import FSDP_MODELS, MODEL_NAMES

    for name in MODEL_NAMES:
        assert hasattr(load(name), "fsdp_units") == (name in FSDP_MODELS), name
    args = workload.parse_args(["cnn", *TINY["cnn"], "--blocks", "2"])
    model = load("cnn").build(args)
    assert len(load("cnn").fsdp_units(model)) == 4  # 2 stages of 2 blocks


def test_two_ranks_under_torchrun_on_the_cpu(tmp_path) -> None:
    """The real thing on the CPU: torchrun starts two gloo ranks, rank 1 straggles in step 2."""
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    torchrun = Path(sys.executable).parent / "torchrun"
    if not torchrun.is_file():
        torchrun = shutil.which("torchrun")
        if torchrun is None:
            pytest.skip("no torchrun")
    repo = Path(workload.__file__).resolve().parent.parent
    command = [str(torchrun), "--standalone", "--nproc_per_node=2", "--no-python", sys.executable, "-m",
               "capture", "gpt", *TINY["gpt"], "--device", "cpu", "--warmup", "1", "--steps", "2",
               "--distributed", "fsdp", "--straggle-rank", "1", "--straggle-ms", "5", "--straggle-step", "2",
               "--dataloader"]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=240,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(repo), "HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Using device: cpu (rank 0 of 2, fsdp)" in done.stdout
    assert "straggler: rank 1 sleeps 5 ms inside `dataloader` in profiled step 2" in done.stdout
    assert done.stdout.count("Profiling complete") == 1  # rank 0 speaks for both
