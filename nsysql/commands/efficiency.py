"""``nsysql efficiency EXPORT... [--by op|layer]``: achieved TFLOP/s and GB/s from recorded op shapes."""
from __future__ import annotations

from enum import Enum
from typing import Annotated, Optional

import typer

from ..formats import Format
from .common import CacheDirOpt, DebugOpt, ExportsArg, FormatOpt, NoCacheOpt, OutputOpt, WideOpt, user_errors

# table output: columns hidden (first ones first) when the terminal is too narrow; --wide shows them
OPTIONAL = ("flop_ns", "byte_ns", "instances", "gflop", "bytes", "kernels", "params")
NO_SHAPES_HINT = "capture under torch.autograd.profiler.emit_nvtx(record_shapes=True) (nsysql capture does)"


class By(str, Enum):
    op = "op"
    layer = "layer"


def efficiency(
    exports: ExportsArg,
    by: Annotated[By, typer.Option("--by", help="op: per direction, op and input shapes; layer: per direction "
                                                "and layer.")] = By.op,
    top: Annotated[Optional[int], typer.Option("--top", min=1, help="Only the N rows with the most kernel time "
                                                                    "(of each export).", show_default=False)] = None,
    fmt: FormatOpt = Format.table,
    output: OutputOpt = None,
    wide: WideOpt = False,
    cache_dir: CacheDirOpt = None,
    no_cache: NoCacheOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Achieved TFLOP/s of matmuls/convolutions and GB/s of elementwise ops, and the tensor-core share of matmul time.

    FLOPs and bytes come from the input shapes PyTorch's op markers record (emit_nvtx(record_shapes=True)); only kernels launched inside op markers count. The header of queries/analysis/efficiency.sql has every formula and the tensor-core name pattern.

    Table output shows the first 40 rows (--top N shows N of each export); table and markdown show times in ms or µs, csv, json and parquet the exact nanoseconds.

    With several exports, those without such kernels are skipped (named on stderr).
    """
    from ..render import TABLE_ROWS, emit
    from .several import gather_nonempty

    def per_export(ex):
        df = ex.efficiency(by=by.value)
        return df if top is None else df.head(top)

    with user_errors(debug):
        what = "kernels inside PyTorch op markers with recorded shapes"
        df = gather_nonempty(exports, per_export, cache_dir, no_cache, missing=f"no {what}",
                             single_error=lambda path: f"{path.name} has no {what}; {NO_SHAPES_HINT}",
                             none_error=f"none of the exports has {what}; {NO_SHAPES_HINT}")
        emit(df, fmt, query="analysis.efficiency", output=output, title=f"Efficiency by {by.value}",
             optional=OPTIONAL, wide=wide, max_rows=TABLE_ROWS if top is None else None,
             more_hint="--top N, or -f csv / -f parquet -o FILE for all",
             unit_groups=[("kernel_ns", "flop_ns", "byte_ns")], text_min={"name": 16, "params": 16})


def register(app: typer.Typer) -> None:
    app.command("efficiency")(efficiency)
