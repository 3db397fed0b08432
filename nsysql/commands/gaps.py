"""``nsysql gaps EXPORT``: GPU idle gaps and what the CPU did (``nsysql utilization``, the busy share over time, is
a declared analysis: nsysql/analyses.py)."""
from __future__ import annotations

from typing import Annotated, Optional

import typer

from .common import OUTPUT, SOURCE, ExportsArg, Output, Source, TimeOrigins, add_commands

# table output: columns hidden (first ones first) when the terminal is too narrow; --wide shows them
OPTIONAL_GAPS = ("gap_end_ns", "pid", "cuda_calls_started", "cuda_call_ns", "os_call_ns", "before_op", "launch_api",
                 "thread_name", "device_id", "after_op", "os_call", "tid", "cuda_call")
OPTIONAL_THREADS = ("gap_end_ns", "pid", "cuda_calls_started", "cuda_call_ns", "os_call_ns", "device_id",
                    "launched_next", "os_call", "thread_name")
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
    out: Output = OUTPUT,
    src: Source = SOURCE,
) -> None:
    """GPU idle gaps (no kernel, copy or set running on the device), longest first, with what the CPU was
    doing: the thread that launched the op ending the gap, how late that launch came (launch_offset_ns),
    the thread's innermost user NVTX range, and its longest CUDA API and OS runtime calls in the gap.

    Table output shows the first 40 rows (--top N shows N gaps); table and markdown show gap_start as ms since the
    capture start (as `nsysql plot`) and lengths in ms or µs. csv, json and parquet keep the exact nanoseconds
    (gap_start_ns/gap_end_ns on the export's clock).
    """
    from .. import catalog
    from ..errors import NsysqlError
    from ..render import TABLE_ROWS
    with src.errors():
        if threads and not calls:
            raise NsysqlError("--threads shows each thread's calls; drop --no-calls")

        def longest(ex):  # --top keeps the N longest gaps of each export
            df = ex.gaps(min_gap_us=min_gap_us, threads=threads, calls=calls)
            if top is not None:
                kept = df.select(["device_id", "gap_start_ns"]).unique(maintain_order=True).head(top)
                df = df.join(kept, on=["device_id", "gap_start_ns"], how="semi", maintain_order="left")
            return df

        origins = TimeOrigins(out.for_people)
        df = src.gather(exports, origins.wrap(longest))
        query = catalog.get("analysis.gaps_threads" if threads else "analysis.gaps")
        out.emit(df, columns=query.columns, title=f"GPU idle gaps of {min_gap_us:g} µs or more",
                 origin=origins.origin(exports), optional=OPTIONAL_THREADS if threads else OPTIONAL_GAPS,
                 max_rows=TABLE_ROWS if top is None else None,
                 more_hint="--top N, or -f csv / -f parquet -o FILE for all", unit_groups=GAP_UNITS)


def register(app: typer.Typer) -> None:
    add_commands(app, gaps=gaps)
