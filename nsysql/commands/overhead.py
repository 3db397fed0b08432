"""``nsysql overhead EXPORT [--by range|kernel|thread]``: kernel launch overhead."""
from __future__ import annotations

from enum import Enum
from typing import Annotated

import typer

from ..formats import Format
from .common import CacheDirOpt, DebugOpt, ExportsArg, FormatOpt, NoCacheOpt, OutputOpt, WideOpt, gather, user_errors

# table output: columns hidden (first ones first) when the terminal is too narrow; --wide shows them
_STATS = ("mean_api_ns", "mean_queue_ns", "p95_api_ns", "p95_queue_ns", "kernel_ns", "shorter_than_launch")
UNIT_GROUPS = [("cpu_ns", "gpu_busy_ns", "gpu_idle_ns", "launch_span_ns", "kernel_ns"),
               ("mean_api_ns", "median_api_ns", "p95_api_ns", "mean_queue_ns", "median_queue_ns", "p95_queue_ns")]
OPTIONAL = {
    "range": ("pid", "depth", "instances", *_STATS, "launch_span_ns", "tid", "median_queue_ns", "gpu_idle_ns",
              "median_api_ns"),
    "kernel": (*_STATS, "median_queue_ns", "cpu_ns"),
    "thread": ("pid", *_STATS, "launch_span_ns", "median_queue_ns", "gpu_idle_ns"),
}


class OverheadBy(str, Enum):
    range = "range"
    kernel = "kernel"
    thread = "thread"


def overhead(
    exports: ExportsArg,
    by: Annotated[OverheadBy, typer.Option("--by", help="Group launches per user NVTX range path, kernel name "
                                                        "or launching thread.")] = OverheadBy.range,
    fmt: FormatOpt = Format.table,
    output: OutputOpt = None,
    wide: WideOpt = False,
    cache_dir: CacheDirOpt = None,
    no_cache: NoCacheOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Kernel launch overhead: API time, queue time (kernel start - call end) and kernel time per launch,
    summed up with mean/median/p95, GPU busy time (union) and a launch_bound flag.

    --by range: per user NVTX range path (PyTorch op-marker ranges roll up into their user range), CPU time =
    the range's duration; launch_bound = the GPU sat idle more than half the range while the thread kept
    launching. --by kernel: per kernel name. --by thread: per launching thread.

    Table and markdown show times in ms or µs (the unit under each column); csv, json and parquet keep nanoseconds.
    """
    from ..render import emit
    with user_errors(debug):
        df = gather(exports, lambda ex: ex.overhead(by=by.value), cache_dir, no_cache)
        emit(df, fmt, query=f"analysis.overhead_by_{by.value}", output=output,
             title=f"Launch overhead by {by.value}", optional=OPTIONAL[by.value], wide=wide,
             text_min={"range_path": 30, "kernel_name": 30}, unit_groups=UNIT_GROUPS)


def register(app: typer.Typer) -> None:
    app.command("overhead")(overhead)
