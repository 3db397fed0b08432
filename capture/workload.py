"""The shared driver behind ``python -m capture MODEL ...``: warm-up, then profiled steps.

Range layout (as in seed 003)::

    model_init                  building the model and optimizer (weight init kernels)
    warmup                      the --warmup steps; only the model's own ranges inside
    profiled_step               one per --steps, under emit_nvtx when --op-ranges
      forward_pass
      <loss range>              loss_computation (gpt, bert) or Loss (ncf, dlrm); not in
                                forward mode
      backward_pass             backward and train modes
      optimizer_step            train mode

Each phase of a profiled step ends with torch.cuda.synchronize() inside its range, and each
warm-up step ends with one, so range durations cover their GPU work. The batch is made on
the CPU once (fixed seed) and copied to the device at the start of every step.
"""
from __future__ import annotations

import argparse
import contextlib
import sys
from typing import Callable, Iterator

from capture import nvtx
from capture.models import MODEL_NAMES, load

MODES = ("forward", "backward", "train")
DTYPES = ("fp32", "bf16")
DEFAULT_WARMUP = 3  # the seed's layer ranges count 4 forward passes for 1 profiled step
DEFAULT_STEPS = 1


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
                         help="forward, backward (= forward + backward) or train (default: train)")
        sub.add_argument("--dtype", choices=DTYPES, default="fp32",
                         help="fp32, or bf16 through autocast (default: fp32)")
        sub.add_argument("--batch", type=_positive, default=module.DEFAULT_BATCH,
                         help=f"batch size (default: {module.DEFAULT_BATCH})")
        if module.DEFAULT_SEQ is not None:
            sub.add_argument("--seq", type=_positive, default=module.DEFAULT_SEQ,
                             help=f"sequence length (default: {module.DEFAULT_SEQ})")
        sub.add_argument("--warmup", type=_non_negative, default=DEFAULT_WARMUP,
                         help=f"warm-up steps, inside `warmup` (default: {DEFAULT_WARMUP})")
        sub.add_argument("--steps", type=_positive, default=DEFAULT_STEPS,
                         help=f"profiled steps, each in `profiled_step` (default: {DEFAULT_STEPS})")
        sub.add_argument("--op-ranges", action=argparse.BooleanOptionalAction, default=True,
                         help="run the profiled steps under "
                              "torch.autograd.profiler.emit_nvtx(record_shapes=True) (default: on)")
        sub.add_argument("--device", choices=("cuda", "cpu"), default=None,
                         help="default: cuda when available, else cpu")
        sub.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
        module.add_arguments(sub)
    return parser


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    return build_parser().parse_args(argv)


@contextlib.contextmanager
def _phase(name: str, annotate: bool, device: object) -> Iterator[None]:
    """A profiled-step phase: a range ending with a synchronize; nothing in warm-up."""
    if not annotate:
        yield
        return
    nvtx.push(name)
    try:
        yield
        nvtx.synchronize(device)
    finally:
        nvtx.pop()


def run(args: argparse.Namespace, echo: Callable[[str], None] = print) -> dict[str, object]:
    """Run the workload `args` describes; returns {'device', 'loss' or 'output_mean'}."""
    import torch

    module = load(args.model)
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("error: --device cuda but torch.cuda.is_available() is False")
    torch.manual_seed(args.seed)

    echo(f"Using device: {device}")
    echo("")
    echo("Model configuration:")
    echo(f"  model: {args.model}")
    for key, value in module.describe(args).items():
        echo(f"  {key}: {value}")
    echo(f"  mode: {args.mode}  dtype: {args.dtype}  warmup: {args.warmup}  steps: {args.steps}"
         f"  op_ranges: {'on' if args.op_ranges else 'off'}  optimizer: {module.OPTIMIZER}")
    echo("")
    echo("Initializing model...")
    # Weight init runs GPU kernels too: a range keeps them attributable (nsysql layers/coverage).
    with nvtx.range("model_init"):
        with device:
            model = module.build(args)
        model.train()
        optimizer = module.make_optimizer(model) if args.mode == "train" else None
        nvtx.synchronize(device)
    echo("Creating random batch...")
    host_batch = module.make_batch(args, torch.Generator().manual_seed(args.seed))
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=args.dtype == "bf16")

    def step(annotate: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
        batch = {key: value.to(device) for key, value in host_batch.items()}
        if args.mode == "backward":
            model.zero_grad(set_to_none=True)
        with _phase("forward_pass", annotate, device):
            with autocast:
                output = module.forward(model, batch)
        if args.mode == "forward":
            return output, None
        with _phase(module.LOSS_RANGE, annotate, device):
            with autocast:
                loss = module.loss(output, batch)
        with _phase("backward_pass", annotate, device):
            loss.backward()
        if optimizer is not None:
            with _phase("optimizer_step", annotate, device):
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)
        return output, loss

    if args.warmup:
        echo(f"Running {args.warmup} warm-up step(s)...")
        with nvtx.range("warmup"):
            for _ in range(args.warmup):
                step(annotate=False)
                nvtx.synchronize(device)
    nvtx.synchronize(device)

    with nvtx.op_ranges(args.op_ranges):
        for i in range(args.steps):
            echo(f"Running profiled step {i + 1}/{args.steps}...")
            with nvtx.range("profiled_step"):
                output, loss = step(annotate=True)
    nvtx.synchronize(device)

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
