"""``nsysql steps EXPORT...``: training/inference iterations with their GPU time."""
from __future__ import annotations

import typer

from ..formats import Format
from .common import (
    CacheDirOpt,
    DebugOpt,
    ExportsArg,
    FormatOpt,
    NoCacheOpt,
    OutputOpt,
    TimeOrigins,
    WideOpt,
    user_errors,
)

# table output: columns hidden (first ones first) when the terminal is too narrow; --wide shows them
UNIT_GROUPS = [("wall_ns", "gpu_busy_ns", "fprop_ns", "bprop_ns", "optim_ns", "other_ns")]  # one time unit
OPTIONAL = ("range_id", "source", "pid", "tid", "end_ns", "gpu_ops", "off_thread_ops", "other_ns", "kernels",
            "start_ns")

NO_STEPS_HINT = ("name each iteration's top-level NVTX range like step_N or profiled_step, or repeat the same "
                 "top-level ranges every iteration")


def steps(
    exports: ExportsArg,
    fmt: FormatOpt = Format.table,
    output: OutputOpt = None,
    wide: WideOpt = False,
    cache_dir: CacheDirOpt = None,
    no_cache: NoCacheOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Steps (iterations): wall time, GPU busy time, fprop/bprop/optimizer split, kernels.

    Steps are the top-level NVTX ranges named like profiled_step, step_N, ProfilerStep#N or iteration N; without any, each repetition of the first repeating top-level range (forward_pass, backward_pass, ..., forward_pass) starts one.

    A step's GPU work includes ops launched by other threads of its process while it runs (PyTorch's autograd thread).

    Table and markdown show times in ms (start: ms since the capture start, as `nsysql plot`); csv, json and parquet keep the exact nanoseconds (start_ns/end_ns on the export's clock).

    With several exports, those without steps are skipped (named on stderr).
    """
    from ..render import emit, human_format
    from .several import gather_nonempty
    with user_errors(debug):
        origins = TimeOrigins(human_format(fmt))
        df = gather_nonempty(exports, origins.wrap(lambda ex: ex.steps()), cache_dir, no_cache, missing="no steps",
                             single_error=lambda path: f"{path.name} has no steps: {NO_STEPS_HINT}",
                             none_error=f"none of the exports has steps: {NO_STEPS_HINT}")
        emit(df, fmt, query="analysis.steps", output=output, title="Steps", optional=OPTIONAL,
             origin=origins.origin(exports), wide=wide, unit_groups=UNIT_GROUPS)


def register(app: typer.Typer) -> None:
    app.command("steps")(steps)
