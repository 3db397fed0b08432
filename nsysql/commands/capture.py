"""``nsysql capture MODEL -o OUT [options] [-- nsys profile flags]``.

Parses arguments, calls `capture.runner`, reports errors in one line. Importing this module
imports neither torch nor duckdb (the runner imports torch only to check CUDA).

Every workload option defaults to None, meaning "not passed": the workload's own default
applies (``python -m capture MODEL --help``), so a command line without the option runs
exactly as before it existed. Options that apply to some models only are refused, in one
line, for the others (`capture.runner.workload_argv`).
"""
from __future__ import annotations

import os
from enum import Enum
from pathlib import Path
from typing import Optional

import typer

from capture.models import GPT_SIZES, MODEL_NAMES
from capture.workload import DEFAULT_CHECKPOINT, DTYPES, MODES

from .common import add_command

# choices from the capture package's own lists (mypy reads only literal Enum() members, hence the ignores)
Model = Enum("Model", {name: name for name in MODEL_NAMES}, type=str)  # type: ignore[misc]
Size = Enum("Size", {name: name for name in GPT_SIZES}, type=str)  # type: ignore[misc]
Mode = Enum("Mode", {name: name for name in MODES}, type=str)  # type: ignore[misc]
Dtype = Enum("Dtype", {name: name for name in DTYPES}, type=str)  # type: ignore[misc]

MODEL_LIST = ", ".join(MODEL_NAMES[:-1]) + " or " + MODEL_NAMES[-1]

# help panels (typer groups the options under these titles when rich is installed)
MODEL_PANEL = "Model options (each only for the models it names)"
LOOP_PANEL = "Training-loop options (every model)"


def capture(
    ctx: typer.Context,
    model: Model = typer.Argument(
        ..., metavar="MODEL", help=f"Model to profile: {MODEL_LIST}."),
    output: Path = typer.Option(
        ..., "-o", "--output",
        help="Output prefix: writes OUT.nsys-rep and OUT.sqlite (and OUT_<report>.csv with "
             "--stats)."),
    mode: Mode = typer.Option(
        "train", "--mode",
        help="forward; backward (forward + backward, no optimizer step); train."),
    dtype: Dtype = typer.Option("fp32", "--dtype", help="fp32, or bf16 through autocast."),
    batch: Optional[int] = typer.Option(
        None, "--batch", min=1,
        help="Batch size (default: the model's: gpt 4, bert 4, ncf 1048576, dlrm 32768, "
             "cnn 128, hf 4)."),
    warmup: Optional[int] = typer.Option(
        None, "--warmup", min=0, help="Warm-up steps, inside the `warmup` range (default: 3)."),
    steps: Optional[int] = typer.Option(
        None, "--steps", min=1, help="Profiled steps, each inside `profiled_step` (default: 1)."),
    op_ranges: Optional[bool] = typer.Option(
        None, "--op-ranges/--no-op-ranges",
        help="Run the profiled steps under torch.autograd.profiler.emit_nvtx(record_shapes=True): "
             "per-op markers with shapes and the autograd seq link, at a large CPU cost "
             "(default: off)."),
    op_ranges_last: Optional[bool] = typer.Option(
        None, "--op-ranges-last/--no-op-ranges-last",
        help="Op markers (emit_nvtx) in the last profiled step only, the earlier profiled steps "
             "plain: the same step with and without them, the ground truth that "
             "bench/bench_backward_inference.py measures backward inference against; needs 2 "
             "--steps or more (default: off)."),
    annotate: Optional[bool] = typer.Option(
        None, "--annotate/--no-annotate",
        help="A range per layer named by module path around its forward and its backward "
             "(nsysql.annotate; docs/annotate.md), so backward kernels have their layer without op "
             "markers (default: on)."),
    annotate_backward: Optional[bool] = typer.Option(
        None, "--annotate-backward/--no-annotate-backward",
        help="With --annotate, the backward ranges too; --no-annotate-backward keeps the forward "
             "ones only, as a user's forward hooks give (default: on)."),
    # --- model options -------------------------------------------------------------------
    size: Optional[Size] = typer.Option(
        None, "--size", rich_help_panel=MODEL_PANEL, help="gpt: model size (default: small)."),
    seq: Optional[int] = typer.Option(
        None, "--seq", min=1, rich_help_panel=MODEL_PANEL,
        help="gpt, bert, hf: sequence length (default: gpt 512, bert 128, hf 128)."),
    layers: Optional[int] = typer.Option(
        None, "--layers", min=1, rich_help_panel=MODEL_PANEL,
        help="bert, hf: encoder layers, transformer blocks (default: bert 2, hf 6)."),
    users: Optional[int] = typer.Option(
        None, "--users", min=1, rich_help_panel=MODEL_PANEL, help="ncf: users (default: 138493)."),
    items: Optional[int] = typer.Option(
        None, "--items", min=1, rich_help_panel=MODEL_PANEL, help="ncf: items (default: 26744)."),
    rows: Optional[int] = typer.Option(
        None, "--rows", min=1, rich_help_panel=MODEL_PANEL,
        help="dlrm: rows of embedding table 0 (default: 100000)."),
    rows_step: Optional[int] = typer.Option(
        None, "--rows-step", min=0, rich_help_panel=MODEL_PANEL,
        help="dlrm: table i has ROWS + ROWS_STEP * i rows (default: 100)."),
    image_size: Optional[int] = typer.Option(
        None, "--image-size", min=1, rich_help_panel=MODEL_PANEL,
        help="cnn: side of the network's input images, in pixels (default: 32)."),
    source_size: Optional[int] = typer.Option(
        None, "--source-size", min=1, rich_help_panel=MODEL_PANEL,
        help="cnn: side of the stored images the augmentation crops and resizes from; larger "
             "costs more CPU per sample (default: the image size; at least the image size)."),
    pool: Optional[int] = typer.Option(
        None, "--pool", min=1, rich_help_panel=MODEL_PANEL,
        help="cnn: distinct stored images, reused with fresh augmentation (default: 64)."),
    width: Optional[int] = typer.Option(
        None, "--width", min=1, rich_help_panel=MODEL_PANEL,
        help="cnn: channels of the stem and stage 1, doubled by each later stage "
             "(default: 64)."),
    stages: Optional[int] = typer.Option(
        None, "--stages", min=1, rich_help_panel=MODEL_PANEL,
        help="cnn: ResNet stages (default: 4)."),
    blocks: Optional[int] = typer.Option(
        None, "--blocks", min=1, rich_help_panel=MODEL_PANEL,
        help="cnn: basic blocks per stage (default: 2)."),
    classes: Optional[int] = typer.Option(
        None, "--classes", min=1, rich_help_panel=MODEL_PANEL,
        help="cnn: classes of the classifier (default: 100)."),
    channels_last: Optional[bool] = typer.Option(
        None, "--channels-last/--no-channels-last", rich_help_panel=MODEL_PANEL,
        help="cnn: NHWC weights and activations, as tensor-core convolutions prefer "
             "(default: off)."),
    # --- training-loop options ---------------------------------------------------------------
    dataloader: Optional[bool] = typer.Option(
        None, "--dataloader/--no-dataloader", rich_help_panel=LOOP_PANEL,
        help="Feed each step from a torch DataLoader, fetched inside a `dataloader` range "
             "(default: off, one fixed batch copied every step)."),
    workers: Optional[int] = typer.Option(
        None, "--workers", min=0, metavar="N", rich_help_panel=LOOP_PANEL,
        help="DataLoader worker processes; more than 0 needs --dataloader (default: 0, "
             "batches are made in the step's own thread)."),
    pin_memory: Optional[bool] = typer.Option(
        None, "--pin-memory/--no-pin-memory", rich_help_panel=LOOP_PANEL,
        help="Pinned host batches copied with non_blocking=True (default: off, pageable "
             "copies)."),
    sync: Optional[bool] = typer.Option(
        None, "--sync/--no-sync", rich_help_panel=LOOP_PANEL,
        help="End every phase of a profiled step with torch.cuda.synchronize() (default: on)."),
    log_every: Optional[int] = typer.Option(
        None, "--log-every", min=0, metavar="N", rich_help_panel=LOOP_PANEL,
        help="Read the loss with .item() every N steps, inside `log_loss`; needs --mode "
             "backward or train (default: 0, never)."),
    checkpoint_every: Optional[int] = typer.Option(
        None, "--checkpoint-every", min=0, metavar="K", rich_help_panel=LOOP_PANEL,
        help="torch.save the model and optimizer state every K steps, inside `checkpoint` "
             "(default: 0, never)."),
    checkpoint_path: Optional[Path] = typer.Option(
        None, "--checkpoint-path", metavar="P", rich_help_panel=LOOP_PANEL,
        help="Checkpoint file, overwritten each time; a relative path is taken from the "
             f"current directory (default: {DEFAULT_CHECKPOINT})."),
    tf32: Optional[bool] = typer.Option(
        None, "--tf32/--no-tf32", rich_help_panel=LOOP_PANEL,
        help="Allow TF32 tensor cores for fp32 matmuls and convolutions, or not (default: "
             "torch's own settings)."),
    allreduce: Optional[bool] = typer.Option(
        None, "--allreduce/--no-allreduce", rich_help_panel=LOOP_PANEL,
        help="Average the gradients through torch.distributed (NCCL on CUDA) in a world of "
             "one, inside `allreduce` after the backward pass; needs --mode backward or train "
             "(default: off)."),
    # --- the capture itself ----------------------------------------------------------------
    stats: bool = typer.Option(
        False, "--stats", help="Also write NVIDIA's `nsys stats` CSVs (OUT_<report>.csv)."),
    nsys: Optional[Path] = typer.Option(
        None, "--nsys", help="The nsys executable (default: nsys on PATH)."),
) -> None:
    """Profile a seed model under Nsight Systems and export OUT.sqlite.

    Runs: nsys profile -t cuda,nvtx,osrt -s none --cpuctxsw=none --python-sampling=false
    -o OUT -f true python -m capture MODEL ..., then nsys export --type sqlite
    (and nsys stats with --stats). Needs CUDA, torch and nsys.

    Workload options left out keep the workload's defaults (python -m capture MODEL --help).

    Flags after -- go to nsys profile and replace the default of the same option,
    e.g. nsysql capture gpt --size tiny -o run -- -t cuda,nvtx
    """
    if checkpoint_path is not None:  # the profiled process runs in a scratch directory
        checkpoint_path = Path(os.path.abspath(os.path.expanduser(checkpoint_path)))
    from capture import runner  # here, not at the top: every other command starts without it
    try:
        workload = runner.workload_argv(
            model.value, size=size.value if size else None, mode=mode.value, dtype=dtype.value,
            batch=batch, seq=seq, warmup=warmup, steps=steps, op_ranges=op_ranges, annotate=annotate,
            op_ranges_last=op_ranges_last, annotate_backward=annotate_backward,
            layers=layers, users=users, items=items, rows=rows, rows_step=rows_step,
            image_size=image_size, source_size=source_size, pool=pool, width=width,
            stages=stages, blocks=blocks, classes=classes, channels_last=channels_last,
            dataloader=dataloader, workers=workers, pin_memory=pin_memory, sync=sync,
            log_every=log_every, checkpoint_every=checkpoint_every,
            checkpoint_path=checkpoint_path, tf32=tf32, allreduce=allreduce)
        runner.check_loop_options(mode=mode.value, dataloader=dataloader, workers=workers,
                                  pin_memory=pin_memory, sync=sync, log_every=log_every,
                                  checkpoint_every=checkpoint_every, tf32=tf32,
                                  allreduce=allreduce, op_ranges=op_ranges,
                                  op_ranges_last=op_ranges_last, steps=steps)
        runner.run_capture(model.value, workload, output, nsys=nsys, nsys_flags=list(ctx.args),
                           stats=stats, echo=typer.echo)
    except runner.CaptureError as exc:
        typer.echo(f"Error: {exc}", err=True)
        raise typer.Exit(1) from None


def register(app: typer.Typer) -> None:
    add_command(app, "capture", capture, context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
