"""``nsysql gaps EXPORT`` (GPU idle gaps and what the CPU did) and ``nsysql utilization EXPORT`` (busy share
over time)."""
from __future__ import annotations

from typing import Annotated, Optional

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
    gather,
    user_errors,
)

# table output: columns hidden (first ones first) when the terminal is too narrow; --wide shows them
OPTIONAL_GAPS = ("gap_end_ns", "pid", "cuda_calls_started", "cuda_call_ns", "os_call_ns", "before_op", "launch_api",
                 "thread_name", "device_id", "after_op", "os_call", "tid", "cuda_call")
OPTIONAL_THREADS = ("gap_end_ns", "pid", "cuda_calls_started", "cuda_call_ns", "os_call_ns", "device_id",
                    "launched_next", "os_call", "thread_name")
OPTIONAL_UTILIZATION = ("window_end_ns", "window_index")
GAP_UNITS = [("gap_ns", "launch_offset_ns", "cuda_call_ns", "os_call_ns")]  # one time unit


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
    wide: WideOpt = False,
    cache_dir: CacheDirOpt = None,
    no_cache: NoCacheOpt = False,
    debug: DebugOpt = False,
) -> None:
    """GPU idle gaps (no kernel, copy or set running on the device), longest first, with what the CPU was
    doing: the thread that launched the op ending the gap, how late that launch came (launch_offset_ns),
    the thread's innermost user NVTX range, and its longest CUDA API and OS runtime calls in the gap.

    Table output shows the first 40 rows (--top N shows N gaps); table and markdown show gap_start as ms since the
    capture start (as `nsysql plot`) and lengths in ms or µs. csv, json and parquet keep the exact nanoseconds
    (gap_start_ns/gap_end_ns on the export's clock).
    """
    from ..errors import NsysqlError
    from ..render import TABLE_ROWS, emit, human_format
    with user_errors(debug):
        if threads and not calls:
            raise NsysqlError("--threads shows each thread's calls; drop --no-calls")

        def longest(ex):  # --top keeps the N longest gaps of each export
            df = ex.gaps(min_gap_us=min_gap_us, threads=threads, calls=calls)
            if top is not None:
                kept = df.select(["device_id", "gap_start_ns"]).unique(maintain_order=True).head(top)
                df = df.join(kept, on=["device_id", "gap_start_ns"], how="semi", maintain_order="left")
            return df

        origins = TimeOrigins(human_format(fmt))
        df = gather(exports, origins.wrap(longest), cache_dir, no_cache)
        emit(df, fmt, query="analysis.gaps_threads" if threads else "analysis.gaps", output=output,
             title=f"GPU idle gaps of {min_gap_us:g} µs or more", origin=origins.origin(exports), wide=wide,
             optional=OPTIONAL_THREADS if threads else OPTIONAL_GAPS, max_rows=TABLE_ROWS if top is None else None,
             more_hint="--top N, or -f csv / -f parquet -o FILE for all", unit_groups=GAP_UNITS)


def utilization(
    exports: ExportsArg,
    window_ms: Annotated[float, typer.Option("--window-ms", help="Window length in ms (> 0).")] = 10.0,
    fmt: FormatOpt = Format.table,
    output: OutputOpt = None,
    wide: WideOpt = False,
    cache_dir: CacheDirOpt = None,
    no_cache: NoCacheOpt = False,
    debug: DebugOpt = False,
) -> None:
    """GPU utilization over time: per device and fixed window (from the first GPU op to the last), the busy
    time (union of kernels, copies and sets), its share of the window and the ops started in it.

    Table output shows the first 40 windows; table and markdown show window starts as ms since the capture start
    (as `nsysql plot`), csv, json and parquet the exact nanoseconds on the export's clock."""
    from ..render import TABLE_ROWS, emit, human_format
    with user_errors(debug):
        origins = TimeOrigins(human_format(fmt))
        df = gather(exports, origins.wrap(lambda ex: ex.utilization(window_ms=window_ms)), cache_dir, no_cache)
        emit(df, fmt, query="analysis.utilization", output=output, title=f"GPU utilization per {window_ms:g} ms window",
             origin=origins.origin(exports), wide=wide, optional=OPTIONAL_UTILIZATION, max_rows=TABLE_ROWS,
             more_hint="a longer --window-ms, or -f csv / -f parquet -o FILE for all")


def register(app: typer.Typer) -> None:
    app.command("gaps")(gaps)
    app.command("utilization")(utilization)
