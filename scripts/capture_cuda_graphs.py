"""A small PyTorch program whose GPU work runs mostly inside CUDA graphs, for nsysql's CUDA-graph fixtures.

Run under `nsys profile --cuda-graph-trace=graph` (nsys's default: one CUPTI_ACTIVITY_KIND_GRAPH_TRACE row per
replay, no kernel rows inside it) and `--cuda-graph-trace=node` (one kernel row per graph node) by
`scripts/capture_cuda_graphs.sh`. Each profiled step, in an NVTX range `profiled_step`:

- `data`: a new batch copied into the graphs' static input (eager: a host-to-device copy and a few kernels);
- `train_graph`: one replay of a CUDA graph of the whole training step (forward, loss, backward, SGD update),
  captured with `torch.cuda.graph` as PyTorch's documentation shows;
- `eval_graph`: one replay of a second graph, forward only (inference);
- `eager_tail`: a few eager kernels after the graphs (a norm of the weights).

`--compile` instead runs an inference loop of `torch.compile(mode="reduce-overhead")` (cudagraph trees) in
`profiled_step` ranges. `--no-nvtx` emits no NVTX at all (a CUDA application without ranges).
"""
from __future__ import annotations

import argparse
import contextlib

import torch


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--width", type=int, default=1024)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--compile", action="store_true")
    p.add_argument("--no-nvtx", action="store_true")
    a = p.parse_args()

    def rng(name: str):
        if a.no_nvtx:
            return contextlib.nullcontext()
        return torch.cuda.nvtx.range(name)

    dev = torch.device("cuda")
    torch.manual_seed(0)
    blocks = []
    for _ in range(a.layers):
        blocks += [torch.nn.Linear(a.width, a.width), torch.nn.ReLU()]
    model = torch.nn.Sequential(*blocks, torch.nn.Linear(a.width, 10)).to(dev)
    print(f"torch {torch.__version__}, device {torch.cuda.get_device_name()}, model {a.layers}x{a.width}, "
          f"batch {a.batch}, compile={a.compile}, nvtx={not a.no_nvtx}", flush=True)

    if a.compile:
        model.eval()
        fn = torch.compile(model, mode="reduce-overhead")
        x = torch.randn(a.batch, a.width, device=dev)
        with torch.no_grad():
            with rng("warmup"):
                for _ in range(max(a.warmup, 3)):
                    fn(x)
                torch.cuda.synchronize()
            for _ in range(a.steps):
                with rng("profiled_step"):
                    with rng("data"):
                        x.copy_(torch.randn(a.batch, a.width, device=dev))
                    with rng("compiled_forward"):
                        y = fn(x)
                    with rng("eager_tail"):
                        s = y.float().abs().sum()
                    s.item()
        print(f"done, last sum {s.item():.3f}", flush=True)
        return

    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    static_x = torch.randn(a.batch, a.width, device=dev)
    static_y = torch.randint(0, 10, (a.batch,), device=dev)
    host_x = torch.randn(a.batch, a.width).pin_memory()

    with rng("warmup"):
        # warm up on a side stream before capture, as PyTorch's CUDA-graph documentation does
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                opt.zero_grad(set_to_none=True)
                loss_fn(model(static_x), static_y).backward()
                opt.step()
        torch.cuda.current_stream().wait_stream(s)
        train_graph = torch.cuda.CUDAGraph()
        opt.zero_grad(set_to_none=True)
        with torch.cuda.graph(train_graph):
            static_loss = loss_fn(model(static_x), static_y)
            static_loss.backward()
            opt.step()
        eval_graph = torch.cuda.CUDAGraph()
        with torch.no_grad():
            with torch.cuda.graph(eval_graph):
                static_out = model(static_x)
        for _ in range(a.warmup):
            train_graph.replay()
            eval_graph.replay()
        torch.cuda.synchronize()

    for i in range(a.steps):
        with rng("profiled_step"):
            with rng("data"):
                static_x.copy_(host_x, non_blocking=True)
                static_x.mul_(0.5).add_(0.1 * i)
                static_y.random_(0, 10)
            with rng("train_graph"):
                train_graph.replay()
            with rng("eval_graph"):
                eval_graph.replay()
            with rng("eager_tail"):
                n = sum(p.detach().norm() for p in model.parameters())
                correct = (static_out.argmax(1) == static_y).sum()
            loss = static_loss.item()
    print(f"done, loss {loss:.4f}, weight norm {float(n):.3f}, correct {int(correct)}", flush=True)


if __name__ == "__main__":
    main()
