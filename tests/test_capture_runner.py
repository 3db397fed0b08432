"""The nsys command lines the capture runner builds, its errors, and the CLI command.

None of these tests needs torch or nsys.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from capture import runner
from capture.runner import CaptureError
from nsysql.cli.capture import capture as capture_command

NSYS = "/opt/nsys/bin/nsys"
PY = "/usr/bin/python3"
DEFAULTS = ["-t", "cuda,nvtx,osrt", "-s", "none", "--cpuctxsw=none", "--python-sampling=false"]


def program(*workload: str) -> list[str]:
    return [PY, "-m", "capture", "gpt", *workload]


def plan(tmp_path: Path, flags: list[str] = (), **kwargs) -> runner.CapturePlan:
    return runner.plan_capture(NSYS, tmp_path / "run", "gpt", ["--size", "tiny"], flags,
                               python=PY, **kwargs)


def test_default_commands(tmp_path: Path) -> None:
    out = str(tmp_path / "run")
    p = plan(tmp_path)
    assert p.profile == [NSYS, "profile", *DEFAULTS, "-o", out, "-f", "true",
                         *program("--size", "tiny")]
    assert p.export == [NSYS, "export", "--type", "sqlite", "-f", "true",
                        "-o", out + ".sqlite", out + ".nsys-rep"]
    assert p.stats is None and p.stats_files == ()
    assert (p.report, p.sqlite) == (Path(out + ".nsys-rep"), Path(out + ".sqlite"))


def test_stats_command_and_files(tmp_path: Path) -> None:
    out = str(tmp_path / "run")
    p = plan(tmp_path, stats=True)
    assert p.stats == [
        NSYS, "stats", "-r",
        "nvtx_sum,nvtx_gpu_proj_sum,nvtx_kern_sum,cuda_api_sum,cuda_gpu_kern_sum,"
        "cuda_kern_exec_sum,cuda_gpu_mem_time_sum,cuda_gpu_mem_size_sum,osrt_sum",
        "-f", "csv", "-o", out, out + ".sqlite"]
    assert p.stats_files[0] == Path(out + "_nvtx_sum.csv")
    assert p.stats_files[-1] == Path(out + "_osrt_sum.csv")
    assert len(p.stats_files) == 9
    chosen = plan(tmp_path, stats=True, reports=["nvtx_sum", "cuda_gpu_kern_sum"])
    assert chosen.stats[3] == "nvtx_sum,cuda_gpu_kern_sum"
    assert [f.name for f in chosen.stats_files] == ["run_nvtx_sum.csv",
                                                    "run_cuda_gpu_kern_sum.csv"]


@pytest.mark.parametrize("flags, replaced", [
    (["-t", "cuda"], ["-t", "cuda,nvtx,osrt"]),
    (["--trace", "cuda,nvtx"], ["-t", "cuda,nvtx,osrt"]),
    (["--trace=cuda,osrt"], ["-t", "cuda,nvtx,osrt"]),
    (["-s", "process-tree"], ["-s", "none"]),
    (["--sample=cpu"], ["-s", "none"]),
    (["--cpuctxsw=process-tree"], ["--cpuctxsw=none"]),
    (["--cpuctxsw", "process-tree"], ["--cpuctxsw=none"]),
    (["--python-sampling=true"], ["--python-sampling=false"]),
    (["-f", "false"], ["-f", "true"]),
    (["--force-overwrite=false"], ["-f", "true"]),
])
def test_user_flag_replaces_its_default(tmp_path: Path, flags: list[str],
                                        replaced: list[str]) -> None:
    out = str(tmp_path / "run")
    defaults = [*DEFAULTS, "-o", out, "-f", "true"]
    start = next(i for i in range(len(defaults)) if defaults[i:i + len(replaced)] == replaced)
    kept = defaults[:start] + defaults[start + len(replaced):]
    assert plan(tmp_path, flags).profile == [NSYS, "profile", *kept, *flags,
                                             *program("--size", "tiny")]


def test_other_user_flags_keep_every_default(tmp_path: Path) -> None:
    flags = ["--cuda-memory-usage=true", "--duration", "30"]
    out = str(tmp_path / "run")
    assert plan(tmp_path, flags).profile == [NSYS, "profile", *DEFAULTS, "-o", out, "-f", "true",
                                             *flags, *program("--size", "tiny")]


@pytest.mark.parametrize("form", ["short", "long", "long="])
def test_user_output_replaces_default_and_is_used_for_export(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, form: str) -> None:
    monkeypatch.chdir(tmp_path)
    mine = tmp_path / "sub" / "mine"
    flags = {"short": ["-o", "sub/mine"], "long": ["--output", "sub/mine.nsys-rep"],
             "long=": ["--output=sub/mine"]}[form]
    p = runner.plan_capture(NSYS, tmp_path / "run", "gpt", [], flags, python=PY, stats=True)
    given = {"short": ["-o", str(mine)], "long": ["--output", str(mine)],
             "long=": [f"--output={mine}"]}[form]
    assert p.profile == [NSYS, "profile", *DEFAULTS, "-f", "true", *given, *program()]
    assert p.report == Path(f"{mine}.nsys-rep")
    assert p.export[-3:] == ["-o", f"{mine}.sqlite", f"{mine}.nsys-rep"]
    assert p.stats[-3:] == ["-o", str(mine), f"{mine}.sqlite"]


def test_output_is_made_absolute_and_loses_its_suffix(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for given in ("x", "x.sqlite", "x.nsys-rep"):
        p = runner.plan_capture(NSYS, given, "ncf", [], python=PY)
        assert p.sqlite == tmp_path / "x.sqlite"
        assert p.profile[p.profile.index("-o") + 1] == str(tmp_path / "x")


def test_workload_argv() -> None:
    assert runner.workload_argv("gpt", size="tiny", mode="train", dtype="bf16", batch=2,
                                seq=64, warmup=1, steps=1) == [
        "--size", "tiny", "--mode", "train", "--dtype", "bf16", "--batch", "2", "--seq", "64",
        "--warmup", "1", "--steps", "1"]
    assert runner.workload_argv("dlrm", rows=1000, rows_step=10, op_ranges=False) == [
        "--rows", "1000", "--rows-step", "10", "--no-op-ranges"]
    assert runner.workload_argv("ncf", size=None, users=None) == []


def test_workload_argv_loop_switches_and_cnn_options() -> None:
    assert runner.workload_argv(
        "cnn", dtype="fp32", tf32=False, batch=32, source_size=512, dataloader=True, workers=0,
        pin_memory=False, sync=True, log_every=1, checkpoint_every=4, channels_last=None,
        op_ranges=False) == [
        "--dtype", "fp32", "--no-tf32", "--batch", "32", "--source-size", "512",
        "--dataloader", "--workers", "0", "--no-pin-memory", "--sync", "--log-every", "1",
        "--checkpoint-every", "4", "--no-op-ranges"]
    assert runner.workload_argv("gpt", allreduce=True, sync=False) == ["--allreduce", "--no-sync"]


@pytest.mark.parametrize("model, options, message", [
    ("gpt", {"users": 5}, "--users does not apply to gpt"),
    ("ncf", {"seq": 5}, "--seq does not apply to ncf"),
    ("bert", {"size": "tiny"}, "--size does not apply to bert"),
    ("gpt", {"size": "huge"}, "unknown --size 'huge'"),
    ("gpt", {"mode": "infer"}, "unknown --mode 'infer'"),
    ("resnet", {}, "unknown model 'resnet'"),
    ("gpt", {"image_size": 32}, "--image-size does not apply to gpt"),
])
def test_workload_argv_errors(model: str, options: dict, message: str) -> None:
    with pytest.raises(CaptureError, match=message):
        runner.workload_argv(model, **options)


def test_check_loop_options_are_the_workloads_checks() -> None:
    runner.check_loop_options()  # the defaults
    runner.check_loop_options(mode="forward", workers=0, log_every=0, allreduce=False)
    runner.check_loop_options(dataloader=True, workers=4, log_every=1, allreduce=True)
    for options, message in [({"workers": 2}, "--workers needs --dataloader"),
                             ({"dataloader": False, "workers": 1}, "--workers needs"),
                             ({"mode": "forward", "log_every": 1}, "--log-every needs a loss"),
                             ({"mode": "forward", "allreduce": True}, "--allreduce needs")]:
        with pytest.raises(CaptureError, match=message):
            runner.check_loop_options(**options)


def test_nsys_missing_from_path(tmp_path: Path) -> None:
    with pytest.raises(CaptureError) as info:
        runner.find_nsys(path=str(tmp_path))
    assert "--nsys" in str(info.value) and "PATH" in str(info.value)


def test_nsys_explicit_path_missing(tmp_path: Path) -> None:
    with pytest.raises(CaptureError) as info:
        runner.find_nsys(tmp_path / "nope" / "nsys")
    assert "--nsys" in str(info.value) and str(tmp_path / "nope" / "nsys") in str(info.value)


def fake_executable(path: Path, body: str = "exit 0\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def test_nsys_found_on_path_or_as_folder(tmp_path: Path) -> None:
    nsys = fake_executable(tmp_path / "bin" / "nsys")
    assert runner.find_nsys(path=str(tmp_path / "bin")) == str(nsys)
    assert runner.find_nsys(tmp_path / "bin") == str(nsys)
    assert runner.find_nsys(nsys) == str(nsys)


def test_torch_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # makes `import torch` fail
    with pytest.raises(CaptureError, match=r"pip install 'nsysql\[capture\]'"):
        runner.check_torch_cuda()


def test_cuda_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = types.SimpleNamespace(__version__="9.9.9+cpu",
                                 cuda=types.SimpleNamespace(is_available=lambda: False))
    monkeypatch.setitem(sys.modules, "torch", fake)
    with pytest.raises(CaptureError, match="CUDA is not available") as info:
        runner.check_torch_cuda()
    assert "9.9.9+cpu" in str(info.value)


def test_cuda_available(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = types.SimpleNamespace(__version__="9.9.9",
                                 cuda=types.SimpleNamespace(is_available=lambda: True))
    monkeypatch.setitem(sys.modules, "torch", fake)
    runner.check_torch_cuda()


def test_profiling_env_is_small() -> None:
    environ = {"PATH": "/bin", "LD_LIBRARY_PATH": "/lib", "AWS_SECRET": "x", "USER": "me",
               "PWD": "/work/main", "CUDA_VISIBLE_DEVICES": "0"}
    env = runner.profiling_env("/scratch", environ)
    assert env == {"PATH": "/bin", "LD_LIBRARY_PATH": "/lib", "CUDA_VISIBLE_DEVICES": "0",
                   "HOME": "/scratch", "PYTHONPATH": env["PYTHONPATH"],
                   "PYTHONUNBUFFERED": "1"}
    assert (Path(env["PYTHONPATH"]) / "capture" / "runner.py").is_file()


FAKE_NSYS = r'''#!{python}
"""Fake nsys: records its call, runs the profiled program's import of capture, writes files."""
import json, os, subprocess, sys
args = sys.argv[1:]
with open({log!r}, "a") as log:
    log.write(json.dumps({{"args": args, "cwd": os.getcwd(), "env": dict(os.environ)}}) + "\n")
def value(flag):
    return args[args.index(flag) + 1]
if args[0] == "profile":
    py = args[args.index("-m") - 1]
    subprocess.run([py, "-c", "import capture.runner"], check=True)
    open(value("-o").replace("%q{{RANK}}", os.environ.get("RANK", "")) + ".nsys-rep", "w").close()
elif args[0] == "export":
    open(value("-o"), "w").close()
elif args[0] == "stats":
    for report in value("-r").split(","):
        open(value("-o") + "_" + report + ".csv", "w").close()
elif args[0] == "recipe":
    if args[1] == "nccl_gpu_proj_sum":
        sys.exit(2)  # as a recipe this nsys lacks
    os.makedirs(value("--output"), exist_ok=True)
    open(os.path.join(value("--output"), "all_stats.csv"), "w").close()
'''


FAKE_TORCHRUN = r'''#!{python}
"""Fake torchrun --standalone --nproc_per_node=N --no-python PROGRAM: PROGRAM once per rank, one after another."""
import os, subprocess, sys
args = sys.argv[1:]
nproc = int(next(a for a in args if a.startswith("--nproc_per_node=")).split("=")[1])
program = args[args.index("--no-python") + 1:]
for rank in range(nproc):
    env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(nproc))
    subprocess.run(program, env=env, check=True)
'''


def fake_torchrun(folder: Path) -> Path:
    torchrun = folder / "torchrun"
    torchrun.parent.mkdir(parents=True, exist_ok=True)
    torchrun.write_text(FAKE_TORCHRUN.format(python=sys.executable))
    torchrun.chmod(0o755)
    return torchrun


def fake_nsys(folder: Path) -> tuple[Path, Path]:
    """(FAKE_NSYS written as folder/bin/nsys, the file its calls go to: one JSON object a line)."""
    log = folder / "calls.jsonl"
    nsys = folder / "bin" / "nsys"
    nsys.parent.mkdir()
    nsys.write_text(FAKE_NSYS.format(python=sys.executable, log=str(log)))
    nsys.chmod(0o755)
    return nsys, log


def test_run_capture_end_to_end_with_fake_nsys(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    nsys, log = fake_nsys(tmp_path)
    monkeypatch.setattr(runner, "check_torch_cuda", lambda: None)
    monkeypatch.setenv("SOME_TOKEN", "do-not-record")
    lines: list[str] = []
    p = runner.run_capture("gpt", ["--size", "tiny"], tmp_path / "out" / "run", nsys=nsys,
                           nsys_flags=["-t", "cuda,nvtx"], stats=True, echo=lines.append)
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert [c["args"][0] for c in calls] == ["profile", "export", "stats"]
    assert calls[0]["args"] == p.profile[1:]
    repo = Path(runner.__file__).resolve().parent.parent
    for call in calls:
        assert Path(call["cwd"]) != repo and call["cwd"] == call["env"]["HOME"]
        assert "SOME_TOKEN" not in call["env"]
    assert p.sqlite.is_file() and all(f.is_file() for f in p.stats_files)
    assert lines[0].startswith("$ " + str(nsys) + " profile -s none")
    assert lines[-1] == f"wrote {p.stats_files[-1]}"


def test_execute_reports_failures(tmp_path: Path) -> None:
    p = runner.plan_capture(NSYS, tmp_path / "run", "gpt", [], python=PY)

    def failing(command, **kwargs):
        return subprocess.CompletedProcess(command, 3)

    with pytest.raises(CaptureError, match="nsys profile exited with status 3"):
        runner.execute(p, run=failing, echo=lambda line: None)

    def silent(command, **kwargs):  # succeeds but writes nothing
        return subprocess.CompletedProcess(command, 0)

    with pytest.raises(CaptureError, match=r"wrote no .*run\.nsys-rep.*qdstrm"):
        runner.execute(p, run=silent, echo=lambda line: None)


def test_runner_main_dry_run(capsys: pytest.CaptureFixture) -> None:
    status = runner.main(["gpt", "--size", "tiny", "-o", "/tmp/x", "--stats", "--dry-run",
                          "--nsys", NSYS, "--python", PY, "--steps", "2", "--", "-s", "cpu"])
    assert status == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == (f"{NSYS} profile -t cuda,nvtx,osrt --cpuctxsw=none "
                        f"--python-sampling=false -o /tmp/x -f true -s cpu "
                        f"{PY} -m capture gpt --size tiny --steps 2")
    assert lines[1].startswith(f"{NSYS} export --type sqlite")
    assert lines[2].startswith(f"{NSYS} stats -r nvtx_sum,")


def test_runner_main_dry_run_cnn_with_a_dataloader(capsys: pytest.CaptureFixture) -> None:
    status = runner.main(["cnn", "-o", "/tmp/x", "--dry-run", "--nsys", NSYS, "--python", PY,
                          "--dataloader", "--workers", "4", "--pin-memory", "--no-sync"])
    assert status == 0
    assert capsys.readouterr().out.splitlines()[0].endswith(
        f"{PY} -m capture cnn --dataloader --workers 4 --pin-memory --no-sync")


def test_profiling_env_keeps_nccl_settings() -> None:
    env = runner.profiling_env("/scratch", {"NCCL_NVTX_DISABLE": "1", "NCCL_DEBUG": "INFO"})
    assert (env["NCCL_NVTX_DISABLE"], env["NCCL_DEBUG"]) == ("1", "INFO")


def test_runner_main_errors_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert runner.main(["gpt", "-o", str(tmp_path / "x")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("Error: nsys not found on PATH") and err.count("\n") == 1


# --- the typer command --------------------------------------------------------------------

def make_app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def main() -> None:
        """nsysql (test app)."""

    app.command("capture", context_settings={"allow_extra_args": True,
                                             "ignore_unknown_options": True})(capture_command)
    return app


def test_cli_help_lists_the_options() -> None:
    result = CliRunner().invoke(make_app(), ["capture", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    for option in ("--output", "--size", "--mode", "--dtype", "--batch", "--seq", "--warmup",
                   "--steps", "--op-ranges", "--no-op-ranges", "--layers", "--users",
                   "--items", "--rows", "--rows-step", "--stats", "--nsys"):
        assert option in result.output, option
    assert "Profile a seed model under Nsight Systems" in result.output


def test_cli_passes_options_and_nsys_flags(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    monkeypatch.setattr(runner, "run_capture", lambda *a, **k: calls.append((a, k)))
    result = CliRunner().invoke(make_app(), [
        "capture", "dlrm", "-o", str(tmp_path / "x"), "--rows", "1000", "--rows-step", "10",
        "--batch", "256", "--warmup", "1", "--no-op-ranges", "--stats", "--nsys", "/x/nsys",
        "--", "-t", "cuda,nvtx", "--sample=cpu"])
    assert result.exit_code == 0, result.output
    [(args, kwargs)] = calls
    assert args == ("dlrm", ["--mode", "train", "--dtype", "fp32", "--batch", "256",
                             "--warmup", "1", "--rows", "1000", "--rows-step", "10",
                             "--no-op-ranges"], tmp_path / "x")
    assert kwargs["nsys_flags"] == ["-t", "cuda,nvtx", "--sample=cpu"]
    assert kwargs["stats"] is True and kwargs["nsys"] == Path("/x/nsys")


@pytest.mark.parametrize("argv, message", [
    (["--nsys", "/nonexistent/nsys"], "Error: nsys not found at /nonexistent/nsys"),
    ([], "Error: nsys not found on PATH"),
    (["--users", "5"], "Error: --users does not apply to gpt"),
])
def test_cli_errors_exit_1_with_one_line(tmp_path: Path, argv: list[str], message: str) -> None:
    result = CliRunner().invoke(make_app(), ["capture", "gpt", "-o", str(tmp_path / "x"), *argv],
                                env={"PATH": str(tmp_path)})
    assert result.exit_code == 1
    assert result.stderr.startswith(message)
    assert result.stderr.count("\n") == 1
    assert "--nsys" in result.stderr or "--users" in result.stderr


def test_cli_cuda_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = types.SimpleNamespace(__version__="9.9.9+cpu",
                                 cuda=types.SimpleNamespace(is_available=lambda: False))
    monkeypatch.setitem(sys.modules, "torch", fake)
    nsys = fake_executable(tmp_path / "nsys")
    result = CliRunner().invoke(make_app(), ["capture", "gpt", "--size", "tiny", "--mode",
                                             "train", "-o", str(tmp_path / "x"), "--stats",
                                             "--nsys", str(nsys)])
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: CUDA is not available")


def test_command_module_imports_neither_torch_nor_duckdb_nor_polars() -> None:
    code = ("import sys; import nsysql; before = set(sys.modules); "
            "import nsysql.cli.capture; "
            "print(sorted(m for m in {'torch', 'duckdb', 'polars'} & (set(sys.modules) - before)))")
    root = Path(runner.__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(root)}, check=True).stdout
    assert out.strip() == "[]"


# --- several ranks: --nproc, --fsdp, --per-rank --------------------------------------------------------

TORCHRUN = "/opt/torch/bin/torchrun"
TORCHRUN_ARGS = ["--standalone", "--nproc_per_node=2", "--no-python"]
OFF = (("NCCL_NVLS_ENABLE", "0"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"), ("NVSHMEM_DISABLE_NVLS", "1"))


def ranked(tmp_path: Path, flags: list[str] = (), **kwargs) -> runner.CapturePlan:
    return plan(tmp_path, flags, torchrun=TORCHRUN, **kwargs)


def test_nproc_runs_torchrun_under_one_nsys(tmp_path: Path) -> None:
    out = str(tmp_path / "run")
    p = ranked(tmp_path, nproc=2)
    assert p.profile == [NSYS, "profile", *DEFAULTS, "-o", out, "-f", "true",
                         TORCHRUN, *TORCHRUN_ARGS, *program("--size", "tiny", "--distributed", "ddp")]
    assert (p.report, p.sqlite) == (Path(out + ".nsys-rep"), Path(out + ".sqlite"))
    assert p.recipes == () and p.env == OFF
    fsdp = ranked(tmp_path, nproc=2, fsdp=True)
    assert fsdp.profile[-2:] == ["--distributed", "fsdp"]
    one = ranked(tmp_path, nproc=1)  # torchrun with one rank: DDP in a world of one
    assert one.profile[one.profile.index(TORCHRUN) + 2] == "--nproc_per_node=1"


def test_per_rank_runs_one_nsys_per_rank_under_torchrun(tmp_path: Path) -> None:
    from nsysql.answers.multi import rank_of

    out = str(tmp_path / "run")
    p = ranked(tmp_path, ["--duration=9"], nproc=2, per_rank=True, stats=True)
    assert p.profile == [TORCHRUN, *TORCHRUN_ARGS, NSYS, "profile", *DEFAULTS,
                         "-o", out + "_rank%q{RANK}", "-f", "true", "--duration=9",
                         *program("--size", "tiny", "--distributed", "ddp")]
    assert [e.report for e in p.exports] == [Path(out + "_rank0.nsys-rep"), Path(out + "_rank1.nsys-rep")]
    assert [rank_of(e.sqlite) for e in p.exports] == [0, 1]
    assert p.exports[1].export == [NSYS, "export", "--type", "sqlite", "-f", "true",
                                   "-o", out + "_rank1.sqlite", out + "_rank1.nsys-rep"]
    assert p.exports[1].stats[-3:] == ["-o", out + "_rank1", out + "_rank1.sqlite"]
    assert p.exports[0].stats_files[0] == Path(out + "_rank0_nvtx_sum.csv")
    with pytest.raises(ValueError, match="2 exports"):
        _ = p.sqlite
    assert len(p.commands()) == 1 + 2 * 2 + 3


def test_per_rank_user_output_gets_the_rank(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    p = ranked(tmp_path, ["--output=sub/mine"], nproc=2, per_rank=True)
    assert f"--output={tmp_path}/sub/mine_rank%q{{RANK}}" in p.profile
    assert "-o" not in p.profile
    assert p.exports[0].report == tmp_path / "sub" / "mine_rank0.nsys-rep"


def test_stats_of_several_ranks_run_the_nccl_recipes(tmp_path: Path) -> None:
    out = str(tmp_path / "run")
    job = ranked(tmp_path, nproc=2, stats=True)
    assert [r.name for r in job.recipes] == ["nccl_sum", "nccl_gpu_overlap_trace", "nccl_gpu_proj_sum"]
    assert job.recipes[0].command == [NSYS, "recipe", "nccl_sum", "--input", out + ".nsys-rep",
                                      "--output", out + "_nccl_sum", "--force-overwrite", "--csv"]
    assert job.recipes[0].folder == Path(out + "_nccl_sum")
    per_rank = ranked(tmp_path, nproc=2, per_rank=True, stats=True)
    command = per_rank.recipes[1].command
    assert command[command.index("--input") + 1:command.index("--output")] == [
        out + "_rank0.nsys-rep", out + "_rank1.nsys-rep"]
    assert job.commands()[-3:] == [r.command for r in job.recipes]
    assert ranked(tmp_path, nproc=2).recipes == ()  # no --stats
    assert ranked(tmp_path, nproc=1, stats=True).recipes == ()  # one rank: no NCCL traffic
    assert plan(tmp_path, stats=True).recipes == ()


@pytest.mark.parametrize("model, kwargs, message", [
    ("gpt", {"per_rank": True}, "--per-rank needs --nproc 2 or more"),
    ("gpt", {"nproc": 1, "per_rank": True}, "--per-rank needs --nproc 2 or more"),
    ("gpt", {"fsdp": True}, "--fsdp needs --nproc N"),
    ("ncf", {"nproc": 2, "fsdp": True}, r"--fsdp does not apply to ncf \(only to gpt, bert, cnn, hf"),
    ("dlrm", {"nproc": 2, "fsdp": True}, "--fsdp does not apply to dlrm"),
    ("gpt", {"nproc": 2, "straggle_rank": 2}, r"--straggle-rank 2 is no rank of the job \(--nproc 2 has ranks 0 to 1\)"),
    ("gpt", {"straggle_rank": 1}, r"--straggle-rank 1 is no rank of the job \(one process is rank 0\)"),
    ("gpt", {"nproc": 0}, "--nproc 0: a job needs at least one rank"),
])
def test_check_parallel_errors(model: str, kwargs: dict, message: str) -> None:
    with pytest.raises(CaptureError, match=message):
        runner.check_parallel(model, kwargs.pop("nproc", None), **kwargs)


def test_check_parallel_accepts() -> None:
    runner.check_parallel("gpt", None)
    runner.check_parallel("gpt", None, straggle_rank=0)
    runner.check_parallel("cnn", 4, per_rank=True, fsdp=True, straggle_rank=3)
    runner.check_parallel("ncf", 2)  # DDP takes any model


def test_plan_refuses_per_rank_of_one(tmp_path: Path) -> None:
    with pytest.raises(CaptureError, match="--per-rank needs --nproc 2"):
        ranked(tmp_path, nproc=1, per_rank=True)


def test_check_loop_options_for_ranks() -> None:
    runner.check_loop_options(distributed="ddp", straggle_rank=1, straggle_ms=25, straggle_step=1)
    for options, message in [({"distributed": "ddp", "mode": "forward"}, "several ranks exchange gradients"),
                             ({"distributed": "fsdp", "allreduce": True}, "--allreduce is a world of one"),
                             ({"straggle_rank": 1}, "go together"),
                             ({"straggle_rank": 1, "straggle_ms": 5, "straggle_step": 2, "steps": 1},
                              "past the last profiled step")]:
        with pytest.raises(CaptureError, match=message):
            runner.check_loop_options(**options)


def test_torchrun_found_beside_python_then_on_path(tmp_path: Path) -> None:
    beside = fake_executable(tmp_path / "venv" / "bin" / "torchrun")
    on_path = fake_executable(tmp_path / "path" / "torchrun")
    python = str(tmp_path / "venv" / "bin" / "python")
    assert runner.find_torchrun(python, path=str(tmp_path / "path")) == str(beside)
    assert runner.find_torchrun(str(tmp_path / "other" / "python"), path=str(tmp_path / "path")) == str(on_path)
    assert runner.find_torchrun(python, on_path.parent) == str(on_path)  # explicit: a folder
    with pytest.raises(CaptureError, match=r"torchrun not found \(beside .*other/python or on PATH\)"):
        runner.find_torchrun(str(tmp_path / "other" / "python"), path=str(tmp_path / "none"))
    with pytest.raises(CaptureError, match="torchrun not found at /nope/torchrun"):
        runner.find_torchrun(python, "/nope/torchrun")


def _fake_torch(monkeypatch: pytest.MonkeyPatch, gpus: int) -> None:
    fake = types.SimpleNamespace(__version__="9.9.9", cuda=types.SimpleNamespace(
        is_available=lambda: gpus > 0, device_count=lambda: gpus))
    monkeypatch.setitem(sys.modules, "torch", fake)


def test_fewer_gpus_than_ranks(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_torch(monkeypatch, 1)
    with pytest.raises(CaptureError, match=r"--nproc 2 needs 2 GPUs \(one per rank\), but torch sees 1"):
        runner.check_gpus(2)
    runner.check_gpus(1)


def test_execute_sets_multicast_off_unless_the_caller_does(tmp_path: Path) -> None:
    p = ranked(tmp_path, nproc=2)
    seen = []

    def record(command, **kwargs):
        seen.append(kwargs["env"])
        Path(p.report).touch()
        if command[1] == "export":
            p.sqlite.touch()
        return subprocess.CompletedProcess(command, 0)

    runner.execute(p, run=record, echo=lambda line: None, environ={"PATH": "/bin", "NCCL_NVLS_ENABLE": "1"})
    assert seen[0]["NCCL_NVLS_ENABLE"] == "1"  # the caller's own setting is kept
    assert seen[0]["TORCH_SYMM_MEM_DISABLE_MULTICAST"] == "1" and seen[0]["NVSHMEM_DISABLE_NVLS"] == "1"
    seen.clear()
    single = plan(tmp_path)
    runner.execute(single, run=record, echo=lambda line: None, environ={"PATH": "/bin"})
    assert "NCCL_NVLS_ENABLE" not in seen[0]  # one process: the environment as it is


def test_execute_names_the_missing_rank_report(tmp_path: Path) -> None:
    p = ranked(tmp_path, nproc=2, per_rank=True)

    def only_rank0(command, **kwargs):
        p.exports[0].report.touch()
        return subprocess.CompletedProcess(command, 0)

    with pytest.raises(CaptureError, match=r"nsys profile finished but wrote no \S*run_rank1\.nsys-rep"):
        runner.execute(p, run=only_rank0, echo=lambda line: None)


def test_per_rank_end_to_end_with_fake_nsys_and_torchrun(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    nsys, log = fake_nsys(tmp_path)
    torchrun = fake_torchrun(tmp_path / "torch")
    monkeypatch.setattr(runner, "check_torch_cuda", lambda: None)
    _fake_torch(monkeypatch, 2)
    lines: list[str] = []
    p = runner.run_capture("gpt", ["--size", "tiny"], tmp_path / "out" / "run", nsys=nsys, stats=True,
                           echo=lines.append, nproc=2, per_rank=True, torchrun=torchrun)
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert [c["args"][0] for c in calls] == ["profile", "profile", "export", "stats", "export", "stats",
                                             "recipe", "recipe", "recipe"]
    assert [c["env"]["RANK"] for c in calls[:2]] == ["0", "1"]
    assert all(c["env"]["NCCL_NVLS_ENABLE"] == "0" for c in calls)
    assert all(e.sqlite.is_file() and all(f.is_file() for f in e.stats_files) for e in p.exports)
    assert lines[0].startswith(f"$ {torchrun} --standalone --nproc_per_node=2 --no-python {nsys} profile")
    assert any(line.startswith("nsys recipe nccl_gpu_proj_sum exited with status 2") for line in lines)
    assert f"wrote {tmp_path / 'out' / 'run_nccl_sum'}/" in lines
    assert not (tmp_path / "out" / "run_nccl_gpu_proj_sum").exists()


def test_runner_main_dry_run_per_rank(capsys: pytest.CaptureFixture) -> None:
    status = runner.main(["gpt", "--size", "tiny", "-o", "/tmp/x", "--stats", "--dry-run", "--nsys", NSYS,
                          "--python", PY, "--torchrun", TORCHRUN, "--nproc", "2", "--per-rank", "--fsdp",
                          "--straggle-rank", "1", "--straggle-ms", "25"])
    assert status == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == (f"{TORCHRUN} --standalone --nproc_per_node=2 --no-python {NSYS} profile "
                        f"-t cuda,nvtx,osrt -s none --cpuctxsw=none --python-sampling=false "
                        f"-o '/tmp/x_rank%q{{RANK}}' -f true {PY} -m capture gpt --size tiny "
                        f"--straggle-rank 1 --straggle-ms 25 --distributed fsdp")
    assert lines[1] == f"{NSYS} export --type sqlite -f true -o /tmp/x_rank0.sqlite /tmp/x_rank0.nsys-rep"
    assert lines[-1] == (f"{NSYS} recipe nccl_gpu_proj_sum --input /tmp/x_rank0.nsys-rep "
                         f"/tmp/x_rank1.nsys-rep --output /tmp/x_nccl_gpu_proj_sum --force-overwrite --csv")


def test_runner_main_parallel_errors_in_one_line(capsys: pytest.CaptureFixture) -> None:
    assert runner.main(["ncf", "-o", "/tmp/x", "--dry-run", "--nproc", "2", "--fsdp"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("Error: --fsdp does not apply to ncf") and err.count("\n") == 1
