"""``nsysql diff A B [--by range|kernel|layer] [--match exact|base]``: two exports side by side."""
from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from nsysql.cli.common import OUTPUT, SOURCE, Output, Source, add_commands


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
    out: Output = OUTPUT,
    src: Source = SOURCE,
) -> None:
    """Compare two exports: time per range, kernel or layer in A and B, and B - A, largest change first.

    Table output shows the 40 largest changes (--top N shows N); table and markdown show times in ms or µs, csv,
    json and parquet the exact nanoseconds."""
    from nsysql.present.render import TABLE_ROWS
    from nsysql.sql import catalog
    with src.errors():
        with src.open(export_a) as a, src.open(export_b) as b:
            df = a.diff(b, by=by.value, match=match.value)
        if top is not None:
            df = df.head(top)
        out.emit(df, query=catalog.get("analysis._diff"),
                 title=f"{export_a} (A) vs {export_b} (B) by {by.value}" + (" base name" if match is Match.base else ""),
                 max_rows=TABLE_ROWS if top is None else None,
                 more_hint="--top N, or -f csv / -f parquet -o FILE for all")


def register(app: typer.Typer) -> None:
    add_commands(app, diff=diff)
