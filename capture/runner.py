"""Build and run the nsys command lines of a capture: profile, export to SQLite, stats.

The builders (`workload_argv`, `build_profile_command`, `build_export_command`,
`build_stats_command`, `plan_capture`) are pure; `run_capture` finds nsys, checks CUDA
and runs a plan. Nothing here imports torch at import time.

``python -m capture.runner MODEL -o OUT [--stats] [--nsys PATH] [workload options]
[-- nsys profile flags]`` is the same runner without nsysql's CLI (used on the GPU machine).
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

from capture.models import MODEL_NAMES
from capture.options import WORKLOAD_OPTIONS

# nsys stats reports written with --stats (the reports of the core issue).
STATS_REPORTS: tuple[str, ...] = (
    "nvtx_sum", "nvtx_gpu_proj_sum", "nvtx_kern_sum", "cuda_api_sum", "cuda_gpu_kern_sum",
    "cuda_kern_exec_sum", "cuda_gpu_mem_time_sum", "cuda_gpu_mem_size_sum", "osrt_sum",
)

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
class CapturePlan:
    """The commands of one capture and the files they write."""

    profile: list[str]
    export: list[str]
    stats: list[str] | None
    report: Path  # OUT.nsys-rep
    sqlite: Path  # OUT.sqlite
    stats_files: tuple[Path, ...]  # OUT_<report>.csv

    def commands(self) -> list[list[str]]:
        return [self.profile, self.export] + ([self.stats] if self.stats else [])


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
    "op_ranges": False, "op_ranges_last": False, "steps": 1,
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


def plan_capture(nsys: str, output: str | Path, model: str, workload_args: Sequence[str],
                 user_flags: Sequence[str] = (), *, stats: bool = False,
                 reports: Sequence[str] = STATS_REPORTS, python: str | None = None) -> CapturePlan:
    """All commands of a capture of ``python -m capture MODEL WORKLOAD_ARGS``.

    OUT (``-o``, or the user's own -o/--output after ``--``) is made absolute, because the
    profiled process runs in a scratch directory; OUT.nsys-rep, OUT.sqlite and
    OUT_<report>.csv are written.
    """
    flags = list(user_flags)
    user_out = _user_output(flags)
    if user_out is not None:
        index, value = user_out
        base = _base(value)
        if flags[index] == value:
            flags[index] = str(base)
        else:  # --output=VALUE or -oVALUE
            flags[index] = flags[index][: len(flags[index]) - len(value)] + str(base)
    else:
        base = _base(output)
    program = [python or sys.executable, "-m", "capture", model, *workload_args]
    report = base.with_name(base.name + ".nsys-rep")
    sqlite = base.with_name(base.name + ".sqlite")
    return CapturePlan(
        profile=build_profile_command(nsys, base, program, flags),
        export=build_export_command(nsys, report, sqlite),
        stats=build_stats_command(nsys, sqlite, base, reports) if stats else None,
        report=report,
        sqlite=sqlite,
        stats_files=tuple(base.with_name(f"{base.name}_{r}.csv") for r in reports) if stats else (),
    )


def find_nsys(explicit: str | Path | None = None, path: str | None = None) -> str:
    """The nsys executable: `explicit` (a file or the folder holding it), else nsys on PATH."""
    if explicit is not None:
        candidate = Path(os.path.expanduser(str(explicit)))
        if candidate.is_dir():
            candidate = candidate / "nsys"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate.absolute())
        raise CaptureError(f"nsys not found at {explicit}: pass --nsys with the path of an "
                           "executable nsys, or leave --nsys out to use nsys on PATH")
    found = shutil.which("nsys", path=path)
    if found is None:
        raise CaptureError("nsys not found on PATH: install Nsight Systems and put its nsys on "
                           "PATH, or pass --nsys /path/to/nsys")
    return found


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
    """Run a plan's commands in a scratch directory with `profiling_env`."""
    with tempfile.TemporaryDirectory(prefix="nsysql-capture-") as scratch:
        env = profiling_env(scratch, environ)
        steps = [("nsys profile", plan.profile, plan.report),
                 ("nsys export", plan.export, plan.sqlite)]
        if plan.stats:
            for stale in plan.stats_files:
                stale.unlink(missing_ok=True)
            steps.append(("nsys stats", plan.stats, None))
        plan.report.parent.mkdir(parents=True, exist_ok=True)
        for name, command, product in steps:
            echo("$ " + shlex.join(command))
            status = run(command, cwd=scratch, env=env).returncode
            if status != 0:
                raise CaptureError(f"{name} exited with status {status}; its output is above")
            if product is not None and not Path(product).is_file():
                hint = ""
                if name == "nsys profile":
                    hint = (" (if a .qdstrm was left, nsys's QdstrmImporter failed: "
                            "on the GPU image `source .gpu/device-env.sh` first)")
                raise CaptureError(f"{name} finished but wrote no {product}{hint}")


def run_capture(model: str, workload_args: Sequence[str], output: str | Path, *,
                nsys: str | Path | None = None, nsys_flags: Sequence[str] = (),
                stats: bool = False, reports: Sequence[str] = STATS_REPORTS,
                python: str | None = None, echo: Callable[[str], None] = print) -> CapturePlan:
    """Profile ``python -m capture MODEL WORKLOAD_ARGS`` under nsys and export OUT.sqlite."""
    if model not in MODEL_NAMES:
        raise CaptureError(f"unknown model {model!r}: choose one of {', '.join(MODEL_NAMES)}")
    executable = find_nsys(nsys)
    check_torch_cuda()
    plan = plan_capture(executable, output, model, workload_args, nsys_flags, stats=stats,
                        reports=reports, python=python)
    execute(plan, echo=echo)
    echo(f"wrote {plan.report}")
    echo(f"wrote {plan.sqlite}")
    for path in plan.stats_files:
        echo(f"wrote {path}" if path.is_file() else
             f"no {path.name}: nsys stats skipped that report (no such data in the capture?)")
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
        if args.dry_run:
            plan = plan_capture(args.nsys or "nsys", args.output, args.model, workload_args,
                                nsys_flags, stats=args.stats, reports=reports, python=args.python)
            for command in plan.commands():
                print(shlex.join(command))
            return 0
        executable = find_nsys(args.nsys)
        check_torch_cuda()
        from capture.workload import parse_args  # validates the workload options (imports torch)

        parse_args([args.model, *workload_args])
        run_capture(args.model, workload_args, args.output, nsys=executable,
                    nsys_flags=nsys_flags, stats=args.stats, reports=reports, python=args.python,
                    echo=lambda line: print(line, flush=True))
    except CaptureError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
