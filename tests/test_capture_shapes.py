"""The capture shapes of real programs, on the CPU: KV-cache decode (--mode decode), activation
checkpointing (--checkpoint), gradient accumulation (--accum N) and a capture without markers
(--no-nvtx). Range trees are recorded through capture.nvtx's push/pop, numbers are checked
against an independent computation (full recompute, no checkpointing, one big batch)."""
from __future__ import annotations

import argparse

import pytest

torch = pytest.importorskip("torch")

from typer.testing import CliRunner  # noqa: E402

from capture import decode, nvtx, runner, workload  # noqa: E402
from capture.models import gpt  # noqa: E402
from nsysql.cli.app import app  # noqa: E402

from test_capture_models import TINY, Recorder  # noqa: E402

GPT = TINY["gpt"]


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> Recorder:
    """capture.nvtx's push/pop replaced by a recorder of the range tree."""
    rec = Recorder()
    monkeypatch.setattr(nvtx, "push", rec.push)
    monkeypatch.setattr(nvtx, "pop", rec.pop)
    monkeypatch.setattr(nvtx, "op_ranges", rec.op_ranges)
    return rec
DECODE = ["gpt", "--size", "tiny", "--vocab", "100", "--batch", "2", "--prompt", "6", "--tokens", "5",
          "--mode", "decode", "--device", "cpu", "--no-annotate"]


def names(nodes: list) -> list[str]:
    return [name for name, _ in nodes]


def find(nodes: list, name: str) -> list:
    return [children for n, children in nodes if n == name]


def run(argv: list[str]) -> dict:
    return workload.run(workload.parse_args(argv), echo=lambda line: None)


# --- --mode decode ----------------------------------------------------------------------------

def test_decode_layout(recorder: Recorder) -> None:
    run([*DECODE, "--steps", "2"])
    assert recorder.stack == [recorder.root], "unbalanced push/pop"
    assert names(recorder.root) == ["model_init", "warmup", "request", "request", "result"]
    [warm] = find(recorder.root, "warmup")
    assert names(warm) == ["request"]  # the default: one warm-up request, no graph capture (eager)
    for request in [warm[0][1], *find(recorder.root, "request")]:
        assert names(request) == ["prefill"] + ["decode_step"] * 4  # T-1 decode steps
        for _, phase in request:
            assert names(phase) == ["token_embeddings", "layer_0", "layer_1", "final_norm", "lm_head"]
        attention = request[1][1][1][1][0]
        assert attention[0] == "attention_sublayer"
        assert names(attention[1]) == ["attention projections", "rope encoding", "kv cache update",
                                       "causal mask construction", "scaled_dot_product_attention",
                                       "output projection"]


def _decoder(bf16: bool = False) -> tuple[gpt.GPTLM, decode.Decoder]:
    torch.manual_seed(0)
    model = gpt.GPTLM(100, 6 + 5, 64, 128, 2, 4).eval()
    return model, decode.Decoder(model, batch=2, prompt=6, tokens=5, device=torch.device("cpu"), bf16=bf16)


def test_kv_cache_decode_equals_full_recompute() -> None:
    """Each cached step's logits are the training forward's over the whole sequence so far."""
    model, decoder = _decoder()
    prompt = torch.randint(0, 100, (2, 6), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        logits = [decoder.prefill(prompt)[:, -1]]
        for _ in range(4):
            logits.append(decoder.decode_step()[:, -1].clone())
        tokens = decoder.generated.clone()
        sequence = torch.cat([prompt, tokens], dim=1)
        full = model(sequence[:, :-1])  # no cache: causal attention over everything
    assert torch.equal(tokens, full[:, 5:].argmax(dim=-1))
    for i, step in enumerate(logits):
        assert torch.allclose(step, full[:, 5 + i], atol=1e-4), i


def test_second_request_overwrites_the_cache() -> None:
    """A static cache: a request after another gives what it gives alone."""
    _, decoder = _decoder()
    first, second = (torch.randint(0, 100, (2, 6), generator=torch.Generator().manual_seed(s)) for s in (1, 2))
    with torch.no_grad():
        decoder.request(first)
        after = decoder.request(second)
        _, fresh = _decoder()
        alone = fresh.request(second)
    assert torch.equal(after, alone)


def test_greedy_decode_is_deterministic(recorder: Recorder) -> None:
    one, two = run([*DECODE, "--steps", "2"]), run([*DECODE, "--steps", "2"])
    assert one["tokens"] == two["tokens"]
    assert len(one["tokens"]) == 2 and len(one["tokens"][0]) == 5


def test_decode_bf16_runs() -> None:
    result = run([*DECODE, "--dtype", "bf16", "--steps", "1"])
    assert len(result["tokens"][0]) == 5


def test_decode_context_is_prompt_plus_tokens() -> None:
    args = workload.parse_args(DECODE)
    assert (args.seq, args.warmup, args.batch) == (11, 1, 2)
    assert workload.parse_args(["gpt", "--mode", "decode"]).batch == workload.DEFAULT_DECODE_BATCH
    assert workload.parse_args(["gpt"]).warmup == workload.DEFAULT_WARMUP


@pytest.mark.skipif(not torch.cuda.is_available(), reason="--graphs needs CUDA; this machine has none")
def test_graph_decode_equals_eager(recorder: Recorder) -> None:
    base = [a if a != "cpu" else "cuda" for a in DECODE]
    eager, graphs = run([*base, "--steps", "2"]), run([*base, "--steps", "2", "--graphs"])
    assert eager["tokens"] == graphs["tokens"]
    [warm] = find(recorder.root[-5:], "warmup")
    assert names(warm) == ["graph_capture", "request"]
    for request in find(recorder.root[-5:], "request"):
        assert names(request) == ["prefill"] + ["decode_step"] * 4
        assert all(children == [] for _, children in request[1:])  # a replay has no ranges


def test_graphs_refused_without_cuda() -> None:
    if torch.cuda.is_available():
        pytest.skip("CUDA is available")
    with pytest.raises(SystemExit, match="--graphs needs CUDA"):
        run([*DECODE, "--graphs"])


@pytest.mark.parametrize("extra, message", [
    (["--log-every", "1"], "--log-every does not apply to --mode decode"),
    (["--checkpoint-every", "1"], "--checkpoint-every does not apply to --mode decode"),
    (["--dataloader"], "--dataloader does not apply to --mode decode"),
    (["--allreduce"], "--allreduce does not apply to --mode decode"),
    (["--accum", "2"], "--accum does not apply to --mode decode"),
    (["--checkpoint"], "--checkpoint does not apply to --mode decode"),
    (["--op-ranges"], "--op-ranges does not apply to --mode decode"),
    (["--op-ranges-last", "--steps", "2"], "--op-ranges-last does not apply to --mode decode"),
    (["--distributed", "ddp"], "--distributed does not apply to --mode decode"),
])
def test_decode_refusals(extra: list[str], message: str, capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit):
        workload.parse_args([*DECODE, *extra])
    assert message in capsys.readouterr().err


def test_decode_is_gpt_only(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit):
        workload.parse_args(["bert", "--mode", "decode"])
    assert "gpt only, not bert" in capsys.readouterr().err


# --- --checkpoint (activation checkpointing) --------------------------------------------------

def _gradients(argv: list[str]) -> dict[str, torch.Tensor]:
    """The gradients of one backward step (--mode backward keeps them on the model)."""
    args = workload.parse_args(argv)
    captured: dict[str, torch.Tensor] = {}
    real_build = gpt.build

    def build(a: argparse.Namespace) -> torch.nn.Module:
        torch.manual_seed(0)
        built = real_build(a)
        captured["model"] = built  # type: ignore[assignment]
        return built

    gpt.build = build  # type: ignore[assignment]
    try:
        workload.run(args, echo=lambda line: None)
    finally:
        gpt.build = real_build  # type: ignore[assignment]
    model = captured["model"]
    return {name: p.grad.clone() for name, p in model.named_parameters()}  # type: ignore[attr-defined]


BACKWARD = ["gpt", *GPT, "--device", "cpu", "--no-annotate", "--mode", "backward", "--warmup", "0"]


def test_checkpoint_reruns_block_ranges_in_backward(recorder: Recorder) -> None:
    run([*BACKWARD, "--checkpoint"])
    [step] = find(recorder.root, "profiled_step")
    [backward] = find(step, "backward_pass")
    assert names(backward) == ["attention_sublayer", "ffn_sublayer"] * 2  # no layer_N around them
    assert names(backward[0][1])[0] == "attention projections"
    [forward] = find(step, "forward_pass")
    assert names(forward) == ["token_embeddings", "layer_0", "layer_1", "final_norm", "lm_head"]


def test_without_checkpoint_backward_has_no_ranges(recorder: Recorder) -> None:
    run(BACKWARD)
    [step] = find(recorder.root, "profiled_step")
    assert find(step, "backward_pass") == [[]]


def test_checkpoint_gradients_equal_the_plain_ones() -> None:
    plain, checkpointed = _gradients(BACKWARD), _gradients([*BACKWARD, "--checkpoint"])
    assert plain.keys() == checkpointed.keys()
    for name in plain:
        assert torch.allclose(plain[name], checkpointed[name], atol=1e-6), name


def test_checkpoint_refused_in_forward_mode_and_for_ncf(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit):
        workload.parse_args(["gpt", "--mode", "forward", "--checkpoint"])
    assert "--checkpoint re-runs blocks in the backward" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        workload.parse_args(["ncf", "--checkpoint"])


def test_checkpoint_and_checkpoint_every_both_parse() -> None:
    args = workload.parse_args(["gpt", "--checkpoint", "--checkpoint-every", "3"])
    assert (args.checkpoint, args.checkpoint_every) == (True, 3)
    args = workload.parse_args(["gpt", "--checkpoint-every", "2"])
    assert (args.checkpoint, args.checkpoint_every) == (False, 2)


# --- --accum N --------------------------------------------------------------------------------

def test_accum_micro_batch_ranges(recorder: Recorder) -> None:
    run(["gpt", *GPT, "--device", "cpu", "--no-annotate", "--accum", "3", "--warmup", "1", "--steps", "2"])
    assert names(recorder.root) == ["model_init", "warmup", "profiled_step", "profiled_step", "result"]
    assert all(not n.startswith("micro_batch") for n in names(recorder.root[1][1]))
    for step in find(recorder.root, "profiled_step"):
        assert names(step) == ["micro_batch_1", "micro_batch_2", "micro_batch_3", "optimizer_step"]
        for _, micro in step[:3]:
            assert names(micro) == ["forward_pass", "loss_computation", "backward_pass"]


def test_accum_one_is_the_plain_step(recorder: Recorder) -> None:
    run(["gpt", *GPT, "--device", "cpu", "--no-annotate", "--accum", "1", "--warmup", "0"])
    [step] = find(recorder.root, "profiled_step")
    assert names(step) == ["forward_pass", "loss_computation", "backward_pass", "optimizer_step"]


def test_accum_gradients_equal_one_batch_of_the_micro_batches() -> None:
    """N micro-batches of B, each loss / N: the gradient of one batch of N x B (the fixed batch
    repeated, as the feeder gives it)."""
    small = ["gpt", "--size", "tiny", "--seq", "16", "--vocab", "100", "--device", "cpu", "--no-annotate",
             "--mode", "backward", "--warmup", "0"]
    accumulated = _gradients([*small, "--batch", "2", "--accum", "3"])
    args = workload.parse_args([*small, "--batch", "2"])
    torch.manual_seed(0)
    model = gpt.build(args)
    batch = gpt.make_batch(args, torch.Generator().manual_seed(args.seed))
    big = {k: v.repeat(3, 1) for k, v in batch.items()}
    gpt.loss(gpt.forward(model, big), big).backward()
    for name, p in model.named_parameters():
        assert torch.allclose(p.grad, accumulated[name], atol=1e-6), name


def test_accum_refused_in_forward_mode() -> None:
    with pytest.raises(SystemExit):
        workload.parse_args(["gpt", "--mode", "forward", "--accum", "2"])


# --- --no-nvtx ----------------------------------------------------------------------------------

@pytest.mark.parametrize("argv", [
    ["gpt", *GPT, "--device", "cpu", "--warmup", "1", "--accum", "2", "--checkpoint"],  # --annotate is on
    ["ncf", *TINY["ncf"], "--device", "cpu", "--warmup", "1", "--dataloader"],
    DECODE,
])
def test_no_nvtx_pushes_nothing(recorder: Recorder, argv: list[str]) -> None:
    run(argv)
    assert recorder.root != [], "the recorder sees ranges with NVTX on"
    recorder.root.clear()
    run([*argv, "--no-nvtx"])
    assert recorder.root == []
    assert nvtx.push == recorder.push  # the recorder is back after the run


def test_no_nvtx_refuses_op_ranges() -> None:
    with pytest.raises(SystemExit):
        workload.parse_args(["gpt", "--no-nvtx", "--op-ranges"])


# --- nsysql capture (its refusals: tests/test_capture_cli.py) ---------------------------------------

@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list:
    recorded: list = []
    monkeypatch.setattr(runner, "run_capture", lambda model, argv, output, **kw: recorded.append((model, list(argv))))
    return recorded


def test_cli_decode_argv(calls: list) -> None:
    result = CliRunner().invoke(app, ["capture", "gpt", "-o", "x", "--mode", "decode", "--prompt", "8",
                                      "--tokens", "4", "--graphs", "--no-nvtx"])
    assert result.exit_code == 0, result.output
    [(model, argv)] = calls
    assert (model, argv) == ("gpt", ["--mode", "decode", "--dtype", "fp32", "--prompt", "8", "--tokens", "4",
                                     "--graphs", "--no-nvtx"])


def test_cli_checkpoint_and_accum_argv(calls: list) -> None:
    result = CliRunner().invoke(app, ["capture", "gpt", "-o", "x", "--checkpoint", "--checkpoint-every", "2",
                                      "--accum", "4"])
    assert result.exit_code == 0, result.output
    [(_, argv)] = calls
    assert argv == ["--mode", "train", "--dtype", "fp32", "--checkpoint-every", "2", "--checkpoint",
                    "--accum", "4"]
    workload.parse_args(["gpt", *argv])  # and the workload takes it


def test_help_tells_the_two_checkpoints_apart() -> None:
    result = CliRunner().invoke(app, ["capture", "--help"], env={"COLUMNS": "200"})
    text = " ".join(result.output.split())
    assert "activation checkpointing" in text and "Save model state" in text
