"""``nsysql capture MODEL -o OUT [options] [-- nsys profile flags]``.

Parses arguments, calls `capture.runner`, reports errors in one line. Importing this module
imports neither torch nor duckdb (the runner imports torch only to check CUDA).

The workload options are declared once, in `capture.options` (flag, type, bounds, help, the
models they apply to), and made into typer options here. Every one but --mode and --dtype
defaults to None, meaning "not passed": the workload's own default applies (``python -m
capture MODEL --help``), so a command line without the option runs exactly as before it
existed. Options that apply to some models only are refused, in one line, for the others
(`capture.runner.workload_argv`).
"""
from __future__ import annotations

import functools
import inspect
import os
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Callable, Optional, get_type_hints

import typer

from capture.models import MODEL_NAMES
from capture.options import WORKLOAD_OPTIONS, WorkloadOption
from nsysql.cli.common import add_command

# choices from the capture package's own lists (mypy reads only literal Enum() members, hence the ignore)
Model = Enum("Model", {name: name for name in MODEL_NAMES}, type=str)  # type: ignore[misc]

MODEL_LIST = ", ".join(MODEL_NAMES[:-1]) + " or " + MODEL_NAMES[-1]

# help panels (typer groups the options under these titles when rich is installed)
PANELS = {"run": None, "model": "Model options (each only for the models it names)",
          "loop": "Training-loop options (every model)",
          "ranks": "Several GPUs: ranks under torchrun"}


def _choice(option: WorkloadOption) -> type:
    """An Enum of the option's choices, named as the option (Size, Mode, Dtype), for typer."""
    name = option.name.capitalize()
    return Enum(name, {choice: choice for choice in option.choices}, type=str)  # type: ignore[return-value]


def _parameter(option: WorkloadOption) -> inspect.Parameter:
    """The typer parameter of a workload option: None (not passed) unless it has a default."""
    kind: Any = _choice(option) if option.choices else option.kind
    spelled = f"{option.flag}/--no-{option.flag[2:]}" if option.kind is bool else option.flag
    info = typer.Option(spelled, min=option.min, metavar=option.metavar, rich_help_panel=PANELS[option.group],
                        help=option.full_help)
    annotation = Annotated[kind if option.default is not None else Optional[kind], info]  # type: ignore[valid-type]
    return inspect.Parameter(option.name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation,
                             default=option.default)


def _capture(
    ctx: typer.Context,
    model: Model = typer.Argument(
        ..., metavar="MODEL", help=f"Model to profile: {MODEL_LIST}."),
    output: Path = typer.Option(
        ..., "-o", "--output",
        help="Output prefix: writes OUT.nsys-rep and OUT.sqlite (and OUT_<report>.csv with "
             "--stats)."),
    # the workload options come here, in the order of WORKLOAD_OPTIONS (with_workload_options)
    stats: bool = typer.Option(
        False, "--stats", help="Also write NVIDIA's `nsys stats` CSVs (OUT_<report>.csv)."),
    nsys: Optional[Path] = typer.Option(
        None, "--nsys", help="The nsys executable (default: nsys on PATH)."),
    nproc: Optional[int] = typer.Option(
        None, "--nproc", min=1, metavar="N", rich_help_panel=PANELS["ranks"],
        help="Run N ranks under torchrun --nproc_per_node=N, the model under DistributedDataParallel over "
             "NCCL, each rank on the GPU of its LOCAL_RANK; one export holds every rank (default: one process, "
             "no torchrun)."),
    fsdp: bool = typer.Option(
        False, "--fsdp", rich_help_panel=PANELS["ranks"],
        help="With --nproc: FSDP2 (torch.distributed.fsdp.fully_shard, a unit per block) instead of DDP; "
             "gpt, bert, cnn, hf."),
    per_rank: bool = typer.Option(
        False, "--per-rank", rich_help_panel=PANELS["ranks"],
        help="With --nproc 2 or more: one nsys per rank (torchrun --no-python nsys profile ...), writing "
             "OUT_rank0.sqlite, OUT_rank1.sqlite, ...; each export has its own clock."),
    **workload: Any,
) -> None:
    """Profile a seed model under Nsight Systems and export OUT.sqlite.

    Runs: nsys profile -t cuda,nvtx,osrt -s none --cpuctxsw=none --python-sampling=false
    -o OUT -f true python -m capture MODEL ..., then nsys export --type sqlite
    (and nsys stats with --stats). Needs CUDA, torch and nsys.

    Workload options left out keep the workload's defaults (python -m capture MODEL --help).

    Flags after -- go to nsys profile and replace the default of the same option,
    e.g. nsysql capture gpt --size tiny -o run -- -t cuda,nvtx

    With --nproc N: nsys profile ... torchrun --standalone --nproc_per_node=N --no-python
    python -m capture MODEL ... --distributed ddp (fsdp with --fsdp); with --per-rank, torchrun
    starts one nsys profile -o OUT_rank%q{RANK} per rank. NVLink multicast is off in the ranks
    (NCCL_NVLS_ENABLE=0 ...) unless the environment sets those variables. With --stats and several
    ranks, NVIDIA's NCCL recipes too (nsys recipe nccl_sum ... --csv into OUT_nccl_sum/ ...).
    """
    given = {name: value.value if isinstance(value, Enum) else value for name, value in workload.items()}
    if given["checkpoint_path"] is not None:  # the profiled process runs in a scratch directory
        given["checkpoint_path"] = Path(os.path.abspath(os.path.expanduser(given["checkpoint_path"])))
    from capture import runner  # here, not at the top: every other command starts without it
    try:
        argv = runner.workload_argv(model.value, **given)
        runner.check_parallel(model.value, nproc, per_rank=per_rank, fsdp=fsdp,
                              straggle_rank=given["straggle_rank"])
        runner.check_loop_options(**given, model=model.value, distributed=runner.distributed_kind(nproc, fsdp))
        runner.run_capture(model.value, argv, output, nsys=nsys, nsys_flags=list(ctx.args),
                           stats=stats, echo=typer.echo, nproc=nproc, fsdp=fsdp, per_rank=per_rank)
    except runner.CaptureError as exc:
        typer.echo(f"Error: {exc}", err=True)
        raise typer.Exit(1) from None


def with_workload_options(command: Callable[..., None]) -> Callable[..., None]:
    """`command` as typer reads it: a keyword parameter per workload option after `output`; called, the command
    gets them in **workload."""
    hints = get_type_hints(command)
    fixed = [p.replace(annotation=hints[p.name], kind=inspect.Parameter.KEYWORD_ONLY)
             for p in inspect.signature(command).parameters.values() if p.kind is not p.VAR_KEYWORD]
    at = [p.name for p in fixed].index("output") + 1
    params = fixed[:at] + [_parameter(option) for option in WORKLOAD_OPTIONS] + fixed[at:]

    @functools.wraps(command)
    def run(**given: Any) -> None:
        command(**given)

    run.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    run.__annotations__ = {p.name: p.annotation for p in params}
    return run


capture = with_workload_options(_capture)  # the command as typer reads it


def register(app: typer.Typer) -> None:
    add_command(app, "capture", capture,
                context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
