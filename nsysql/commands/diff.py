"""``nsysql diff A B [--by range|kernel|layer] [--match exact|base]``: two exports side by side."""
from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from ..formats import Format
from .common import CacheDirOpt, DebugOpt, FormatOpt, NoCacheOpt, OutputOpt, open_export, query_decimals, user_errors


class By(str, Enum):
    range = "range"
    kernel = "kernel"
    layer = "layer"


class Match(str, Enum):
    exact = "exact"
    base = "base"


ExportA = Annotated[Path, typer.Argument(help="Baseline export (A).", show_default=False)]
ExportB = Annotated[Path, typer.Argument(help="Export to compare with it (B).", show_default=False)]


def diff(
    export_a: ExportA,
    export_b: ExportB,
    by: Annotated[By, typer.Option("--by", help="range: NVTX range paths (wall time); kernel: kernel names "
                                                "(GPU time); layer: attributed layers (GPU time).")] = By.range,
    match: Annotated[Match, typer.Option("--match", help="Kernels: exact full names, or base names (GEMMs of any "
                                                         "dtype/tile as gemm*, dtype and tile tokens dropped).")]
    = Match.exact,
    top: Annotated[Optional[int], typer.Option("--top", min=1, help="Only the N largest changes.",
                                               show_default=False)] = None,
    fmt: FormatOpt = Format.table,
    output: OutputOpt = None,
    cache_dir: CacheDirOpt = None,
    no_cache: NoCacheOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Compare two exports: time per range, kernel or layer in A and B, and B - A, largest change first."""
    from ..render import emit
    with user_errors(debug):
        with open_export(export_a, cache_dir, no_cache) as a, open_export(export_b, cache_dir, no_cache) as b:
            df = a.diff(b, by=by.value, match=match.value)
        if top is not None:
            df = df.head(top)
        emit(df, fmt, decimals=query_decimals("analysis.diff"), output=output,
             title=f"{export_a} (A) vs {export_b} (B) by {by.value}"
                   + (" base name" if match is Match.base else ""))


def register(app: typer.Typer) -> None:
    app.command("diff")(diff)
