"""``nsysql overhead EXPORT [--by range|kernel|thread]``: kernel launch overhead."""
from __future__ import annotations

from enum import Enum
from typing import Annotated

import typer

from ..formats import Format
from .common import (CacheDirOpt, DebugOpt, ExportsArg, FormatOpt, NoCacheOpt, OutputOpt, gather, query_decimals,
                     user_errors)


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
    cache_dir: CacheDirOpt = None,
    no_cache: NoCacheOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Kernel launch overhead: API time, queue time (kernel start - call end) and kernel time per launch,
    summed up with mean/median/p95, GPU busy time (union) and a launch_bound flag.

    --by range: per user NVTX range path (PyTorch op-marker ranges roll up into their user range), CPU time =
    the range's duration; launch_bound = the GPU sat idle more than half the range while the thread kept
    launching. --by kernel: per kernel name. --by thread: per launching thread.
    """
    from ..render import emit
    with user_errors(debug):
        df = gather(exports, lambda ex: ex.overhead(by=by.value), cache_dir, no_cache)
        emit(df, fmt, decimals=query_decimals(f"analysis.overhead_by_{by.value}"), output=output,
             title=f"Launch overhead by {by.value}")


def register(app: typer.Typer) -> None:
    app.command("overhead")(overhead)
