"""``nsysql kernels`` and ``nsysql layers``: every kernel charged to its layer, op and direction."""
from __future__ import annotations

import sys
from typing import Annotated

import typer

from nsysql.answers.attribution import combined, coverage_line
from nsysql.cli.common import (
    OUTPUT,
    SOURCE,
    DepthOpt,
    ExportsArg,
    MergeRepeatsOpt,
    Output,
    Source,
    TimeOrigins,
    add_commands,
)
from nsysql.core.formats import Format

# a layer path is what a row is about: up to this many characters it is kept whole, before the optional columns
# (a narrow terminal hides the ratio first); longer ones are shortened (nsysql/present/render.py: shorten_path)
LAYER_WHOLE = 40


def kernels(
    exports: ExportsArg,
    out: Output = OUTPUT,
    style: Annotated[str, typer.Option(
        "--style", help="`full`: every column of every GPU op; `pyprof`: the seed tables' columns "
                        "(Idx, Direction, Layer, Op, Params, Kernel) for one step's kernels.")] = "full",
    step: Annotated[int | None, typer.Option(
        "--step", min=0, help="With --style pyprof: which step, numbered within its process as `nsysql steps` "
                              "numbers them (0 = every kernel) [default: the first; every kernel without "
                              "steps].")] = None,
    pid: Annotated[int | None, typer.Option(
        "--pid", help="With --style pyprof: the process whose step, when several processes have steps.")] = None,
    src: Source = SOURCE,
) -> None:
    """One row per kernel, memcpy and memset, in GPU start order: direction (fprop/bprop/optim/comm/other;
    comm: NCCL's kernels), layer (NVTX path), PyTorch op, input shapes, kernel, timing, launch geometry, thread, autograd seq.

    Table output shows the first 40 rows and says how many more there are: use -f csv, or -f parquet -o FILE, for
    all. Table and markdown show start as ms since the capture's first event (as `nsysql plot`) and durations in µs or ms;
    csv, json and parquet keep the exact nanoseconds (start_ns on the export's clock)."""
    from nsysql.errors import NsysqlError
    from nsysql.present.render import TABLE_ROWS
    from nsysql.sql import catalog
    with src.errors():
        if style not in ("full", "pyprof"):
            raise NsysqlError(f"--style is full or pyprof, not {style!r}")
        if style == "full" and (step is not None or pid is not None):
            raise NsysqlError("--step and --pid choose the step of --style pyprof; the full table has every GPU op")
        origins = TimeOrigins(out.for_people and style == "full")
        if style == "pyprof":
            df = src.gather(exports, lambda ex: ex.pyprof_table(step, pid))
            query = "analysis.kernel_table_pyprof"
        else:
            df = src.gather(exports, origins.wrap(lambda ex: ex.kernel_table()))
            query = "analysis.kernel_table"
        out.emit(df, query=catalog.get(query), title=f"kernels ({style})", origin=origins.origin(exports),
                 max_rows=TABLE_ROWS)


def layers(
    exports: ExportsArg,
    depth: DepthOpt = 0,
    merge_repeats: MergeRepeatsOpt = False,
    step: Annotated[int, typer.Option(
        "--step", min=0, help="Only the kernels of step N, numbered within its process as `nsysql steps` numbers "
                              "them (0 = every kernel).")] = 0,
    pid: Annotated[int | None, typer.Option(
        "--pid", help="With --step: the process whose step, when several processes have steps.")] = None,
    every: Annotated[bool, typer.Option(
        "--all", help="Every kernel of the capture (start-up and warm-up too), not only the analysed steps'.")] = False,
    out: Output = OUTPUT,
    src: Source = SOURCE,
) -> None:
    """Kernel time per layer in the analysed steps (`--all`: the whole capture): forward, backward,
    recomputation (activation checkpointing), optimizer and communication (NCCL's kernels), share of the
    kernel time, backward/forward ratio; micro-batches fold into one path (`micro_batch_*`); kernels outside
    every layer are the row `?`, so the rows add up to the kernel time. Ends with the coverage line (share of
    kernel time with a known layer, whole export).

    Table and markdown show times in ms or µs; csv, json and parquet keep nanoseconds."""
    import textwrap

    from nsysql.present.render import table_width
    from nsysql.sql import catalog
    with src.errors():
        covs = []

        def per_export(ex):
            df = ex.layers(depth=depth, merge_repeats=merge_repeats, step=step, pid=pid, analysed=not every)
            covs.append(ex.attribution_coverage())
            return df

        df = src.gather(exports, per_export)
        for quiet in ("comm_ns", "recompute_ns"):  # no NCCL kernel, no checkpointing: a column of zeros only
            if out.for_people and quiet in df.columns and not (df[quiet] > 0).any():  # for people; csv... keep it
                df = df.drop(quiet)
        longest = max((len(p) for p in df["layer"].drop_nulls()), default=0) if "layer" in df.columns else 0
        out.emit(df, query=catalog.get("analysis.layers"), title="GPU kernel time per layer",
                 text_min={"layer": min(longest, LAYER_WHOLE)})
        line = coverage_line(combined(covs))
        if out.fmt is Format.table and not out.wide:  # wrapped, never between a number and its unit
            kept = line.replace(" ms", "\u00a0ms")
            line = "\n".join(textwrap.wrap(kept, table_width(out.output), subsequent_indent="  ")).replace("\u00a0", " ")
        if out.fmt in (Format.table, Format.markdown):
            if out.output is None:
                sys.stdout.write(line + "\n")
            else:
                with open(out.output, "a", encoding="utf-8") as f:
                    f.write(line + "\n")
        else:  # keep machine-readable output clean
            typer.echo(line, err=True)


def register(app: typer.Typer) -> None:
    add_commands(app, kernels=kernels, layers=layers)
