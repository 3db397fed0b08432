"""`nsysql capture` through the real typer app: workload options -> ``python -m capture`` argv.

`capture.runner.run_capture` is replaced by a recorder (or nsys by a fake one), so neither
torch with CUDA nor nsys is needed. The command lines quoted in fixtures/README.md and in the
fixtures' capture.log files are parsed here and compared with the workload options that were
actually run.
"""
from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

from capture import runner
from capture.models import MODEL_NAMES
from capture.workload import DEFAULT_CHECKPOINT
from nsysql.cli.app import app

from test_capture_runner import fake_nsys

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list:
    """Replaces run_capture: each call's (model, workload argv, output, keyword arguments)."""
    recorded: list = []
    monkeypatch.setattr(runner, "run_capture",
                        lambda model, workload, output, **kw: recorded.append(
                            (model, list(workload), output, kw)))
    return recorded


def invoke(argv: list[str]):
    return CliRunner().invoke(app, argv, env={"COLUMNS": "200"})


def capture_argv(calls: list, argv: list[str]) -> tuple[str, list[str], Path, dict]:
    result = invoke(["capture", *argv])
    assert result.exit_code == 0, result.output
    [call] = calls
    calls.clear()
    return call


def test_cnn_loop_options_and_nsys_flags(calls: list) -> None:
    model, workload, output, kw = capture_argv(calls, [
        "cnn", "-o", "x", "--dataloader", "--workers", "2", "--no-pin-memory", "--no-sync",
        "--checkpoint-every", "4", "--no-tf32", "--channels-last", "--image-size", "32",
        "--batch", "8", "--", "-t", "cuda"])
    assert model == "cnn" and output == Path("x")
    assert workload == ["--mode", "train", "--dtype", "fp32", "--batch", "8",
                        "--image-size", "32", "--channels-last", "--dataloader", "--workers", "2",
                        "--no-pin-memory", "--no-sync", "--checkpoint-every", "4", "--no-tf32"]
    assert kw["nsys_flags"] == ["-t", "cuda"]
    assert kw["stats"] is False and kw["nsys"] is None


def test_without_new_options_the_argv_is_unchanged(calls: list) -> None:
    for model in MODEL_NAMES:
        assert capture_argv(calls, [model, "-o", "x"])[1] == ["--mode", "train", "--dtype", "fp32"]


# a value for each workload option (None: a --FLAG/--no-FLAG switch), on a model it applies to
SAMPLES = {
    "size": "tiny", "mode": "forward", "dtype": "bf16", "batch": "3", "seq": "5", "warmup": "0",
    "steps": "2", "layers": "1", "users": "7", "items": "9", "rows": "11", "rows_step": "0",
    "dataloader": None, "workers": "0", "pin_memory": None, "sync": None, "log_every": "2",
    "checkpoint_every": "3", "checkpoint_path": "/tmp/ck.pt", "tf32": None, "allreduce": None,
    "image_size": "40", "source_size": "64", "width": "8", "stages": "2", "blocks": "1",
    "classes": "10", "pool": "4", "channels_last": None, "op_ranges": None, "annotate": None,
    "op_ranges_last": None, "annotate_backward": None, "straggle_rank": "0", "straggle_ms": "25",
    "straggle_step": "1", "checkpoint": None, "accum": "2", "nvtx": None, "prompt": "8", "tokens": "4",
    "graphs": None,
}


@pytest.mark.parametrize("key", sorted(runner._WORKLOAD_OPTIONS))
def test_every_workload_option_reaches_the_workload(calls: list, key: str) -> None:
    """Each option of runner._WORKLOAD_OPTIONS is an `nsysql capture` option for every model
    it applies to (both spellings of a switch), passed on as the workload's own flag."""
    assert key in SAMPLES, f"add a sample value for the new workload option {key!r}"
    applies = runner._WORKLOAD_OPTIONS[key] or MODEL_NAMES
    flag = "--" + key.replace("_", "-")
    value = SAMPLES[key]
    spellings = [[flag], ["--no-" + flag[2:]]] if value is None else [[flag, value]]
    for model in applies:
        for given in spellings:
            extra = {"log_every": ["--mode", "train"],  # forward would refuse it
                     "op_ranges_last": ["--steps", "2"],  # a plain step and a marked one
                     "straggle_rank": ["--straggle-ms", "5"],  # which rank and how long go together
                     "straggle_ms": ["--straggle-rank", "0"],
                     "straggle_step": ["--straggle-rank", "0", "--straggle-ms", "5"],
                     "graphs": ["--mode", "decode"]}.get(key, [])
            workload = capture_argv(calls, [model, "-o", "x", *given, *extra])[1]
            found = [workload[i:i + len(given)] for i in range(len(workload))]
            assert given in found, (model, given, workload)


def test_relative_checkpoint_path_is_made_absolute(calls: list, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the profiled process runs in a scratch directory
    workload = capture_argv(calls, ["gpt", "-o", "x", "--checkpoint-every", "1",
                                    "--checkpoint-path", "ck/state.pt"])[1]
    assert workload[-2:] == ["--checkpoint-path", str(tmp_path / "ck" / "state.pt")]


@pytest.mark.parametrize("argv, message", [
    (["bert", "--mode", "decode"], "Error: --mode decode is LLM inference with a KV cache: gpt only, not bert"),
    (["gpt", "--mode", "decode", "--accum", "2"], "Error: --accum does not apply to --mode decode"),
    (["gpt", "--mode", "decode", "--checkpoint"], "Error: --checkpoint does not apply to --mode decode"),
    (["gpt", "--mode", "decode", "--log-every", "1"], "Error: --log-every does not apply to --mode decode"),
    (["gpt", "--graphs"], "Error: --graphs replays decode steps: --mode decode"),
    (["ncf", "--checkpoint"], "Error: --checkpoint does not apply to ncf"),
    (["bert", "--prompt", "8"], "Error: --prompt does not apply to bert (only to gpt)"),
    (["gpt", "--mode", "forward", "--accum", "2"], "Error: --accum accumulates gradients"),
    (["gpt", "--no-nvtx", "--op-ranges"], "Error: --no-nvtx runs without any NVTX range"),
    (["gpt", "--image-size", "32"], "Error: --image-size does not apply to gpt (only to cnn)"),
    (["bert", "--channels-last"], "Error: --channels-last does not apply to bert (only to cnn)"),
    (["ncf", "--no-channels-last"],
     "Error: --channels-last does not apply to ncf (only to cnn)"),
    (["dlrm", "--source-size", "64"], "Error: --source-size does not apply to dlrm"),
    (["cnn", "--seq", "64"], "Error: --seq does not apply to cnn (only to gpt, bert, hf)"),
    (["cnn", "--size", "tiny"], "Error: --size does not apply to cnn (only to gpt)"),
    (["cnn", "--workers", "2"], "Error: --workers needs --dataloader"),
    (["gpt", "--mode", "forward", "--log-every", "1"], "Error: --log-every needs a loss"),
    (["cnn", "--mode", "forward", "--allreduce"], "Error: --allreduce needs gradients"),
    (["cnn", "--workers", "-1"], "Error: Invalid value for '--workers'"),
])
def test_refused_options_give_one_error_line(calls: list, argv: list[str], message: str) -> None:
    result = CliRunner().invoke(app, ["capture", argv[0], "-o", "x", *argv[1:]])
    assert result.exit_code == 1
    assert result.stderr.startswith(message), result.stderr
    assert result.stderr.count("\n") == 1
    assert calls == []


def test_ranks_options_reach_the_runner(calls: list) -> None:
    model, workload, output, kw = capture_argv(calls, [
        "gpt", "--size", "tiny", "-o", "x", "--steps", "3", "--nproc", "2", "--per-rank", "--straggle-rank",
        "1", "--straggle-ms", "25", "--straggle-step", "2", "--stats"])
    assert (kw["nproc"], kw["fsdp"], kw["per_rank"], kw["stats"]) == (2, False, True, True)
    assert workload[-6:] == ["--straggle-rank", "1", "--straggle-ms", "25", "--straggle-step", "2"]
    assert "--distributed" not in workload  # the runner adds it from --nproc and --fsdp
    kw = capture_argv(calls, ["bert", "-o", "x", "--nproc", "4", "--fsdp", "--straggle-rank", "3",
                              "--straggle-ms", "10"])[3]
    assert (kw["nproc"], kw["fsdp"], kw["per_rank"]) == (4, True, False)
    kw = capture_argv(calls, ["gpt", "-o", "x"])[3]
    assert (kw["nproc"], kw["fsdp"], kw["per_rank"]) == (None, False, False)


@pytest.mark.parametrize("argv, message", [
    (["gpt", "--per-rank"], "Error: --per-rank needs --nproc 2 or more"),
    (["gpt", "--nproc", "1", "--per-rank"], "Error: --per-rank needs --nproc 2 or more"),
    (["gpt", "--fsdp"], "Error: --fsdp needs --nproc N"),
    (["ncf", "--nproc", "2", "--fsdp"], "Error: --fsdp does not apply to ncf (only to gpt, bert, cnn, hf"),
    (["gpt", "--nproc", "2", "--straggle-rank", "2", "--straggle-ms", "5"],
     "Error: --straggle-rank 2 is no rank of the job (--nproc 2 has ranks 0 to 1)"),
    (["gpt", "--straggle-rank", "1", "--straggle-ms", "5"], "Error: --straggle-rank 1 is no rank of the job"),
    (["gpt", "--nproc", "2", "--straggle-rank", "1"], "Error: --straggle-rank and --straggle-ms go together"),
    (["gpt", "--nproc", "2", "--straggle-ms", "5"], "Error: --straggle-rank and --straggle-ms go together"),
    (["gpt", "--nproc", "2", "--straggle-rank", "1", "--straggle-ms", "5", "--straggle-step", "2"],
     "Error: --straggle-step 2 is past the last profiled step (--steps 1)"),
    (["gpt", "--nproc", "2", "--mode", "forward"], "Error: several ranks exchange gradients"),
    (["gpt", "--nproc", "2", "--allreduce"], "Error: --allreduce is a world of one"),
    (["gpt", "--nproc", "0"], "Error: Invalid value for '--nproc'"),
])
def test_ranks_refusals_give_one_error_line(calls: list, argv: list[str], message: str) -> None:
    result = CliRunner().invoke(app, ["capture", argv[0], "-o", "x", *argv[1:]])
    assert result.exit_code == 1
    assert result.stderr.startswith(message), result.stderr
    assert result.stderr.count("\n") == 1
    assert calls == []


def test_no_torchrun_and_too_few_gpus_give_one_error_line(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    import types

    nsys, _ = fake_nsys(tmp_path)
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(
        __version__="9.9", cuda=types.SimpleNamespace(is_available=lambda: True, device_count=lambda: 1)))
    python = tmp_path / "venv" / "bin" / "python"  # no torchrun beside it, none on PATH
    monkeypatch.setattr(runner.sys, "executable", str(python))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    argv = ["capture", "gpt", "-o", str(tmp_path / "x"), "--nsys", str(nsys), "--nproc", "2"]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: torchrun not found (beside ") and result.stderr.count("\n") == 1
    torchrun = tmp_path / "venv" / "bin" / "torchrun"
    torchrun.parent.mkdir(parents=True)
    torchrun.write_text("#!/bin/sh\nexit 0\n")
    torchrun.chmod(0o755)
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 1
    assert result.stderr == "Error: --nproc 2 needs 2 GPUs (one per rank), but torch sees 1 " \
                            "(CUDA_VISIBLE_DEVICES limits them)\n"


def test_help_shows_the_ranks_options() -> None:
    result = invoke(["capture", "--help"])
    for option in ("--nproc", "--fsdp", "--per-rank", "--straggle-rank", "--straggle-ms", "--straggle-step"):
        assert option in result.output, option


def test_help_lists_the_models_and_every_option() -> None:
    result = invoke(["capture", "--help"])
    assert result.exit_code == 0
    assert "Model to profile: gpt, bert, ncf, dlrm, cnn or hf." in " ".join(result.output.split())  # rewrapped
    for key in runner._WORKLOAD_OPTIONS:
        assert "--" + key.replace("_", "-") in result.output, key
    for switch in ("dataloader", "pin-memory", "sync", "tf32", "allreduce", "channels-last"):
        assert f"--no-{switch}" in result.output, switch


def _help_texts() -> dict[str, str]:
    command = typer.main.get_command(app).commands["capture"]
    return {param.name: param.help or "" for param in command.params}


def _applies(help_text: str) -> list[str]:
    """The models a model option's help names before its colon ("gpt, bert: ...")."""
    head = help_text.split(":", 1)[0]
    return [m.strip() for m in head.split(",")]


def test_help_names_the_models_each_option_applies_to() -> None:
    texts = _help_texts()
    for key, applies in runner._WORKLOAD_OPTIONS.items():
        if applies is not None:
            assert _applies(texts[key]) == list(applies), (key, texts[key])
        else:
            assert not set(_applies(texts[key])) & set(MODEL_NAMES), (key, texts[key])


def test_help_defaults_are_the_workloads() -> None:
    """Each help text's "(default: ...)" is the default of `python -m capture MODEL`."""
    pytest.importorskip("torch")
    from capture import workload

    parser = workload.build_parser()
    [models] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    texts = _help_texts()
    for model, sub in models.choices.items():
        for action in sub._actions:
            key = action.dest
            if key not in texts or key in ("mode", "dtype", "op_ranges") or action.default is None:
                continue
            value = action.default
            shown = {True: "on", False: "off"}.get(value, value) if isinstance(value, bool) else value
            if key in ("batch", "seq", "layers"):  # one default per model
                assert f"{model} {shown}" in texts[key], (model, key, texts[key])
            else:
                assert f"default: {shown}" in texts[key], (model, key, texts[key])
    assert DEFAULT_CHECKPOINT in texts["checkpoint_path"]


# --- the command lines quoted with the fixtures ---------------------------------------------

def _pairs(argv: list[str]) -> list[tuple[str, str | None]]:
    """Options as sorted (flag, value or None) pairs: the order of options does not matter."""
    pairs, i = [], 0
    while i < len(argv):
        assert argv[i].startswith("--"), argv
        if i + 1 < len(argv) and not argv[i + 1].startswith("-"):
            pairs.append((argv[i], argv[i + 1]))
            i += 2
        else:
            pairs.append((argv[i], None))
            i += 1
    return sorted(pairs)


def _without_output_and_stats(argv: list[str]) -> list[str]:
    """The runner's argv without -o OUT, --stats and the ranks options (--nproc N, --fsdp, --per-rank)."""
    out, i = [], 0
    while i < len(argv):
        if argv[i] in ("-o", "--nproc"):
            i += 2
            continue
        if argv[i] not in ("--stats", "--fsdp", "--per-rank"):
            out.append(argv[i])
        i += 1
    return out


def _ranks(argv: list[str]) -> dict:
    """--nproc, --fsdp and --per-rank of a runner or nsysql argv, as run_capture's keywords."""
    nproc = int(argv[argv.index("--nproc") + 1]) if "--nproc" in argv else None
    return {"nproc": nproc, "fsdp": "--fsdp" in argv, "per_rank": "--per-rank" in argv}


def _without_distributed(workload: list[str]) -> tuple[list[str], str | None]:
    """The workload argv without the --distributed KIND the runner adds for --nproc, and KIND."""
    if "--distributed" not in workload:
        return workload, None
    at = workload.index("--distributed")
    return workload[:at] + workload[at + 2:], workload[at + 1]


def _logged(folder: Path) -> dict:
    """From a fixture's capture.log: the nsysql equivalent, the runner's and the workload's argv."""
    text = (folder / "capture.log").read_text()
    nsysql_line = re.search(r"^nsysql equivalent: (nsysql capture .*)$", text, re.M).group(1)
    runner_line = re.search(r"^\$ (?:timeout \d+ )?python3 -m capture\.runner (.*)$", text,
                            re.M).group(1)
    # nsys profile ... PROGRAM, or (one nsys per rank) torchrun ... --no-python nsys profile ... PROGRAM
    profile_line = re.search(r"^\$ (?:\S*torchrun .*?--no-python )?\S*nsys profile (.*)$", text, re.M).group(1)
    program = shlex.split(profile_line)
    at = program.index("-m")
    assert program[at + 1] == "capture"
    workload, distributed = _without_distributed(program[at + 3:])
    return {"nsysql": shlex.split(nsysql_line)[2:], "runner": shlex.split(runner_line),
            "model": program[at + 2], "workload": workload, "distributed": distributed}


LOGGED = sorted(p.parent for p in FIXTURES.glob("*/capture.log")
                if "nsysql equivalent:" in p.read_text())


def test_fixture_logs_are_found() -> None:
    assert {p.name for p in LOGGED} >= {"cnn-dataloader-train", "cnn-pinned-train",
                                        "cnn-pinned-launch-bound", "cnn-nccl-1gpu"}


@pytest.mark.parametrize("folder", LOGGED, ids=lambda p: p.name)
def test_capture_log_nsysql_line_runs_the_logged_workload(calls: list, folder: Path) -> None:
    logged = _logged(folder)
    model, workload, output, kw = capture_argv(calls, logged["nsysql"])
    assert model == logged["model"]
    assert _pairs(workload) == _pairs(logged["workload"])
    assert kw["stats"] == ("--stats" in logged["runner"])
    runner_argv = _without_output_and_stats(logged["runner"])
    assert runner_argv[0] == model and _pairs(runner_argv[1:]) == _pairs(logged["workload"])
    ranks = _ranks(logged["runner"])
    assert {key: kw.get(key) for key in ranks} == ranks == _ranks(logged["nsysql"])
    assert logged["distributed"] == runner.distributed_kind(ranks["nproc"], ranks["fsdp"])


def _readme_rows() -> list[tuple[str, str]]:
    """(folder, command) of fixtures/README.md's tables: `nsysql capture ...`, or the options
    of `python3 -m capture.runner` (a row whose command starts with a model name)."""
    rows = []
    models = "|".join(MODEL_NAMES)
    for line in (FIXTURES / "README.md").read_text().splitlines():
        folder = re.match(r"\| `([^`]+)` \|", line)
        command = re.search(rf"`((?:nsysql capture )?(?:{models}) --[^`]*)`", line)
        if folder and command:
            rows.append((folder.group(1), command.group(1)))
    return rows


def _script_fixtures() -> dict[str, list[str]]:
    """scripts/make_fixtures.sh's FIXTURES: name -> [model, workload options...]."""
    text = (REPO / "scripts" / "make_fixtures.sh").read_text()
    body = text.split("FIXTURES=(", 1)[1].split("\n)", 1)[0]
    return {name: shlex.split(options)
            for name, options in re.findall(r'^\s*"([^|"]+)\|([^|"]+)(?:\|[^"]*)?"', body, re.M)}


README_ROWS = _readme_rows()


def test_readme_rows_are_found() -> None:
    folders = {folder for folder, _ in README_ROWS}
    assert {"gpt-tiny-train-fp32", "dlrm-train", "cnn-dataloader-train", "cnn-nccl-1gpu"} <= folders
    assert all((FIXTURES / folder).is_dir() for folder in folders)


@pytest.mark.parametrize("folder, command", README_ROWS, ids=[f for f, _ in README_ROWS])
def test_readme_command_runs_the_recorded_workload(calls: list, folder: str,
                                                   command: str) -> None:
    """A README command, through `nsysql capture`, gives the workload argv of the fixture's
    capture.log (or, for fixtures without one, of scripts/make_fixtures.sh's entry)."""
    argv = shlex.split(command)
    if argv[:2] == ["nsysql", "capture"]:
        argv = argv[2:]
    else:  # the options of `python3 -m capture.runner ... -o NAME --stats`
        argv = [*argv, "-o", folder.replace("-", "_"), "--stats"]
    model, workload, output, kw = capture_argv(calls, argv)
    assert kw["stats"] is True
    if (FIXTURES / folder / "capture.log").is_file():
        logged = _logged(FIXTURES / folder)
        recorded = [logged["model"], *logged["workload"]]
        assert {key: kw.get(key) for key in ("nproc", "fsdp", "per_rank")} == _ranks(logged["runner"])
    else:
        recorded = _script_fixtures()[output.name]
    assert model == recorded[0]
    assert _pairs(workload) == _pairs(recorded[1:])


# --- end to end with a fake nsys --------------------------------------------------------------

def test_end_to_end_with_a_fake_nsys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nsys, log = fake_nsys(tmp_path)
    monkeypatch.setattr(runner, "check_torch_cuda", lambda: None)
    out = tmp_path / "run"
    result = invoke(["capture", "cnn", "-o", str(out), "--nsys", str(nsys), "--dataloader",
                     "--workers", "2", "--pin-memory", "--no-sync", "--allreduce", "--tf32",
                     "--pool", "8", "--", "-t", "cuda", "--duration=5"])
    assert result.exit_code == 0, result.output
    profile, export = [json.loads(line)["args"] for line in log.read_text().splitlines()]
    assert profile[:9] == ["profile", "-s", "none", "--cpuctxsw=none",
                           "--python-sampling=false", "-o", str(out), "-f", "true"]
    assert profile[9:12] == ["-t", "cuda", "--duration=5"]
    assert profile[12:] == [sys.executable, "-m", "capture", "cnn", "--mode", "train",
                            "--dtype", "fp32", "--pool", "8", "--dataloader", "--workers", "2",
                            "--pin-memory", "--no-sync", "--tf32", "--allreduce"]
    assert export[0] == "export" and (tmp_path / "run.sqlite").is_file()
    assert f"wrote {tmp_path / 'run.sqlite'}" in result.output
