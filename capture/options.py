"""The workload options of a capture, declared once.

Each is an option of ``python -m capture MODEL`` (capture.workload) that a capture passes on only when it is
given: `nsysql capture` makes its command-line options from these declarations (flag, type, bounds, help, help
panel) and `capture.runner.workload_argv` refuses an option for a model it does not apply to. Importing this
module imports neither torch nor anything of nsysql.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from capture.models import FSDP_MODELS, GPT_SIZES
from capture.workload import DEFAULT_CHECKPOINT, DEFAULT_DECODE_WARMUP, DEFAULT_PROMPT, DEFAULT_TOKENS, DTYPES, MODES


@dataclass(frozen=True)
class WorkloadOption:
    """One workload option: ``--NAME`` (``_`` written ``-``), or ``--NAME/--no-NAME`` for a bool."""

    name: str
    kind: type  # int, bool (a switch), Path, or str (one of `choices`)
    help: str  # the help text, after the models it applies to ("gpt, bert: ...")
    models: tuple[str, ...] | None = None  # the models it applies to; None: every model
    group: str = "run"  # "run", "model" (options of some models), "loop" (the training loop) or "ranks": the help panel
    min: int | None = None
    metavar: str | None = None
    choices: tuple[str, ...] = ()
    default: str | None = None  # None: not passed unless given; mode and dtype are always passed

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def full_help(self) -> str:
        return f"{', '.join(self.models)}: {self.help}" if self.models else self.help


def _model(name: str, kind: type, models: tuple[str, ...], help: str, **more: object) -> WorkloadOption:
    return WorkloadOption(name, kind, help, models=models, group="model", **more)  # type: ignore[arg-type]


def _loop(name: str, kind: type, help: str, **more: object) -> WorkloadOption:
    return WorkloadOption(name, kind, help, group="loop", **more)  # type: ignore[arg-type]


def _ranks(name: str, kind: type, help: str, **more: object) -> WorkloadOption:
    return WorkloadOption(name, kind, help, group="ranks", **more)  # type: ignore[arg-type]


# in the order of `nsysql capture --help`, which is also the order of the workload's argv
WORKLOAD_OPTIONS: tuple[WorkloadOption, ...] = (
    WorkloadOption("mode", str, "forward; backward (forward + backward, no optimizer step); train; decode (gpt only: "
                                "LLM inference with a static KV cache, greedy; see --prompt, --tokens, --graphs).",
                   choices=MODES, default="train"),
    WorkloadOption("dtype", str, "fp32, or bf16 through autocast.", choices=DTYPES, default="fp32"),
    WorkloadOption("batch", int, "Batch size (default: the model's: gpt 4, bert 4, ncf 1048576, dlrm 32768, "
                                 "cnn 128, hf 4).", min=1),
    WorkloadOption("warmup", int, "Warm-up steps (decode: requests), inside the `warmup` range (default: 3; "
                                  f"decode: {DEFAULT_DECODE_WARMUP}).", min=0),
    WorkloadOption("steps", int, "Profiled steps, each inside `profiled_step` (default: 1).", min=1),
    WorkloadOption("op_ranges", bool,
                   "Run the profiled steps under torch.autograd.profiler.emit_nvtx(record_shapes=True): per-op "
                   "markers with shapes and the autograd seq link, at a large CPU cost (default: off)."),
    WorkloadOption("annotate", bool,
                   "A range per layer named by module path around its forward and its backward (nsysql.annotate; "
                   "docs/annotate.md), so backward kernels have their layer without op markers (default: on)."),
    WorkloadOption("op_ranges_last", bool,
                   "Op markers (emit_nvtx) in the last profiled step only, the earlier profiled steps plain: the same "
                   "step with and without them, the ground truth that bench/bench_backward_inference.py measures "
                   "backward inference against; needs 2 --steps or more (default: off)."),
    WorkloadOption("annotate_backward", bool,
                   "With --annotate, the backward ranges too; --no-annotate-backward keeps the forward ones only, as "
                   "a user's forward hooks give (default: on)."),
    _model("size", str, ("gpt",), "model size (default: small).", choices=tuple(GPT_SIZES)),
    _model("seq", int, ("gpt", "bert", "hf"), "sequence length (default: gpt 512, bert 128, hf 128).", min=1),
    _model("prompt", int, ("gpt",), "--mode decode: prompt length P; the model's context is P + T, --seq does "
                                    f"not apply (default: {DEFAULT_PROMPT}).", min=1, metavar="P"),
    _model("tokens", int, ("gpt",), "--mode decode: tokens T generated per request, the first by the prefill, then "
                                    f"T-1 `decode_step`s (default: {DEFAULT_TOKENS}).", min=1, metavar="T"),
    _model("graphs", bool, ("gpt",), "--mode decode: each decode step one CUDA graph replay, captured inside "
                                     "`warmup` (`graph_capture`); needs CUDA (default: off)."),
    _model("layers", int, ("bert", "hf"), "encoder layers, transformer blocks (default: bert 2, hf 6).", min=1),
    _model("users", int, ("ncf",), "users (default: 138493).", min=1),
    _model("items", int, ("ncf",), "items (default: 26744).", min=1),
    _model("rows", int, ("dlrm",), "rows of embedding table 0 (default: 100000).", min=1),
    _model("rows_step", int, ("dlrm",), "table i has ROWS + ROWS_STEP * i rows (default: 100).", min=0),
    _model("image_size", int, ("cnn",), "side of the network's input images, in pixels (default: 32).", min=1),
    _model("source_size", int, ("cnn",), "side of the stored images the augmentation crops and resizes from; "
                                         "larger costs more CPU per sample (default: the image size; at least the "
                                         "image size).", min=1),
    _model("pool", int, ("cnn",), "distinct stored images, reused with fresh augmentation (default: 64).", min=1),
    _model("width", int, ("cnn",), "channels of the stem and stage 1, doubled by each later stage (default: 64).",
           min=1),
    _model("stages", int, ("cnn",), "ResNet stages (default: 4).", min=1),
    _model("blocks", int, ("cnn",), "basic blocks per stage (default: 2).", min=1),
    _model("classes", int, ("cnn",), "classes of the classifier (default: 100).", min=1),
    _model("channels_last", bool, ("cnn",), "NHWC weights and activations, as tensor-core convolutions prefer "
                                            "(default: off)."),
    _loop("dataloader", bool, "Feed each step from a torch DataLoader, fetched inside a `dataloader` range "
                              "(default: off, one fixed batch copied every step)."),
    _loop("workers", int, "DataLoader worker processes; more than 0 needs --dataloader (default: 0, batches are "
                          "made in the step's own thread).", min=0, metavar="N"),
    _loop("pin_memory", bool, "Pinned host batches copied with non_blocking=True (default: off, pageable copies)."),
    _loop("sync", bool, "End every phase of a profiled step with torch.cuda.synchronize() (default: on)."),
    _loop("log_every", int, "Read the loss with .item() every N steps, inside `log_loss`; needs --mode backward "
                            "or train (default: 0, never).", min=0, metavar="N"),
    _loop("checkpoint_every", int, "Save model state: torch.save the model and optimizer state every K steps, inside "
                                   "`checkpoint`; not --checkpoint (default: 0, never).", min=0, metavar="K"),
    _loop("checkpoint_path", Path, "Checkpoint file, overwritten each time; a relative path is taken from the "
                                   f"current directory (default: {DEFAULT_CHECKPOINT}).", metavar="P"),
    _loop("checkpoint", bool, "activation checkpointing: each block's forward under torch.utils.checkpoint "
                              "(use_reentrant=False), re-run inside `backward_pass` under the block's own ranges; "
                              "needs --mode backward or train; not --checkpoint-every (default: off).",
          models=FSDP_MODELS),
    _loop("accum", int, "Gradient accumulation: N micro-batches per step, each inside `micro_batch_K` with its "
                        "forward, loss (divided by N) and backward, then one optimizer step; needs --mode backward "
                        "or train (default: 1, no micro-batch ranges).", min=1, metavar="N"),
    _loop("nvtx", bool, "NVTX ranges; --no-nvtx: the same program with none at all (no workload, model, module or "
                        "op ranges) (default: on)."),
    _loop("tf32", bool, "Allow TF32 tensor cores for fp32 matmuls and convolutions, or not (default: torch's own "
                        "settings)."),
    _loop("allreduce", bool, "Average the gradients through torch.distributed (NCCL on CUDA) in a world of one, "
                             "inside `allreduce` after the backward pass; needs --mode backward or train "
                             "(default: off)."),
    _ranks("straggle_rank", int, "Plant a straggler: rank R sleeps --straggle-ms inside its `dataloader` range "
                                 "(opened on every rank, with or without --dataloader), so the other ranks wait "
                                 "for it in the next collective; R below --nproc (default: none).",
           min=0, metavar="R"),
    _ranks("straggle_ms", int, "The straggler's sleep in milliseconds; needs --straggle-rank (default: none).",
           min=1, metavar="M"),
    _ranks("straggle_step", int, "The profiled step (from 1) the straggler sleeps in; needs --straggle-rank "
                                 "(default: every profiled step).", min=1, metavar="S"),
)
