"""What nsysql.annotate costs: training-step time of our GPT with and without it (forward ranges only,
and for scale under PyTorch's emit_nvtx op markers), on CUDA.

    python bench/bench_annotate.py [--size tiny --size small] [--steps 30] [--warmup 5] [--rounds 2]

Each configuration runs `--warmup` untimed steps, then `--steps` timed ones (zero_grad, forward, loss,
backward, AdamW step, torch.cuda.synchronize), the modes interleaved `--rounds` times so that drift
hits them alike. Prints one Markdown row per size and mode: median step time, the median's change against
the plain model, and the median time until forward+loss, backward and the optimizer step return (the CPU
side: kernels are launched, not finished). Run it plainly (NVTX calls go nowhere) and under `nsys profile -t
cuda,nvtx` (each range is recorded) to see both costs.
"""
from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # capture/ and nsysql/ from the checkout

MODES = ("plain", "annotate", "annotate-forward", "op-ranges")


def build(size: str, batch: int, seq: int, device: str):
    import torch

    from capture.models import load

    gpt = load("gpt")
    args = argparse.Namespace(size=size, seq=seq, batch=batch, vocab=10000)
    torch.manual_seed(0)
    with torch.device(device):
        model = gpt.build(args)
    batch_ = {k: v.to(device) for k, v in gpt.make_batch(args, torch.Generator().manual_seed(0)).items()}
    return gpt, model, gpt.make_optimizer(model), batch_


def around(mode: str, model):
    import torch

    import nsysql

    if mode == "annotate":
        return nsysql.annotate(model)
    if mode == "annotate-forward":
        return nsysql.annotate(model, backward=False)
    if mode == "op-ranges":
        return torch.autograd.profiler.emit_nvtx(record_shapes=True)
    return contextlib.nullcontext()


def step_times(gpt, model, optimizer, batch, mode: str, warmup: int, steps: int) -> list[tuple[float, ...]]:
    """Per timed step: (step, forward+loss, backward, optimizer) seconds."""
    import torch

    times = []
    with around(mode, model):
        for i in range(warmup + steps):
            start = time.perf_counter()
            optimizer.zero_grad(set_to_none=True)
            loss = gpt.loss(gpt.forward(model, batch), batch)
            forward = time.perf_counter()
            loss.backward()
            backward = time.perf_counter()
            optimizer.step()
            optim = time.perf_counter()
            if loss.is_cuda:
                torch.cuda.synchronize()
            if i >= warmup:
                times.append((time.perf_counter() - start, forward - start, backward - forward, optim - backward))
    return times


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", action="append", help="GPT size (default: tiny and small)")
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--seq", type=int, default=512)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--modes", default=",".join(MODES))
    p.add_argument("--device", default="cuda", help="cuda (default), or cpu to try the script")
    a = p.parse_args()
    import torch

    if a.device == "cuda" and not torch.cuda.is_available():
        sys.exit("error: no CUDA here (--device cpu to try the script)")
    modes = [m for m in a.modes.split(",") if m]
    name = torch.cuda.get_device_name(0) if a.device == "cuda" else "CPU"
    print(f"{name}, torch {torch.__version__}; batch {a.batch}, seq {a.seq}, "
          f"{a.steps} timed steps x {a.rounds} rounds per mode")
    print("| size | mode | step ms | vs plain | forward+loss ms | backward ms | optimizer ms |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for size in a.size or ["tiny", "small"]:
        gpt, model, optimizer, batch = build(size, a.batch, a.seq, a.device)
        times: dict[str, list[tuple[float, ...]]] = {m: [] for m in modes}
        for _ in range(a.rounds):
            for mode in modes:
                times[mode] += step_times(gpt, model, optimizer, batch, mode, a.warmup, a.steps)
        medians = {m: [statistics.median(column) for column in zip(*rows)] for m, rows in times.items()}
        base = medians["plain"][0] if "plain" in medians else None
        for mode in modes:
            step, *phases = medians[mode]
            change = f"{100 * (step / base - 1):+.1f}%" if base else "-"
            print(f"| {size} | {mode} | {1e3 * step:.2f} | {change} | "
                  + " | ".join(f"{1e3 * t:.2f}" for t in phases) + " |", flush=True)
        del gpt, model, optimizer, batch
        if a.device == "cuda":
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
