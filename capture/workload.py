"""The shared driver behind ``python -m capture MODEL ...``: warm-up, then profiled steps.

Range layout (as in seed 003)::

    model_init                  building the model and optimizer (weight init kernels)
    warmup                      the --warmup steps; only the model's own ranges inside
    profiled_step               one per --steps, under emit_nvtx with --op-ranges (with
                                --op-ranges-last: only the last one)
      dataloader                with --dataloader: fetching the step's batch (also with a planted
                                --straggle-rank: that rank's sleep is inside it)
      micro_batch_K             with --accum N > 1: K = 1..N, each holding its own dataloader,
                                forward_pass, loss range (the loss divided by N) and backward_pass;
                                allreduce and optimizer_step follow once, after the last
      forward_pass
      <loss range>              loss_computation (gpt, bert, cnn) or Loss (ncf, dlrm); not in
                                forward mode
      backward_pass             backward and train modes
      allreduce                 with --allreduce: averaging the gradients through NCCL
      optimizer_step            train mode
      log_loss                  with --log-every N, every Nth step: loss.item()
      checkpoint                with --checkpoint-every K, every Kth step: torch.save
    result                      reading the loss back, after the steps

With --checkpoint (activation checkpointing; not --checkpoint-every, which saves the model state)
every block of the model's `fsdp_units` runs its forward through torch.utils.checkpoint
(use_reentrant=False): the backward re-runs each block's forward, so the block's own ranges
(gpt: attention_sublayer, ffn_sublayer and theirs) are pushed again on the thread running the
backward, inside `backward_pass`, without the ranges the model pushes outside the block (gpt's
layer_N). --no-nvtx runs the same program with no NVTX ranges at all (capture.nvtx.silenced):
no workload, model, module or op ranges. --mode decode (gpt) is LLM inference with a static KV
cache instead of the training loop: see `capture.decode` for its layout.

With --annotate (the default) nsysql.annotate adds a range per layer named by module path around
its forward (`model/layers.3/attn`, inside the model's own ranges) and its backward
(`model/layers.3/attn [backward]`, on the thread running the backward), in warm-up and profiled
steps alike. Under --op-ranges only the forward ones: emit_nvtx's ranges would swallow the others.
--no-annotate-backward keeps only the forward ranges, as a user's forward hooks give.

--op-ranges-last runs only the last profiled step under emit_nvtx: the earlier profiled steps are
the same step without op markers, so the last one's autograd seq link gives the true layer of each
of their backward kernels (bench/bench_backward_inference.py measures the inference against it).

Steps are counted from 1 over warm-up and profiled steps together (--log-every,
--checkpoint-every). With --sync (the default) each phase of a profiled step ends with
torch.cuda.synchronize() inside its range, so range durations cover their GPU work; with
--no-sync nothing inside a profiled step synchronizes by itself (a logged loss or a checkpoint
still does). Each warm-up step ends with a synchronize. Without --dataloader the batch is made
on the CPU once (fixed seed) and copied to the device at the start of every step; with it a
DataLoader (--workers, --pin-memory) gives each step a new batch (see `capture.data`).

Several ranks (``--distributed ddp|fsdp``, started by torchrun: `nsysql capture MODEL --nproc N`):
each rank joins torchrun's process group on the GPU of its LOCAL_RANK and trains the model under
DistributedDataParallel or FSDP2 (`capture.parallel`), with the same ranges as one process; every
rank builds the same weights (one seed), and its data are seeded by seed + rank. Only rank 0 prints.
A planted straggler (--straggle-rank R --straggle-ms M [--straggle-step S]) makes rank R sleep M ms
inside its `dataloader` range in profiled step S (counted from 1; every profiled step without S), so
the other ranks wait for it in the next collective; the range is opened on every rank when a
straggler is planted, with or without --dataloader. With --checkpoint-every, DDP saves on rank 0
only (the others go on to the next collective) and FSDP saves each rank's shards to P.rankR.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
import tempfile
from types import ModuleType
from typing import Any, Callable, Iterator, Protocol

from capture import nvtx
from capture.models import MODEL_NAMES, load

MODES = ("forward", "backward", "train", "decode")
DTYPES = ("fp32", "bf16")
DEFAULT_WARMUP = 3  # the seed's layer ranges count 4 forward passes for 1 profiled step
DEFAULT_DECODE_WARMUP = 1  # --mode decode: warm-up requests
DEFAULT_DECODE_BATCH = 4
DEFAULT_PROMPT = 256
DEFAULT_TOKENS = 64
DEFAULT_STEPS = 1
DEFAULT_CHECKPOINT = os.path.join(tempfile.gettempdir(), "nsysql-capture-checkpoint.pt")
DISTRIBUTED = ("ddp", "fsdp")


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be at least 0, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """``python -m capture MODEL [options]``: one sub-command per model (imports torch)."""
    parser = argparse.ArgumentParser(
        prog="python -m capture",
        description="Run a seed model's workload with NVTX ranges (profile it with nsys, "
                    "or use `nsysql capture`).")
    models = parser.add_subparsers(dest="model", required=True, metavar="MODEL")
    for name in MODEL_NAMES:
        module = load(name)
        sub = models.add_parser(name, help=(module.__doc__ or name).splitlines()[0])
        sub.add_argument("--mode", choices=MODES, default="train",
                         help="forward, backward (= forward + backward), train, or decode (gpt: "
                              "LLM inference with a KV cache) (default: train)")
        sub.add_argument("--dtype", choices=DTYPES, default="fp32",
                         help="fp32, or bf16 through autocast (default: fp32)")
        sub.add_argument("--batch", type=_positive, default=module.DEFAULT_BATCH,
                         help=f"batch size (default: {module.DEFAULT_BATCH})")
        if module.DEFAULT_SEQ is not None:
            sub.add_argument("--seq", type=_positive, default=module.DEFAULT_SEQ,
                             help=f"sequence length (default: {module.DEFAULT_SEQ})")
        # None: the mode's default (parse_args)
        sub.add_argument("--warmup", type=_non_negative, default=None,
                         help=f"warm-up steps (decode: requests), inside `warmup` (default: "
                              f"{DEFAULT_WARMUP}; decode: {DEFAULT_DECODE_WARMUP})")
        sub.add_argument("--steps", type=_positive, default=DEFAULT_STEPS,
                         help=f"profiled steps, each in `profiled_step` (default: {DEFAULT_STEPS})")
        sub.add_argument("--op-ranges", action=argparse.BooleanOptionalAction, default=False,
                         help="run the profiled steps under "
                              "torch.autograd.profiler.emit_nvtx(record_shapes=True): op markers, "
                              "slow on the CPU side (default: off)")
        sub.add_argument("--op-ranges-last", action=argparse.BooleanOptionalAction, default=False,
                         help="op markers (emit_nvtx) in the last profiled step only, the earlier "
                              "ones plain: the ground truth of backward inference (default: off)")
        sub.add_argument("--annotate", action=argparse.BooleanOptionalAction, default=True,
                         help="a range per layer named by module path, forward and backward "
                              "(nsysql.annotate) (default: on)")
        sub.add_argument("--annotate-backward", action=argparse.BooleanOptionalAction,
                         default=True,
                         help="with --annotate, the backward ranges too; off: forward ranges "
                              "only, as forward hooks give (default: on)")
        sub.add_argument("--device", choices=("cuda", "cpu"), default=None,
                         help="default: cuda when available, else cpu")
        sub.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
        _add_loop_arguments(sub, checkpoint=hasattr(module, "fsdp_units"))
        module.add_arguments(sub)
        if name == "gpt":
            _add_decode_arguments(sub)
    return parser


def _add_decode_arguments(sub: argparse.ArgumentParser) -> None:
    """--mode decode's options (gpt): the request's shape, and CUDA graphs."""
    sub.add_argument("--prompt", type=_positive, default=DEFAULT_PROMPT, metavar="P",
                     help=f"--mode decode: prompt length; the model's context is P + T (default: "
                          f"{DEFAULT_PROMPT})")
    sub.add_argument("--tokens", type=_positive, default=DEFAULT_TOKENS, metavar="T",
                     help=f"--mode decode: tokens generated per request, the first by the prefill "
                          f"(default: {DEFAULT_TOKENS})")
    sub.add_argument("--graphs", action=argparse.BooleanOptionalAction, default=False,
                     help="--mode decode: each decode step one CUDA graph replay, captured in the "
                          "warm-up (default: off)")


def _add_loop_arguments(sub: argparse.ArgumentParser, checkpoint: bool = True) -> None:
    """Options of the training loop around the model; the defaults are the seed loop's.
    `checkpoint`: the model has blocks (`fsdp_units`) for --checkpoint."""
    if checkpoint:
        sub.add_argument("--checkpoint", action=argparse.BooleanOptionalAction, default=False,
                         help="activation checkpointing: each block's forward under "
                              "torch.utils.checkpoint, re-run in the backward; not "
                              "--checkpoint-every (default: off)")
    sub.add_argument("--accum", type=_positive, default=1, metavar="N",
                     help="gradient accumulation: N micro-batches per step, each in `micro_batch_K`, "
                          "then one optimizer step (default: 1)")
    sub.add_argument("--nvtx", action=argparse.BooleanOptionalAction, default=True,
                     help="NVTX ranges; --no-nvtx: the same program without any (default: on)")
    sub.add_argument("--dataloader", action=argparse.BooleanOptionalAction, default=False,
                     help="feed each step from a torch DataLoader, fetched inside a "
                          "`dataloader` range (default: off, one fixed batch)")
    sub.add_argument("--workers", type=_non_negative, default=0,
                     help="DataLoader worker processes (default: 0, load in the step's thread)")
    sub.add_argument("--pin-memory", action=argparse.BooleanOptionalAction, default=False,
                     help="pinned host batches, copied with non_blocking=True "
                          "(default: off, pageable copies)")
    sub.add_argument("--sync", action=argparse.BooleanOptionalAction, default=True,
                     help="end every phase of a profiled step with torch.cuda.synchronize() "
                          "(default: on)")
    sub.add_argument("--log-every", type=_non_negative, default=0, metavar="N",
                     help="read the loss with .item() every N steps (default: 0, never)")
    sub.add_argument("--checkpoint-every", type=_non_negative, default=0, metavar="K",
                     help="save model state: torch.save the model and optimizer state every K "
                          "steps, inside the step; not --checkpoint (default: 0, never)")
    sub.add_argument("--checkpoint-path", default=DEFAULT_CHECKPOINT,
                     help=f"checkpoint file, overwritten each time (default: {DEFAULT_CHECKPOINT})")
    sub.add_argument("--tf32", action=argparse.BooleanOptionalAction, default=None,
                     help="allow TF32 tensor cores for fp32 matmuls and convolutions, or not "
                          "(default: torch's own defaults)")
    sub.add_argument("--allreduce", action=argparse.BooleanOptionalAction, default=False,
                     help="average the gradients with torch.distributed (NCCL on CUDA) in a "
                          "world of one, after the backward pass (default: off)")
    sub.add_argument("--distributed", choices=DISTRIBUTED, default=None,
                     help="one rank of a torchrun job: the model under DistributedDataParallel or "
                          "FSDP2, on the GPU of LOCAL_RANK (default: one process; `nsysql capture "
                          "--nproc N` sets it)")
    sub.add_argument("--straggle-rank", type=_non_negative, default=None, metavar="R",
                     help="plant a straggler: rank R sleeps --straggle-ms inside its `dataloader` "
                          "range (default: none)")
    sub.add_argument("--straggle-ms", type=_positive, default=None, metavar="M",
                     help="the straggler's sleep, in milliseconds (needs --straggle-rank)")
    sub.add_argument("--straggle-step", type=_positive, default=None, metavar="S",
                     help="the profiled step (from 1) the straggler sleeps in (default: every "
                          "profiled step)")


class ErrorSink(Protocol):
    """What the checks report to: argparse's parser (error() exits), or nsysql capture's stand-in (it raises)."""

    def error(self, message: str) -> Any: ...


def _check_loop_arguments(parser: ErrorSink, args: argparse.Namespace) -> None:
    refused = _decode_refusal(args) if args.mode == "decode" else None
    if refused:
        parser.error(refused)
    if args.mode == "forward" and getattr(args, "checkpoint", False):
        parser.error("--checkpoint re-runs blocks in the backward: --mode backward or train")
    if args.mode == "forward" and args.accum > 1:
        parser.error("--accum accumulates gradients: --mode backward or train")
    if not args.nvtx and (args.op_ranges or args.op_ranges_last):
        parser.error("--no-nvtx runs without any NVTX range: leave --op-ranges(-last) out")
    if args.graphs and args.mode != "decode":
        parser.error("--graphs replays decode steps: --mode decode")
    if args.workers and not args.dataloader:
        parser.error("--workers needs --dataloader")
    if args.mode == "forward" and args.log_every:
        parser.error("--log-every needs a loss: --mode backward or train")
    if args.mode == "forward" and args.allreduce:
        parser.error("--allreduce needs gradients: --mode backward or train")
    if args.op_ranges_last and args.op_ranges:
        parser.error("--op-ranges-last conflicts with --op-ranges: choose one")
    if args.op_ranges_last and args.steps < 2:
        parser.error("--op-ranges-last needs at least 2 --steps (plain ones before the last)")
    if args.distributed and args.allreduce:
        parser.error("--allreduce is a world of one; with several ranks DDP and FSDP average the "
                     "gradients themselves: leave --allreduce out")
    if args.distributed and args.mode == "forward":
        parser.error("several ranks exchange gradients: --mode backward or train")
    if (args.straggle_rank is None) != (args.straggle_ms is None):
        parser.error("--straggle-rank and --straggle-ms go together (which rank sleeps, how long)")
    if args.straggle_step is not None and args.straggle_rank is None:
        parser.error("--straggle-step needs --straggle-rank and --straggle-ms")
    if args.straggle_step is not None and args.straggle_step > args.steps:
        parser.error(f"--straggle-step {args.straggle_step} is past the last profiled step "
                     f"(--steps {args.steps})")


def _decode_refusal(args: argparse.Namespace) -> str | None:
    """Why `args` cannot decode (one line), or None: decode is inference in one process, with no
    loss, no gradients and none of the training loop's extras."""
    model = getattr(args, "model", "gpt")
    if model != "gpt":
        return f"--mode decode is LLM inference with a KV cache: gpt only, not {model}"
    refused = [("--log-every", args.log_every), ("--checkpoint-every", args.checkpoint_every),
               ("--dataloader", args.dataloader), ("--distributed", args.distributed),
               ("--allreduce", args.allreduce), ("--accum", args.accum > 1),
               ("--checkpoint", getattr(args, "checkpoint", False)), ("--op-ranges", args.op_ranges),
               ("--op-ranges-last", args.op_ranges_last),
               ("--straggle-rank", args.straggle_rank is not None)]
    for flag, given in refused:
        if given:
            return f"{flag} does not apply to --mode decode (inference in one process, no training loop)"
    return None


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "graphs"):  # decode's options are gpt's only
        args.graphs, args.prompt, args.tokens = False, None, None
    if args.warmup is None:
        args.warmup = DEFAULT_DECODE_WARMUP if args.mode == "decode" else DEFAULT_WARMUP
    _check_loop_arguments(parser, args)
    if args.mode == "decode":
        args.seq = args.prompt + args.tokens  # the KV cache's length: the model's context
    return args


@contextlib.contextmanager
def _phase(name: str, annotate: bool, device: object, sync: bool = True) -> Iterator[None]:
    """A profiled-step phase: a range, ending with a synchronize if `sync`; nothing in warm-up."""
    if not annotate:
        yield
        return
    nvtx.push(name)
    try:
        yield
        if sync:
            nvtx.synchronize(device)
    finally:
        nvtx.pop()


def _set_tf32(allowed: bool | None) -> None:
    """--tf32/--no-tf32 for cuBLAS and cuDNN alike (legacy flags: torch refuses a mix of APIs)."""
    import torch

    if allowed is not None:
        torch.backends.cuda.matmul.allow_tf32 = allowed
        torch.backends.cudnn.allow_tf32 = allowed


def _save_checkpoint(path: str, model: Any, optimizer: Any) -> None:
    """What a training loop saves: the weights and the optimizer state (GPU -> host copies)."""
    import torch

    state = {"model": model.state_dict()}
    if optimizer is not None:
        state["optimizer"] = optimizer.state_dict()
    torch.save(state, path)


def _op_ranges_label(args: argparse.Namespace) -> str:
    return "last step" if args.op_ranges_last else ("on" if args.op_ranges else "off")


def _annotate_label(args: argparse.Namespace) -> str:
    return ("forward only" if not args.annotate_backward else "on") if args.annotate else "off"


def _describe_loop(args: argparse.Namespace) -> str:
    feed = (f"dataloader (workers {args.workers})" if args.dataloader else "one fixed batch")
    return (f"  feed: {feed}  pin_memory: {'on' if args.pin_memory else 'off'}"
            f"  sync: {'on' if args.sync else 'off'}  log_every: {args.log_every}"
            f"  checkpoint_every: {args.checkpoint_every}"
            f"  tf32: {'default' if args.tf32 is None else ('on' if args.tf32 else 'off')}"
            f"  allreduce: {'on' if args.allreduce else 'off'}")


def _describe_shapes(args: argparse.Namespace) -> str:
    """The settings that change the step's shape: activation checkpointing, accumulation, NVTX."""
    return (f"  activation_checkpointing: {'on' if getattr(args, 'checkpoint', False) else 'off'}"
            f"  accum: {args.accum}  nvtx: {'on' if args.nvtx else 'off (no ranges at all)'}")


def _describe_straggler(args: argparse.Namespace) -> str:
    when = (f"profiled step {args.straggle_step}" if args.straggle_step is not None
            else "every profiled step")
    return (f"  straggler: rank {args.straggle_rank} sleeps {args.straggle_ms} ms inside `dataloader` "
            f"in {when}")


def _silent(line: str) -> None:
    return None


def _straggle_s(args: argparse.Namespace, rank: int, profiled: int) -> float:
    """Seconds rank `rank` sleeps in profiled step `profiled` (from 1; 0 or less: a warm-up step)."""
    if args.straggle_rank is None or rank != args.straggle_rank or profiled < 1:
        return 0.0
    if args.straggle_step is not None and profiled != args.straggle_step:
        return 0.0
    return args.straggle_ms / 1000


def _checkpoint_blocks(module: ModuleType, model: object) -> None:
    """--checkpoint: each of the model's blocks (`fsdp_units`) runs its forward through
    torch.utils.checkpoint (no activations kept; the backward re-runs the forward). The block's
    `forward` is replaced, so its own ranges re-run and the ranges its caller pushes do not."""
    import torch.utils.checkpoint

    for unit in module.fsdp_units(model):
        forward = unit.forward

        def checkpointed(*inputs: object, _forward: Callable[..., object] = forward,
                         **keywords: object) -> object:
            return torch.utils.checkpoint.checkpoint(_forward, *inputs, use_reentrant=False, **keywords)

        unit.forward = checkpointed


def run(args: argparse.Namespace, echo: Callable[[str], None] = print) -> dict[str, object]:
    """Run the workload `args` describes; returns {'device', 'loss' or 'output_mean'} ('tokens'
    with --mode decode). With --no-nvtx, the same run with every range a no-op."""
    with nvtx.silenced(not args.nvtx):
        return _run(args, echo)


def _run(args: argparse.Namespace, echo: Callable[[str], None]) -> dict[str, object]:
    import torch

    module = load(args.model)
    # capture.parallel imports torch.distributed: only when asked for
    parallel = importlib.import_module("capture.parallel") if args.distributed else None
    rank, world = 0, 1
    if parallel is not None:
        ranks = parallel.ranks_from_env()
        rank, world = ranks.rank, ranks.world
        device = parallel.device_of(ranks, args.device)
    else:
        device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
        if device.type == "cuda" and not torch.cuda.is_available():
            raise SystemExit("error: --device cuda but torch.cuda.is_available() is False")
    if args.straggle_rank is not None and args.straggle_rank >= world:
        raise SystemExit(f"error: --straggle-rank {args.straggle_rank}, but the job has {world} rank(s) "
                         f"(0 to {world - 1})")
    if rank != 0:  # the ranks run the same loop: rank 0 speaks for them
        echo = _silent
    torch.manual_seed(args.seed)
    _set_tf32(args.tf32)

    echo(f"Using device: {device}" + (f" (rank 0 of {world}, {args.distributed})" if parallel else ""))
    echo("")
    echo("Model configuration:")
    echo(f"  model: {args.model}")
    for key, value in module.describe(args).items():
        echo(f"  {key}: {value}")
    echo(f"  mode: {args.mode}  dtype: {args.dtype}  warmup: {args.warmup}  steps: {args.steps}"
         f"  op_ranges: {_op_ranges_label(args)}  annotate: {_annotate_label(args)}"
         f"  optimizer: {module.OPTIMIZER if args.mode != 'decode' else 'none'}")
    if args.mode != "decode":
        echo(_describe_loop(args))
        echo(_describe_shapes(args))
    else:
        echo(f"  nvtx: {'on' if args.nvtx else 'off (no ranges at all)'}")
    if args.straggle_rank is not None:
        echo(_describe_straggler(args))
    echo("")
    if args.mode == "decode":
        from capture import decode  # imports torch: only for decode

        return decode.run(args, module, device, echo)
    echo("Initializing model...")
    # capture.comm imports torch.distributed: only when asked for
    comm = importlib.import_module("capture.comm") if args.allreduce else None
    try:
        # Weight init runs GPU kernels too: a range keeps them attributable (nsysql layers/coverage).
        with nvtx.range("model_init"):
            if parallel is not None:
                echo(f"Process group of {world}: {parallel.init(device)}")
            with device:
                model = module.build(args)
            model.train()
            if getattr(args, "checkpoint", False):
                _checkpoint_blocks(module, model)
            # what the loop calls: DDP around the model, or the model sharded in place by FSDP2
            trained = model if parallel is None else parallel.wrap(model, module, args.distributed, device)
            optimizer = module.make_optimizer(trained) if args.mode == "train" else None
            if comm is not None:
                echo(f"Process group of one: {comm.init(device)}")
            nvtx.synchronize(device)
        # the layer ranges go on the model's own modules (paths without DDP's `module.`)
        with nvtx.module_ranges(model, args.annotate and args.nvtx, backward=args.annotate_backward):
            return _loop(args, module, device, trained, optimizer, comm, echo, rank=rank, saved=model)
    finally:
        if comm is not None:
            comm.shutdown()
        if parallel is not None:
            parallel.shutdown()


def _loop(args: argparse.Namespace, module: ModuleType, device: Any, model: Any,
          optimizer: Any, comm: ModuleType | None,
          echo: Callable[[str], None], rank: int = 0, saved: object = None) -> dict[str, object]:
    """Warm-up and profiled steps, then the result read-back. `model` is what the steps call (DDP
    around the model with --distributed ddp); `saved`, what a checkpoint saves (default: `model`)."""
    import torch

    from capture.data import Feeder

    echo("Creating DataLoader..." if args.dataloader else "Creating random batch...")
    # each rank its own data (seed + rank), as a distributed sampler gives; the same with one process
    data_args = argparse.Namespace(**{**vars(args), "seed": args.seed + rank})
    feeder = Feeder(module, data_args, device, batches=(args.warmup + args.steps) * args.accum,
                    ranged=args.dataloader or args.straggle_rank is not None)
    saved = model if saved is None else saved
    checkpoint_path = (f"{args.checkpoint_path}.rank{rank}" if args.distributed == "fsdp"
                       else args.checkpoint_path)
    saves = args.distributed != "ddp" or rank == 0  # DDP: rank 0 saves the (replicated) weights
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=args.dtype == "bf16")

    def micro_batch(annotate: bool, delay_s: float, last: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Fetch, forward, loss and backward of one (micro-)batch: the whole step's with --accum 1;
        with --accum N the loss divided by N, and DDP's gradient sync only after the `last`."""
        batch = feeder.next(annotate, delay_s=delay_s)
        no_sync = getattr(model, "no_sync", None)
        gradients = no_sync() if no_sync is not None and not last else contextlib.nullcontext()
        with gradients:
            with _phase("forward_pass", annotate, device, args.sync):
                with autocast:
                    output = module.forward(model, batch)
            loss = None
            if args.mode != "forward":
                with _phase(module.LOSS_RANGE, annotate, device, args.sync):
                    with autocast:
                        loss = module.loss(output, batch)
                    scaled = loss / args.accum if args.accum > 1 else loss
                with _phase("backward_pass", annotate, device, args.sync):
                    scaled.backward()
        return output, loss

    def step(annotate: bool, index: int) -> tuple[torch.Tensor, torch.Tensor | None]:
        delay_s = _straggle_s(args, rank, index - args.warmup)
        if args.mode == "backward":
            model.zero_grad(set_to_none=True)
        ranged = annotate and args.accum > 1  # --accum 1: no micro-batch range, the step as it always was
        for k in range(1, args.accum + 1):
            with nvtx.range(f"micro_batch_{k}") if ranged else contextlib.nullcontext():
                output, loss = micro_batch(annotate, delay_s if k == 1 else 0.0, last=k == args.accum)
        if args.mode != "forward":
            if comm is not None:
                with _phase("allreduce", annotate, device, args.sync):
                    comm.all_reduce_gradients(model)
            if optimizer is not None:
                with _phase("optimizer_step", annotate, device, args.sync):
                    optimizer.step()
                    optimizer.zero_grad(set_to_none=True)
        if args.log_every and index % args.log_every == 0:
            with _phase("log_loss", annotate, device, sync=False):
                assert loss is not None  # --log-every is refused in forward mode
                value = loss.item()  # a device-to-host copy: waits for the GPU
            echo(f"step {index}: loss {value:.4f}")
        if args.checkpoint_every and index % args.checkpoint_every == 0 and saves:
            with _phase("checkpoint", annotate, device, sync=False):
                _save_checkpoint(checkpoint_path, saved, optimizer)
        return output, loss

    index = 0
    if args.warmup:
        echo(f"Running {args.warmup} warm-up step(s)...")
        with nvtx.range("warmup"):
            for _ in range(args.warmup):
                index += 1
                step(annotate=False, index=index)
                nvtx.synchronize(device)
    nvtx.synchronize(device)

    # the steps before `marked` run plain, the rest under emit_nvtx (all with --op-ranges, the last
    # one with --op-ranges-last, none otherwise)
    marked = 0 if args.op_ranges else args.steps - 1 if args.op_ranges_last else args.steps
    for first, last in ((0, marked), (marked, args.steps)):
        with nvtx.op_ranges(first == marked and first < last):
            for i in range(first, last):
                index += 1
                echo(f"Running profiled step {i + 1}/{args.steps}...")
                with nvtx.range("profiled_step"):
                    output, loss = step(annotate=True, index=index)
    nvtx.synchronize(device)
    feeder.close()

    result: dict[str, object] = {"device": str(device)}
    with nvtx.range("result"):  # the reduction and copy back to the host, outside the steps
        if loss is not None:
            result["loss"] = loss.item()
        else:
            result["output_mean"] = output.detach().float().mean().item()
    echo("")
    echo("Profiling complete. " + ", ".join(f"{k}={v}" for k, v in result.items()))
    return result


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        run(args, echo=lambda line: print(line, flush=True))
    except ValueError as exc:  # bad model configuration, e.g. heads that do not divide
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0
