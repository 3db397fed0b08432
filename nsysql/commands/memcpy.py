"""``nsysql memcpy EXPORT [--by kind|range|stream]``: memory copies and memsets."""
from __future__ import annotations

from enum import Enum
from typing import Annotated

import typer

from ..formats import Format
from .common import CacheDirOpt, DebugOpt, ExportsArg, FormatOpt, NoCacheOpt, OutputOpt, WideOpt, gather, user_errors

QUERIES = {"kind": "analysis.memcpy", "range": "analysis.memcpy_by_range", "stream": "analysis.memcpy_by_stream"}
# table output: columns hidden (first ones first) when the terminal is too narrow; --wide shows them
_COPY = ("avg_bytes", "src_kind", "dst_kind", "sync_api_ns", "gb_per_s", "total_bytes")
OPTIONAL = {"kind": _COPY, "range": _COPY, "stream": _COPY}


class MemcpyBy(str, Enum):
    kind = "kind"
    range = "range"
    stream = "stream"


def memcpy(
    exports: ExportsArg,
    by: Annotated[MemcpyBy, typer.Option("--by", help="Group per copy/memory kind, per user NVTX range path and "
                                                      "kind, or per device, stream and kind.")] = MemcpyBy.kind,
    fmt: FormatOpt = Format.table,
    output: OutputOpt = None,
    wide: WideOpt = False,
    cache_dir: CacheDirOpt = None,
    no_cache: NoCacheOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Memory copies and memsets: count, bytes, GPU time, achieved GB/s, pageable vs pinned host memory,
    and synchronous copies (the launching call blocked: cudaMemcpy rather than cudaMemcpyAsync, or the
    call returned only once the copy had ended).

    Table and markdown show sizes in KB/MB/GB and times in ms or µs; csv, json and parquet keep bytes and ns.
    """
    from ..render import emit
    with user_errors(debug):
        df = gather(exports, lambda ex: ex.memcpy(by=by.value), cache_dir, no_cache)
        emit(df, fmt, query=QUERIES[by.value], output=output, title=f"Memory copies and sets by {by.value}",
             optional=OPTIONAL[by.value], wide=wide, text_min={"range_path": 30},
             unit_groups=[("total_ns", "sync_api_ns")])


def register(app: typer.Typer) -> None:
    app.command("memcpy")(memcpy)
