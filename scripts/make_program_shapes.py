#!/usr/bin/env python3
"""Synthetic exports of the program shapes of issue 40 (an LLM decode loop with a warm-up request, the CPU running
ahead of CUDA-graph decode steps, a decode loop without NVTX), for the structure rules of docs/steps.md until real
captures of `nsysql capture gpt --mode decode` (scripts/make_fixtures.sh) are in fixtures/.

Each case returns (export, truth): the export built with scripts/make_synthetic.py's SyntheticExport, and what the
program did, as the program knows it (the ranges it pushed, the ops of each iteration), for tests to check nsysql
against (tests/test_program_shapes.py). Times are ns; one decode step is tens of µs.

CLI: `python scripts/make_program_shapes.py OUTDIR` writes every case as OUTDIR/<case>.sqlite.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_synthetic as ms  # noqa: E402  (a script beside this one, not a package)

P, T = 100, 100
PREFILL_KERNELS = ("embed", "gemm_prefill", "attn_prefill", "gemm_prefill", "argmax")
DECODE_KERNELS = ("embed", "gemm_decode", "attn_decode", "argmax")


class Clock:
    """A CPU thread launching ops one after another, and the GPU stream running them in order."""

    def __init__(self, export: ms.SyntheticExport, start: int, launch_ns: int = 2_000) -> None:
        self.b, self.cpu, self.gpu, self.launch_ns, self.corr = export, start, start, launch_ns, 1

    def kernel(self, name: str, run_ns: int) -> tuple[int, int]:
        """Launch `name` now; it runs when the stream is free. Returns its GPU (start, end)."""
        api_start, api_end = self.cpu, self.cpu + self.launch_ns
        start = max(self.gpu, api_end + 1_000)
        self.b.launch(start=api_start, end=api_end, tid=T, pid=P, correlation_id=self.corr,
                      kernel=(name, start, start + run_ns, 7, 0))
        self.corr += 1
        self.cpu, self.gpu = api_end + 500, start + run_ns
        return start, start + run_ns

    def upload(self, nbytes: int, run_ns: int) -> None:
        """A weight upload: a synchronous host-to-device copy."""
        start = max(self.gpu, self.cpu + 1_000)
        self.b.memcpy(start, start + run_ns, nbytes, pid=P, correlation_id=self.corr, api="cudaMemcpy_v3020",
                      api_start=self.cpu, api_end=start + run_ns + 500, tid=T)
        self.corr += 1
        self.cpu = self.gpu = start + run_ns + 1_000

    def sync(self) -> None:
        self.cpu = max(self.cpu, self.gpu) + 1_000


def _decode_program(nvtx: bool, requests: int = 3, tokens: int = 6) -> tuple[ms.SyntheticExport, dict]:
    """model_init (4 uploads), a warm-up request inside `warmup`, then `requests` requests: each `request` >
    `prefill` (5 kernels) + tokens-1 `decode_step` (4 kernels each); each request ends with a sync. With nvtx=False
    the same ops without any range."""
    b = ms.SyntheticExport().thread(P, T, "python3").gpu()
    c = Clock(b, 1_000_000)
    truth: dict = {"decode_steps": [], "warmup_steps": [], "requests": [], "warmup_requests": [], "load_end_ns": None,
                   "ops_per_request": len(PREFILL_KERNELS) + (tokens - 1) * len(DECODE_KERNELS), "request_starts": []}

    def rng(name: str, start: int, end: int) -> None:
        if nvtx:
            b.range(name, start, end, tid=T, pid=P)

    init = c.cpu
    for _ in range(4):
        c.upload(64 << 20, 3_000_000)
    rng("model_init", init, c.cpu)
    truth["load_end_ns"] = c.cpu
    c.cpu += 50_000
    for r in range(requests + 1):
        warm = r == 0
        if warm:
            warm_start = c.cpu
            c.cpu += 1_000  # the warm-up range opens first and closes last
        start = c.cpu
        c.cpu += 5_000
        pre = c.cpu
        truth["request_starts"].append(pre)  # the first launch of the request
        for name in PREFILL_KERNELS:
            c.kernel(name, 40_000)
        rng("prefill", pre, c.cpu)
        truth["_prefill"] = {"start_ns": pre, "end_ns": c.cpu, "gpu_end_ns": c.gpu}
        for _ in range(tokens - 1):
            step_start = c.cpu
            ops = [c.kernel(name, 5_000) for name in DECODE_KERNELS]
            step = {"start_ns": step_start, "end_ns": c.cpu, "gpu_end_ns": ops[-1][1]}
            rng("decode_step", step_start, c.cpu)
            c.cpu += 3_000  # the Python loop between steps: the longest pause of the iteration
            (truth["warmup_steps"] if warm else truth["decode_steps"]).append(step)
        c.sync()
        rng("request", start, c.cpu)
        (truth["warmup_requests"] if warm else truth["requests"]).append(
            {"start_ns": start, "end_ns": c.cpu, "prefill": truth.pop("_prefill")})
        if warm:
            c.cpu += 1_000
            rng("warmup", warm_start, c.cpu)
        c.cpu += 20_000
    return b, truth


def decode_loop() -> tuple[ms.SyntheticExport, dict]:
    """An eager decode loop with NVTX: the steps are the 15 real `request/decode_step` ranges; the warm-up request's
    5 decode steps (inside `warmup`) are steps left out as warm-up."""
    return _decode_program(nvtx=True)


def decode_no_nvtx() -> tuple[ms.SyntheticExport, dict]:
    """The same program without NVTX: every request launches the same 25 ops (a prefill and 5 decode steps), so the
    outermost repeating sequence, the iteration, is a request (4, the warm-up request's too); the weight uploads
    repeat nothing and are in no iteration."""
    return _decode_program(nvtx=False)


def graph_decode_ahead(steps: int = 12) -> tuple[ms.SyntheticExport, dict]:
    """CUDA-graph decode: each `decode_step` range (inside `request`) launches one graph of 3 kernels (40 µs of GPU
    work) in 8 µs of CPU, so the CPU runs ahead: step k's GPU work ends long after its range. One warm-up step
    inside `warmup`; the request ends with a sync."""
    b = ms.SyntheticExport().thread(P, T, "python3").gpu()
    truth: dict = {"decode_steps": [], "warmup_steps": []}
    cpu, gpu, corr = 1_000_000, 1_000_000, 1
    for warm in (True, False):
        if warm:
            warm_start, cpu = cpu, cpu + 1_000  # the warm-up range opens first and closes last
        req_start = cpu
        for _ in range(1 if warm else steps):
            start = cpu
            b.runtime("cudaGraphLaunch_v10000", cpu, cpu + 6_000, tid=T, pid=P, correlation_id=corr)
            first = max(gpu, cpu + 7_000)
            t = first
            for name in ("g_gemm", "g_attn", "g_argmax"):
                b.kernel(name, t, t + 13_000, pid=P, correlation_id=corr)
                t += 13_000 + 500
            gpu = t - 500  # the last kernel's end
            corr += 1
            cpu += 8_000
            b.range("decode_step", start, cpu, tid=T, pid=P)
            (truth["warmup_steps"] if warm else truth["decode_steps"]).append(
                {"start_ns": start, "end_ns": cpu, "gpu_start_ns": first, "gpu_end_ns": gpu})
            cpu += 500
        cpu = max(cpu, gpu) + 2_000  # the request's sync
        b.range("request", req_start, cpu, tid=T, pid=P)
        if warm:
            cpu += 1_000
            b.range("warmup", warm_start, cpu, tid=T, pid=P)
        cpu += 10_000
    return b, truth


def train_accum(steps: int = 3, micro: int = 4) -> tuple[ms.SyntheticExport, dict]:
    """Training with gradient accumulation: a `warmup` step, then `steps` x `profiled_step` > `micro` x
    `micro_batch_K` > forward_pass, backward_pass (one kernel each), then one `optimizer_step`. The step is the
    profiled_step; the micro-batches repeat inside it and must not be taken for steps."""
    b = ms.SyntheticExport().thread(P, T, "python3").gpu()
    c = Clock(b, 1_000_000)
    truth: dict = {"steps": [], "micro_batches": []}

    def one_step(ranged: bool) -> None:
        start = c.cpu
        for k in range(1, micro + 1):
            m_start = c.cpu
            for phase, kernel in (("forward_pass", "gemm_fwd"), ("backward_pass", "gemm_bwd")):
                p_start = c.cpu
                c.kernel(kernel, 20_000)
                c.sync()
                if ranged:
                    b.range(phase, p_start, c.cpu, tid=T, pid=P)
            if ranged:
                b.range(f"micro_batch_{k}", m_start, c.cpu, tid=T, pid=P)
                truth["micro_batches"].append({"start_ns": m_start, "end_ns": c.cpu})
        o_start = c.cpu
        c.kernel("adam", 10_000)
        c.sync()
        if ranged:
            b.range("optimizer_step", o_start, c.cpu, tid=T, pid=P)
            b.range("profiled_step", start, c.cpu, tid=T, pid=P)
            truth["steps"].append({"start_ns": start, "end_ns": c.cpu})
        c.cpu += 5_000

    w_start = c.cpu
    one_step(ranged=False)
    b.range("warmup", w_start, c.cpu, tid=T, pid=P)
    for _ in range(steps):
        one_step(ranged=True)
    return b, truth


CASES = {"train_accum": train_accum, "decode_loop": decode_loop, "decode_no_nvtx": decode_no_nvtx, "graph_decode_ahead": graph_decode_ahead}


def main(argv: list[str] | None = None) -> int:
    return ms.write_cases({name: (lambda f=f: f()[0]) for name, f in CASES.items()}, __doc__ or "", argv)


if __name__ == "__main__":
    sys.exit(main())
