"""``nsysql gaps EXPORT`` (GPU idle gaps and what the CPU did) and ``nsysql utilization EXPORT`` (busy share
over time)."""
from __future__ import annotations

from typing import Annotated, Optional

import typer

from ..formats import Format
from .common import (CacheDirOpt, DebugOpt, ExportsArg, FormatOpt, NoCacheOpt, OutputOpt, gather, query_decimals,
                     user_errors)


def gaps(
    exports: ExportsArg,
    min_gap_us: Annotated[float, typer.Option("--min-gap-us", min=0, help="Shortest idle gap shown, in µs.")] = 100.0,
    threads: Annotated[bool, typer.Option("--threads", help="One row per gap and CPU thread, instead of the thread "
                                                            "that launched the work ending the gap.")] = False,
    top: Annotated[Optional[int], typer.Option("--top", min=1, help="Only the N longest gaps.",
                                               show_default=False)] = None,
    calls: Annotated[bool, typer.Option("--calls/--no-calls", help="Find each thread's longest CUDA API and OS "
                                                                  "runtime call in the gap (reads every call).")] = True,
    fmt: FormatOpt = Format.table,
    output: OutputOpt = None,
    cache_dir: CacheDirOpt = None,
    no_cache: NoCacheOpt = False,
    debug: DebugOpt = False,
) -> None:
    """GPU idle gaps (no kernel, copy or set running on the device), longest first, with what the CPU was
    doing: the thread that launched the op ending the gap, how late that launch came (launch_offset_ns),
    the thread's innermost user NVTX range, and its longest CUDA API and OS runtime calls in the gap.
    """
    from ..errors import NsysqlError
    from ..render import emit
    with user_errors(debug):
        if threads and not calls:
            raise NsysqlError("--threads shows each thread's calls; drop --no-calls")

        def longest(ex):  # --top keeps the N longest gaps of each export
            df = ex.gaps(min_gap_us=min_gap_us, threads=threads, calls=calls)
            if top is not None:
                kept = df.select(["device_id", "gap_start_ns"]).unique(maintain_order=True).head(top)
                df = df.join(kept, on=["device_id", "gap_start_ns"], how="semi", maintain_order="left")
            return df

        df = gather(exports, longest, cache_dir, no_cache)
        emit(df, fmt, decimals=query_decimals("analysis.gaps_threads" if threads else "analysis.gaps"),
             output=output, title=f"GPU idle gaps of {min_gap_us:g} µs or more")


def utilization(
    exports: ExportsArg,
    window_ms: Annotated[float, typer.Option("--window-ms", help="Window length in ms (> 0).")] = 10.0,
    fmt: FormatOpt = Format.table,
    output: OutputOpt = None,
    cache_dir: CacheDirOpt = None,
    no_cache: NoCacheOpt = False,
    debug: DebugOpt = False,
) -> None:
    """GPU utilization over time: per device and fixed window (from the first GPU op to the last), the busy
    time (union of kernels, copies and sets), its share of the window and the ops started in it."""
    from ..render import emit
    with user_errors(debug):
        df = gather(exports, lambda ex: ex.utilization(window_ms=window_ms), cache_dir, no_cache)
        emit(df, fmt, decimals=query_decimals("analysis.utilization"), output=output,
             title=f"GPU utilization per {window_ms:g} ms window")


def register(app: typer.Typer) -> None:
    app.command("gaps")(gaps)
    app.command("utilization")(utilization)
