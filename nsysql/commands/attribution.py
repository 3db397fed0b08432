"""``nsysql kernels`` and ``nsysql layers``: every kernel charged to its layer, op and direction."""
from __future__ import annotations

import sys
from typing import Annotated

import typer

from ..formats import Format
from .common import (CacheDirOpt, DebugOpt, ExportsArg, FormatOpt, NoCacheOpt, OutputOpt, gather, query_decimals,
                     user_errors)


def kernels(
    exports: ExportsArg,
    fmt: FormatOpt = Format.table,
    output: OutputOpt = None,
    style: Annotated[str, typer.Option(
        "--style", help="`full`: every column of every GPU op; `pyprof`: the seed tables' columns "
                        "(Idx, Direction, Layer, Op, Params, Kernel) for one step's kernels.")] = "full",
    step: Annotated[int, typer.Option(
        "--step", min=0, help="With --style pyprof: which step range (1 = first; 0 = every kernel).")] = 1,
    cache_dir: CacheDirOpt = None,
    no_cache: NoCacheOpt = False,
    debug: DebugOpt = False,
) -> None:
    """One row per kernel, memcpy and memset, in GPU start order: direction (fprop/bprop/optim/other),
    layer (NVTX path), PyTorch op, input shapes, kernel, timing, launch geometry, thread, autograd seq."""
    from ..errors import NsysqlError
    from ..render import emit
    with user_errors(debug):
        if style not in ("full", "pyprof"):
            raise NsysqlError(f"--style is full or pyprof, not {style!r}")
        if style == "pyprof":
            df = gather(exports, lambda ex: ex.pyprof_table(step), cache_dir, no_cache)
            query = "analysis.kernel_table_pyprof"
        else:
            df, query = gather(exports, lambda ex: ex.kernel_table(), cache_dir, no_cache), "analysis.kernel_table"
        emit(df, fmt, decimals=query_decimals(query), output=output, title=f"kernels ({style})")


def layers(
    exports: ExportsArg,
    depth: Annotated[int, typer.Option(
        "--depth", min=0, help="Roll paths up to their first N components (1 = forward_pass, ...; 0 = whole path).")] = 0,
    merge_repeats: Annotated[bool, typer.Option(
        "--merge-repeats", help="Merge numbered components: layer_0, layer_1 ... -> layer_* (also MLP_0, Embedding_12).")] = False,
    fmt: FormatOpt = Format.table,
    output: OutputOpt = None,
    cache_dir: CacheDirOpt = None,
    no_cache: NoCacheOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Kernel time per layer: forward, backward and optimizer, share of all kernel time, backward/forward
    ratio; ends with the coverage line (share of kernel time with a known layer)."""
    from ..render import emit
    with user_errors(debug):
        covs = []

        def per_export(ex):
            df = ex.layers(depth=depth, merge_repeats=merge_repeats)
            covs.append(ex.attribution_coverage())
            return df

        df = gather(exports, per_export, cache_dir, no_cache)
        emit(df, fmt, decimals=query_decimals("analysis.layers"), output=output, title="GPU kernel time per layer")
        line = coverage_line(combined(covs))
        if fmt in (Format.table, Format.markdown):
            if output is None:
                sys.stdout.write(line + "\n")
            else:
                with open(output, "a", encoding="utf-8") as f:
                    f.write(line + "\n")
        else:  # keep machine-readable output clean
            typer.echo(line, err=True)


def combined(covs: list[dict]) -> dict:
    """Coverage over several exports: sums of the ns columns, percentage recomputed."""
    total = {k: sum(c[k] for c in covs) for k in covs[0] if k != "known_layer_pct"}
    total["known_layer_pct"] = 100.0 * total["known_layer_ns"] / total["kernel_ns"] if total["kernel_ns"] else None
    return total


def coverage_line(cov: dict) -> str:
    if not cov["kernel_ns"]:
        return "coverage: the export has no kernels"
    from ..render import fixed
    return (f"coverage: {fixed(cov['known_layer_pct'], 2)}% of kernel time ({cov['known_layer_ns']:,} of "
            f"{cov['kernel_ns']:,} ns) has a known layer: {cov['by_seq_ns']:,} ns through the autograd seq link "
            f"to the forward op, {cov['by_own_range_ns']:,} ns from the launching thread's ranges, "
            f"{cov['by_borrowed_range_ns']:,} ns from the range of the thread waiting in backward()")


def register(app: typer.Typer) -> None:
    app.command("kernels")(kernels)
    app.command("layers")(layers)
