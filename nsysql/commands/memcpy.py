"""``nsysql memcpy EXPORT [--by kind|range|stream]``: memory copies and memsets."""
from __future__ import annotations

from enum import Enum
from typing import Annotated

import typer

from ..formats import Format
from .common import CacheDirOpt, DebugOpt, ExportArg, FormatOpt, NoCacheOpt, OutputOpt, open_export, user_errors

QUERIES = {"kind": "analysis.memcpy", "range": "analysis.memcpy_by_range", "stream": "analysis.memcpy_by_stream"}


class MemcpyBy(str, Enum):
    kind = "kind"
    range = "range"
    stream = "stream"


def memcpy(
    export: ExportArg,
    by: Annotated[MemcpyBy, typer.Option("--by", help="Group per copy/memory kind, per user NVTX range path and "
                                                      "kind, or per device, stream and kind.")] = MemcpyBy.kind,
    fmt: FormatOpt = Format.table,
    output: OutputOpt = None,
    cache_dir: CacheDirOpt = None,
    no_cache: NoCacheOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Memory copies and memsets: count, bytes, GPU time, achieved GB/s, pageable vs pinned host memory,
    and synchronous copies (the launching call blocked: cudaMemcpy rather than cudaMemcpyAsync, or the
    call returned only once the copy had ended).
    """
    from .. import catalog
    from ..render import emit
    with user_errors(debug):
        with open_export(export, cache_dir, no_cache) as ex:
            df = ex.memcpy(by=by.value)
            q = catalog.get(QUERIES[by.value])
            emit(df, fmt, decimals={c.name: c.decimals for c in q.columns if c.decimals is not None},
                 output=output, title=f"Memory copies and sets by {by.value}")


def register(app: typer.Typer) -> None:
    app.command("memcpy")(memcpy)
