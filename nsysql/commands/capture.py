"""``nsysql capture MODEL -o OUT [options] [-- nsys profile flags]``.

Parses arguments, calls `capture.runner`, reports errors in one line. Importing this module
imports neither torch nor duckdb (the runner imports torch only to check CUDA).
"""
from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Optional

import typer

from capture import runner
from capture.models import GPT_SIZES, MODEL_NAMES
from capture.workload import DTYPES, MODES

Model = Enum("Model", {name: name for name in MODEL_NAMES}, type=str)
Size = Enum("Size", {name: name for name in GPT_SIZES}, type=str)
Mode = Enum("Mode", {name: name for name in MODES}, type=str)
Dtype = Enum("Dtype", {name: name for name in DTYPES}, type=str)


def capture(
    ctx: typer.Context,
    model: Model = typer.Argument(
        ..., metavar="MODEL", help="Seed model to profile: gpt, bert, ncf or dlrm."),
    output: Path = typer.Option(
        ..., "-o", "--output",
        help="Output prefix: writes OUT.nsys-rep and OUT.sqlite (and OUT_<report>.csv with "
             "--stats)."),
    size: Optional[Size] = typer.Option(
        None, "--size", help="gpt: model size (default: small)."),
    mode: Mode = typer.Option(
        "train", "--mode",
        help="forward; backward (forward + backward, no optimizer step); train."),
    dtype: Dtype = typer.Option("fp32", "--dtype", help="fp32, or bf16 through autocast."),
    batch: Optional[int] = typer.Option(
        None, "--batch", min=1,
        help="Batch size (default: the seed's: gpt 4, bert 4, ncf 1048576, dlrm 32768)."),
    seq: Optional[int] = typer.Option(
        None, "--seq", min=1, help="gpt, bert: sequence length (default: gpt 512, bert 128)."),
    warmup: Optional[int] = typer.Option(
        None, "--warmup", min=0, help="Warm-up steps, inside the `warmup` range (default: 3)."),
    steps: Optional[int] = typer.Option(
        None, "--steps", min=1, help="Profiled steps, each inside `profiled_step` (default: 1)."),
    op_ranges: bool = typer.Option(
        True, "--op-ranges/--no-op-ranges",
        help="Run the profiled steps under torch.autograd.profiler.emit_nvtx(record_shapes=True)."),
    layers: Optional[int] = typer.Option(
        None, "--layers", min=1, help="bert: encoder layers (default: 2)."),
    users: Optional[int] = typer.Option(
        None, "--users", min=1, help="ncf: users (default: 138493)."),
    items: Optional[int] = typer.Option(
        None, "--items", min=1, help="ncf: items (default: 26744)."),
    rows: Optional[int] = typer.Option(
        None, "--rows", min=1, help="dlrm: rows of embedding table 0 (default: 100000)."),
    rows_step: Optional[int] = typer.Option(
        None, "--rows-step", min=0,
        help="dlrm: table i has ROWS + ROWS_STEP * i rows (default: 100)."),
    stats: bool = typer.Option(
        False, "--stats", help="Also write NVIDIA's `nsys stats` CSVs (OUT_<report>.csv)."),
    nsys: Optional[Path] = typer.Option(
        None, "--nsys", help="The nsys executable (default: nsys on PATH)."),
) -> None:
    """Profile a seed model under Nsight Systems and export OUT.sqlite.

    Runs: nsys profile -t cuda,nvtx,osrt -s none --cpuctxsw=none --python-sampling=false
    -o OUT -f true python -m capture MODEL ..., then nsys export --type sqlite
    (and nsys stats with --stats). Needs CUDA, torch and nsys.

    Flags after -- go to nsys profile and replace the default of the same option,
    e.g. nsysql capture gpt --size tiny -o run -- -t cuda,nvtx
    """
    try:
        workload = runner.workload_argv(
            model.value, size=size.value if size else None, mode=mode.value, dtype=dtype.value,
            batch=batch, seq=seq, warmup=warmup, steps=steps, op_ranges=op_ranges,
            layers=layers, users=users, items=items, rows=rows, rows_step=rows_step)
        runner.run_capture(model.value, workload, output, nsys=nsys, nsys_flags=list(ctx.args),
                           stats=stats, echo=typer.echo)
    except runner.CaptureError as exc:
        typer.echo(f"Error: {exc}", err=True)
        raise typer.Exit(1) from None


def register(app: typer.Typer) -> None:
    app.command("capture", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})(capture)
