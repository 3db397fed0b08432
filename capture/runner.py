"""Build and run the nsys command lines of a capture: profile, export to SQLite, stats.

The builders (`workload_argv`, `build_profile_command`, `build_export_command`,
`build_stats_command`, `build_torchrun_command`, `build_recipe_command`, `plan_capture`) are
pure; `run_capture` finds nsys (and torchrun), checks CUDA and runs a plan. Nothing here imports
torch at import time.

Several ranks (``nproc``): the workload runs as ``torchrun --standalone --nproc_per_node=N
--no-python PYTHON -m capture MODEL ... --distributed ddp|fsdp``. By default one ``nsys
profile`` runs around torchrun: every rank's process in one export OUT.sqlite, one clock.
With ``per_rank`` torchrun starts one ``nsys profile -o OUT_rank%q{RANK}`` per rank (nsys puts
the rank torchrun gave it into the name): OUT_rank0.sqlite, OUT_rank1.sqlite, ...; each export's
clock starts with its own session. With stats and several ranks, NVIDIA's NCCL recipes
(``nsys recipe nccl_sum ... --csv``) run over the job's report(s) into OUT_<recipe>/.

``python -m capture.runner MODEL -o OUT [--stats] [--nsys PATH] [--nproc N [--fsdp]
[--per-rank]] [workload options] [-- nsys profile flags]`` is the same runner without nsysql's
CLI (used on the GPU machine).
"""
from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

from capture.models import FSDP_MODELS, MODEL_NAMES
from capture.options import WORKLOAD_OPTIONS

# nsys stats reports written with --stats (the reports of the core issue).
STATS_REPORTS: tuple[str, ...] = (
    "nvtx_sum", "nvtx_gpu_proj_sum", "nvtx_kern_sum", "cuda_api_sum", "cuda_gpu_kern_sum",
    "cuda_kern_exec_sum", "cuda_gpu_mem_time_sum", "cuda_gpu_mem_size_sum", "osrt_sum",
)

# NVIDIA's multi-report recipes on NCCL, run with --stats over a job of several ranks (nsys 2024.x and later)
NCCL_RECIPES: tuple[str, ...] = ("nccl_sum", "nccl_gpu_overlap_trace", "nccl_gpu_proj_sum")

# NVLink multicast off in the ranks' environment (NCCL, PyTorch's symmetric memory, NVSHMEM), unless the
# caller's environment sets these variables itself: on shared multi-GPU hosts a program using multicast
# can take the host's GPUs out of service
MULTICAST_OFF: dict[str, str] = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
                                 "NVSHMEM_DISABLE_NVLS": "1"}

# per-rank output: nsys replaces %q{RANK} with the RANK torchrun set (nsysql.answers.multi.rank_of reads `_rank3`)
RANK_SUFFIX = "_rank"
_RANK_PATTERN = RANK_SUFFIX + "%q{RANK}"

# short form -> long form of the nsys profile options this runner sets by default
_SHORT_OPTIONS = {"-t": "--trace", "-s": "--sample", "-o": "--output", "-f": "--force-overwrite"}

# workload option -> models it applies to (None: every model), as capture.options declares them
_WORKLOAD_OPTIONS: dict[str, tuple[str, ...] | None] = {option.name: option.models for option in WORKLOAD_OPTIONS}
_LAST = ("op_ranges", "annotate", "op_ranges_last", "annotate_backward")  # every model's NVTX switches: last
_CHOICES = {option.name: option.choices for option in WORKLOAD_OPTIONS if option.choices}

# variables the profiled process keeps from the caller's environment, when set
_KEPT_ENV = ("PATH", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "TMPDIR",
             "NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS",
             "NCCL_NVTX_DISABLE", "NCCL_DEBUG")


class CaptureError(Exception):
    """A capture cannot run; the message says what is wrong and how to fix it."""


@dataclass(frozen=True)
class ExportPlan:
    """One report of a capture: its SQLite export and its nsys stats CSVs."""

    report: Path  # OUT.nsys-rep (OUT_rankR.nsys-rep per rank)
    sqlite: Path  # OUT.sqlite
    export: list[str]
    stats: list[str] | None
    stats_files: tuple[Path, ...]  # OUT_<report>.csv


@dataclass(frozen=True)
class RecipePlan:
    """``nsys recipe NAME`` over the job's reports, writing its CSVs into `folder`."""

    name: str
    command: list[str]
    folder: Path  # OUT_<recipe>


@dataclass(frozen=True)
class CapturePlan:
    """The commands of one capture and the files they write.

    `profile` is the command that runs the workload under nsys: ``nsys profile ... PROGRAM``, or
    with per-rank exports ``torchrun ... nsys profile ... PROGRAM``. `exports` has one entry per
    report it writes. `env` holds variables the profiled processes get unless the caller's
    environment sets them (MULTICAST_OFF for several ranks).
    """

    profile: list[str]
    exports: tuple[ExportPlan, ...]
    recipes: tuple[RecipePlan, ...] = ()
    env: tuple[tuple[str, str], ...] = ()

    def _only(self) -> ExportPlan:
        if len(self.exports) != 1:
            raise ValueError(f"this capture writes {len(self.exports)} exports: use .exports")
        return self.exports[0]

    @property
    def export(self) -> list[str]:
        return self._only().export

    @property
    def stats(self) -> list[str] | None:
        return self._only().stats

    @property
    def report(self) -> Path:
        return self._only().report

    @property
    def sqlite(self) -> Path:
        return self._only().sqlite

    @property
    def stats_files(self) -> tuple[Path, ...]:
        return self._only().stats_files

    def commands(self) -> list[list[str]]:
        out = [self.profile]
        for one in self.exports:
            out += [one.export] + ([one.stats] if one.stats else [])
        return out + [recipe.command for recipe in self.recipes]


def workload_argv(model: str, **options: object) -> list[str]:
    """``MODEL``'s workload options as ``python -m capture MODEL`` arguments, in the order given but --op-ranges and
    --annotate last (None = default)."""
    if model not in MODEL_NAMES:
        raise CaptureError(f"unknown model {model!r}: choose one of {', '.join(MODEL_NAMES)}")
    argv: list[str] = []
    ordered = [key for key in options if key not in _LAST] + [key for key in _LAST if key in options]
    for key in ordered:
        value = options[key]
        if key not in _WORKLOAD_OPTIONS:
            raise TypeError(f"unknown workload option {key!r}")
        if value is None:
            continue
        applies = _WORKLOAD_OPTIONS[key]
        flag = "--" + key.replace("_", "-")
        if applies is not None and model not in applies:
            raise CaptureError(f"{flag} does not apply to {model} (only to {', '.join(applies)})")
        choices = _CHOICES.get(key)
        if choices and value not in choices:
            raise CaptureError(f"unknown {flag} {value!r}: choose one of {', '.join(choices)}")
        if isinstance(value, bool):  # a --FLAG/--no-FLAG switch
            argv.append(flag if value else "--no-" + flag[2:])
        else:
            argv += [flag, str(value)]
    return argv


# the training-loop defaults of capture.workload (what an option left out means)
_LOOP_DEFAULTS: dict[str, object] = {
    "mode": "train", "dataloader": False, "workers": 0, "pin_memory": False, "sync": True,
    "log_every": 0, "checkpoint_every": 0, "tf32": None, "allreduce": False,
    "op_ranges": False, "op_ranges_last": False, "steps": 1, "distributed": None,
    "straggle_rank": None, "straggle_ms": None, "straggle_step": None,
    "checkpoint": False, "accum": 1, "nvtx": True, "graphs": False, "model": "gpt",
}


class _RaiseCaptureError:
    """Stands in for the workload's argparse parser: its error() raises CaptureError."""

    def error(self, message: str) -> None:
        raise CaptureError(message)


def check_loop_options(**options: object) -> None:
    """Raise CaptureError where workload options contradict each other (None = default).

    The checks are capture.workload's own (e.g. --workers needs --dataloader), run without
    torch, so that `nsysql capture` fails in one line before nsys starts.
    """
    from capture.workload import _check_loop_arguments

    values = dict(_LOOP_DEFAULTS)
    values.update({k: v for k, v in options.items() if v is not None})
    _check_loop_arguments(_RaiseCaptureError(), argparse.Namespace(**values))


def distributed_kind(nproc: int | None, fsdp: bool = False) -> str | None:
    """The workload's --distributed for `nproc` ranks: None (one process, no torchrun), ddp or fsdp."""
    if nproc is None:
        return None
    return "fsdp" if fsdp else "ddp"


def check_parallel(model: str, nproc: int | None, *, per_rank: bool = False, fsdp: bool = False,
                   straggle_rank: int | None = None) -> None:
    """Raise CaptureError where --nproc, --per-rank, --fsdp and --straggle-rank do not fit together
    (torch-free: before nsys starts)."""
    if nproc is not None and nproc < 1:
        raise CaptureError(f"--nproc {nproc}: a job needs at least one rank")
    if per_rank and (nproc is None or nproc < 2):
        raise CaptureError("--per-rank needs --nproc 2 or more: it writes one export per rank "
                           "(without it, --nproc N writes one export holding every rank)")
    if fsdp and nproc is None:
        raise CaptureError("--fsdp needs --nproc N: FSDP shards the model over N ranks")
    if fsdp and model not in FSDP_MODELS:
        raise CaptureError(f"--fsdp does not apply to {model} (only to {', '.join(FSDP_MODELS)}: "
                           f"models with repeated blocks to shard)")
    if straggle_rank is not None:
        world = nproc or 1
        if straggle_rank >= world:
            where = f"--nproc {nproc} has ranks 0 to {nproc - 1}" if nproc else "one process is rank 0"
            raise CaptureError(f"--straggle-rank {straggle_rank} is no rank of the job ({where})")


def _option_name(token: str) -> str | None:
    """The long name of the nsys option `token` spells, or None for a value."""
    if token.startswith("--"):
        return token.split("=", 1)[0]
    if token.startswith("-") and len(token) >= 2:
        return _SHORT_OPTIONS.get(token[:2], token.split("=", 1)[0])
    return None


def _user_output(flags: Sequence[str]) -> tuple[int, str] | None:
    """(index of the value token, value) of the last -o/--output in `flags`."""
    found = None
    for i, token in enumerate(flags):
        if _option_name(token) != "--output":
            continue
        if token.startswith("--output="):
            found = (i, token[len("--output="):])
        elif token.startswith("-o") and len(token) > 2:
            found = (i, token[2:].lstrip("="))
        elif i + 1 < len(flags):
            found = (i + 1, flags[i + 1])
    return found


def _base(path: str | Path) -> Path:
    """OUT without a .nsys-rep / .sqlite suffix, made absolute."""
    text = os.path.expanduser(str(path))
    for suffix in (".nsys-rep", ".sqlite"):
        if text.endswith(suffix):
            text = text[: -len(suffix)]
    return Path(os.path.abspath(text))


def build_profile_command(nsys: str, output: str | Path, program: Sequence[str],
                          user_flags: Sequence[str] = ()) -> list[str]:
    """``nsys profile <defaults> <user flags> <program>``; a user option replaces its default."""
    defaults: list[tuple[str, list[str]]] = [
        ("--trace", ["-t", "cuda,nvtx,osrt"]),
        ("--sample", ["-s", "none"]),
        ("--cpuctxsw", ["--cpuctxsw=none"]),
        ("--python-sampling", ["--python-sampling=false"]),
        ("--output", ["-o", str(output)]),
        ("--force-overwrite", ["-f", "true"]),
    ]
    given = {_option_name(token) for token in user_flags} - {None}
    command = [str(nsys), "profile"]
    for name, tokens in defaults:
        if name not in given:
            command += tokens
    return command + list(user_flags) + list(program)


def build_export_command(nsys: str, report: str | Path, sqlite: str | Path) -> list[str]:
    return [str(nsys), "export", "--type", "sqlite", "-f", "true", "-o", str(sqlite), str(report)]


def build_stats_command(nsys: str, sqlite: str | Path, prefix: str | Path,
                        reports: Sequence[str] = STATS_REPORTS) -> list[str]:
    """``nsys stats`` writing ``PREFIX_<report>.csv`` for each report."""
    return [str(nsys), "stats", "-r", ",".join(reports), "-f", "csv", "-o", str(prefix),
            str(sqlite)]


def build_torchrun_command(torchrun: str, nproc: int, program: Sequence[str]) -> list[str]:
    """``torchrun --standalone --nproc_per_node=N --no-python PROGRAM``: N copies of PROGRAM as the
    ranks of one job on this host (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR/PORT set for each)."""
    return [str(torchrun), "--standalone", f"--nproc_per_node={nproc}", "--no-python", *program]


def build_recipe_command(nsys: str, recipe: str, reports: Sequence[str | Path],
                         folder: str | Path) -> list[str]:
    """``nsys recipe RECIPE --input REPORT... --output FOLDER --force-overwrite --csv``."""
    return [str(nsys), "recipe", recipe, "--input", *map(str, reports), "--output", str(folder),
            "--force-overwrite", "--csv"]


def _set_output(flags: list[str], value: str) -> list[str] | None:
    """`flags` with the value of their last -o/--output replaced by `value`; None when they have none."""
    user_out = _user_output(flags)
    if user_out is None:
        return None
    index, old = user_out
    flags = list(flags)
    if flags[index] == old:
        flags[index] = value
    else:  # --output=VALUE or -oVALUE
        flags[index] = flags[index][: len(flags[index]) - len(old)] + value
    return flags


def _export_plan(nsys: str, base: Path, stats: bool, reports: Sequence[str]) -> ExportPlan:
    report = base.with_name(base.name + ".nsys-rep")
    sqlite = base.with_name(base.name + ".sqlite")
    return ExportPlan(
        report=report, sqlite=sqlite,
        export=build_export_command(nsys, report, sqlite),
        stats=build_stats_command(nsys, sqlite, base, reports) if stats else None,
        stats_files=tuple(base.with_name(f"{base.name}_{r}.csv") for r in reports) if stats else ())


def plan_capture(nsys: str, output: str | Path, model: str, workload_args: Sequence[str],
                 user_flags: Sequence[str] = (), *, stats: bool = False,
                 reports: Sequence[str] = STATS_REPORTS, python: str | None = None,
                 nproc: int | None = None, fsdp: bool = False, per_rank: bool = False,
                 torchrun: str = "torchrun", recipes: Sequence[str] = NCCL_RECIPES) -> CapturePlan:
    """All commands of a capture of ``python -m capture MODEL WORKLOAD_ARGS``.

    OUT (``-o``, or the user's own -o/--output after ``--``) is made absolute, because the
    profiled process runs in a scratch directory; OUT.nsys-rep, OUT.sqlite and
    OUT_<report>.csv are written. With `nproc` the workload runs as `nproc` ranks under
    `torchrun` (``--distributed ddp``, or fsdp with `fsdp`); with `per_rank` each rank under its
    own nsys, writing OUT_rankR.nsys-rep, OUT_rankR.sqlite and OUT_rankR_<report>.csv. With
    `stats` and several ranks, `recipes` run over the reports into OUT_<recipe>/.
    """
    check_parallel(model, nproc, per_rank=per_rank, fsdp=fsdp)
    flags = list(user_flags)
    user_out = _user_output(flags)
    base = _base(user_out[1] if user_out is not None else output)
    python = python or sys.executable
    kind = distributed_kind(nproc, fsdp)
    program = [python, "-m", "capture", model, *workload_args]
    if kind is not None:
        program += ["--distributed", kind]
    if per_rank:
        assert nproc is not None  # check_parallel
        target = base.with_name(base.name + _RANK_PATTERN)
        flags = _set_output(flags, str(target)) or flags
        per_rank_profile = build_profile_command(nsys, target, program, flags)
        profile = build_torchrun_command(torchrun, nproc, per_rank_profile)
        bases = [base.with_name(f"{base.name}{RANK_SUFFIX}{rank}") for rank in range(nproc)]
    else:
        flags = _set_output(flags, str(base)) or flags
        if nproc is not None:
            program = build_torchrun_command(torchrun, nproc, program)
        profile = build_profile_command(nsys, base, program, flags)
        bases = [base]
    exports = tuple(_export_plan(nsys, b, stats, reports) for b in bases)
    recipe_plans: tuple[RecipePlan, ...] = ()
    if stats and nproc is not None and nproc > 1:
        recipe_plans = tuple(
            RecipePlan(name, build_recipe_command(nsys, name, [e.report for e in exports],
                                                  base.with_name(f"{base.name}_{name}")),
                       base.with_name(f"{base.name}_{name}"))
            for name in recipes)
    env = tuple(MULTICAST_OFF.items()) if nproc is not None else ()
    return CapturePlan(profile=profile, exports=exports, recipes=recipe_plans, env=env)


def _executable_at(explicit: str | Path, name: str, hint: str) -> str:
    """The executable `name` at `explicit` (the file, or the folder holding it), else a one-line error with `hint`."""
    candidate = Path(os.path.expanduser(str(explicit)))
    if candidate.is_dir():
        candidate = candidate / name
    if candidate.is_file() and os.access(candidate, os.X_OK):
        return str(candidate.absolute())
    raise CaptureError(f"{name} not found at {explicit}: {hint}")


def find_nsys(explicit: str | Path | None = None, path: str | None = None) -> str:
    """The nsys executable: `explicit` (a file or the folder holding it), else nsys on PATH."""
    if explicit is not None:
        return _executable_at(explicit, "nsys", "pass --nsys with the path of an executable nsys, or leave --nsys "
                                                "out to use nsys on PATH")
    found = shutil.which("nsys", path=path)
    if found is None:
        raise CaptureError("nsys not found on PATH: install Nsight Systems and put its nsys on "
                           "PATH, or pass --nsys /path/to/nsys")
    return found


def find_torchrun(python: str | None = None, explicit: str | Path | None = None,
                  path: str | None = None) -> str:
    """torch's torchrun: `explicit` (a file or the folder holding it), else the one beside the
    interpreter `python` (a virtual environment's bin/), else torchrun on PATH."""
    if explicit is not None:
        return _executable_at(explicit, "torchrun", "pass --torchrun with the path of an executable torchrun, or "
                                                    "leave it out to use the one beside python or on PATH")
    beside = Path(python or sys.executable).parent / "torchrun"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("torchrun", path=path)
    if found is None:
        raise CaptureError(f"torchrun not found (beside {python or sys.executable} or on PATH): --nproc "
                           "starts the ranks with torch's torchrun; put it on PATH")
    return found


def check_gpus(nproc: int) -> None:
    """Raise CaptureError unless torch sees at least `nproc` GPUs (one per rank)."""
    import torch

    count = torch.cuda.device_count()
    if count < nproc:
        raise CaptureError(f"--nproc {nproc} needs {nproc} GPUs (one per rank), but torch sees {count}"
                           " (CUDA_VISIBLE_DEVICES limits them)")


def check_torch_cuda() -> None:
    """Raise CaptureError unless torch imports and sees a CUDA device."""
    try:
        import torch
    except ImportError:
        raise CaptureError("torch is not installed, and capture runs a torch workload: "
                           "pip install 'nsysql[capture]'") from None
    if not torch.cuda.is_available():
        raise CaptureError(f"CUDA is not available (torch {torch.__version__} sees no GPU): "
                           "capture needs an NVIDIA GPU with a CUDA build of torch; "
                           "`python -m capture MODEL --device cpu` runs the workload without nsys")


def profiling_env(home: str | Path, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """A small environment for nsys and the profiled process (nsys records it in the export).

    PATH, LD_LIBRARY_PATH and a few GPU settings are kept when set; HOME is `home`;
    PYTHONPATH is the folder holding the `capture` package, so ``-m capture`` imports.
    """
    environ = os.environ if environ is None else environ
    env = {key: environ[key] for key in _KEPT_ENV if key in environ}
    env.setdefault("PATH", os.defpath)
    env["HOME"] = str(home)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parent.parent)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def execute(plan: CapturePlan, *, echo: Callable[[str], None] = print,
            run: Callable[..., subprocess.CompletedProcess] = subprocess.run,
            environ: Mapping[str, str] | None = None) -> None:
    """Run a plan's commands in a scratch directory with `profiling_env` (plus the plan's `env`
    where the caller's environment does not set those variables). A failing nsys recipe is
    reported and skipped; any other failing command raises CaptureError."""
    with tempfile.TemporaryDirectory(prefix="nsysql-capture-") as scratch:
        env = profiling_env(scratch, environ)
        for key, value in plan.env:
            env.setdefault(key, value)
        steps: list[tuple[str, list[str], tuple[Path, ...]]] = [
            ("nsys profile", plan.profile, tuple(one.report for one in plan.exports))]
        for one in plan.exports:
            steps.append(("nsys export", one.export, (one.sqlite,)))
            if one.stats:
                for stale in one.stats_files:
                    stale.unlink(missing_ok=True)
                steps.append(("nsys stats", one.stats, ()))
        plan.exports[0].report.parent.mkdir(parents=True, exist_ok=True)
        for name, command, products in steps:
            echo("$ " + shlex.join(command))
            status = run(command, cwd=scratch, env=env).returncode
            if status != 0:
                raise CaptureError(f"{name} exited with status {status}; its output is above")
            missing = [str(p) for p in products if not Path(p).is_file()]
            if missing:
                hint = ""
                if name == "nsys profile":
                    hint = (" (if a .qdstrm was left, nsys's QdstrmImporter failed: "
                            "on the GPU image `source .gpu/device-env.sh` first)")
                raise CaptureError(f"{name} finished but wrote no {', '.join(missing)}{hint}")
        for recipe in plan.recipes:
            echo("$ " + shlex.join(recipe.command))
            status = run(recipe.command, cwd=scratch, env=env).returncode
            if status != 0:
                echo(f"nsys recipe {recipe.name} exited with status {status} (its output is above): "
                     f"no {recipe.folder.name}/; the exports and their stats are written")


def run_capture(model: str, workload_args: Sequence[str], output: str | Path, *,
                nsys: str | Path | None = None, nsys_flags: Sequence[str] = (),
                stats: bool = False, reports: Sequence[str] = STATS_REPORTS,
                python: str | None = None, echo: Callable[[str], None] = print,
                nproc: int | None = None, fsdp: bool = False, per_rank: bool = False,
                torchrun: str | Path | None = None) -> CapturePlan:
    """Profile ``python -m capture MODEL WORKLOAD_ARGS`` under nsys and export OUT.sqlite (with
    `nproc`: `nproc` ranks under torchrun, one export, or one per rank with `per_rank`)."""
    if model not in MODEL_NAMES:
        raise CaptureError(f"unknown model {model!r}: choose one of {', '.join(MODEL_NAMES)}")
    check_parallel(model, nproc, per_rank=per_rank, fsdp=fsdp)
    executable = find_nsys(nsys)
    launcher = find_torchrun(python, torchrun) if nproc is not None else "torchrun"
    check_torch_cuda()
    if nproc is not None:
        check_gpus(nproc)
    plan = plan_capture(executable, output, model, workload_args, nsys_flags, stats=stats,
                        reports=reports, python=python, nproc=nproc, fsdp=fsdp, per_rank=per_rank,
                        torchrun=launcher)
    execute(plan, echo=echo)
    for one in plan.exports:
        echo(f"wrote {one.report}")
        echo(f"wrote {one.sqlite}")
        for path in one.stats_files:
            echo(f"wrote {path}" if path.is_file() else
                 f"no {path.name}: nsys stats skipped that report (no such data in the capture?)")
    for recipe in plan.recipes:
        if recipe.folder.is_dir():
            echo(f"wrote {recipe.folder}/")
    return plan


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m capture.runner", allow_abbrev=False,
        usage="%(prog)s MODEL -o OUT [--stats] [--nsys PATH] [workload options] "
              "[-- nsys profile flags]",
        description="Profile `python -m capture MODEL [workload options]` under nsys, export "
                    "OUT.sqlite and optionally NVIDIA's nsys stats CSVs (see "
                    "`python -m capture MODEL --help` for the workload options).")
    parser.add_argument("model", choices=MODEL_NAMES, metavar="MODEL")
    parser.add_argument("-o", "--output", required=True, help="output path prefix")
    parser.add_argument("--stats", action="store_true", help="also write OUT_<report>.csv")
    parser.add_argument("--reports", default=",".join(STATS_REPORTS),
                        help="comma-separated nsys stats reports (default: %(default)s)")
    parser.add_argument("--nsys", default=None, help="nsys executable (default: nsys on PATH)")
    parser.add_argument("--python", default=None,
                        help="interpreter for the profiled workload (default: this one)")
    parser.add_argument("--nproc", type=int, default=None, metavar="N",
                        help="run N ranks under torchrun, DDP over NCCL, one GPU each (default: one "
                             "process, no torchrun)")
    parser.add_argument("--fsdp", action="store_true", help="with --nproc: FSDP2 instead of DDP")
    parser.add_argument("--per-rank", action="store_true",
                        help="with --nproc: one nsys and one export per rank (OUT_rankR.sqlite) "
                             "instead of one export for the job")
    parser.add_argument("--torchrun", default=None,
                        help="torchrun executable (default: beside --python, else on PATH)")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the commands without running anything")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    nsys_flags: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, nsys_flags = argv[:cut], argv[cut + 1:]
    args, workload_args = _parser().parse_known_args(argv)
    reports = [r for r in args.reports.split(",") if r]
    try:
        parallel = {"nproc": args.nproc, "fsdp": args.fsdp, "per_rank": args.per_rank}
        check_parallel(args.model, **parallel)
        if args.dry_run:
            plan = plan_capture(args.nsys or "nsys", args.output, args.model, workload_args,
                                nsys_flags, stats=args.stats, reports=reports, python=args.python,
                                torchrun=args.torchrun or "torchrun", **parallel)
            for command in plan.commands():
                print(shlex.join(command))
            return 0
        executable = find_nsys(args.nsys)
        check_torch_cuda()
        from capture.workload import parse_args  # validates the workload options (imports torch)

        kind = distributed_kind(args.nproc, args.fsdp)
        parsed = parse_args([args.model, *workload_args, *(["--distributed", kind] if kind else [])])
        check_parallel(args.model, straggle_rank=parsed.straggle_rank, **parallel)
        run_capture(args.model, workload_args, args.output, nsys=executable,
                    nsys_flags=nsys_flags, stats=args.stats, reports=reports, python=args.python,
                    echo=lambda line: print(line, flush=True), torchrun=args.torchrun, **parallel)
    except CaptureError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
