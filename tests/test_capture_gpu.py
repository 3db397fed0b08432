"""A real tiny capture under nsys (needs CUDA and nsys; skipped elsewhere)."""
from __future__ import annotations

import csv
import shutil
import sqlite3
from pathlib import Path

import pytest

from capture import runner

pytestmark = pytest.mark.gpu

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs CUDA", allow_module_level=True)
if shutil.which("nsys") is None:
    pytest.skip("needs nsys on PATH", allow_module_level=True)


def test_tiny_gpt_capture_has_kernels_and_ranges(tmp_path: Path) -> None:
    workload = runner.workload_argv("gpt", size="tiny", mode="train", batch=2, seq=32,
                                    warmup=1, steps=1, op_ranges=True)
    plan = runner.run_capture("gpt", workload, tmp_path / "run", stats=True,
                              reports=["nvtx_sum", "cuda_gpu_kern_sum"], echo=print)
    with sqlite3.connect(f"file:{plan.sqlite}?mode=ro", uri=True) as db:
        kernels = db.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
        names = {row[0] for row in db.execute(
            "SELECT coalesce(e.text, s.value) FROM NVTX_EVENTS AS e "
            "LEFT JOIN StringIds AS s ON s.id = e.textId")}
    assert kernels > 0
    assert {"warmup", "profiled_step", "forward_pass", "loss_computation", "backward_pass",
            "optimizer_step", "layer_0", "layer_1", "attention_sublayer",
            "computing softmax"} <= names
    assert any(name and name.startswith("aten::") for name in names)  # emit_nvtx op ranges
    with plan.stats_files[0].open(newline="") as f:
        ranges = [row["Range"] for row in csv.DictReader(f)]
    assert any(r.endswith("profiled_step") for r in ranges)


def test_annotated_capture_puts_backward_kernels_in_module_ranges(tmp_path: Path) -> None:
    """The default capture (nsysql.annotate, no op markers): backward ranges on the autograd thread, closed,
    around most of that thread's kernel time."""
    workload = runner.workload_argv("gpt", size="tiny", mode="train", batch=2, seq=32, warmup=1, steps=1)
    plan = runner.run_capture("gpt", workload, tmp_path / "run", echo=print)
    with sqlite3.connect(f"file:{plan.sqlite}?mode=ro", uri=True) as db:
        ranges = db.execute(
            "SELECT coalesce(e.text, s.value), e.globalTid, e.start, e.\"end\" FROM NVTX_EVENTS AS e "
            "LEFT JOIN StringIds AS s ON s.id = e.textId WHERE e.eventType = 59").fetchall()
        launches = db.execute(
            "SELECT r.globalTid, r.start, r.\"end\", k.\"end\" - k.start FROM CUPTI_ACTIVITY_KIND_KERNEL AS k "
            "JOIN CUPTI_ACTIVITY_KIND_RUNTIME AS r ON r.correlationId = k.correlationId").fetchall()
    assert all(end is not None for _, _, _, end in ranges), "a range was left open"
    names = {name for name, *_ in ranges}
    assert {"model/layers.0/attn", "model/layers.0/attn [backward]"} <= names
    assert not any(name.startswith("aten::") for name in names)  # no op markers by default
    backward = [(tid, start, end) for name, tid, start, end in ranges if name.endswith(" [backward]")]
    forward_threads = {tid for name, tid, *_ in ranges if name == "model/layers.0/attn"}
    autograd = {tid for tid, *_ in backward}
    assert autograd and not autograd & forward_threads  # PyTorch's autograd thread
    on_autograd = [(tid, s, e, d) for tid, s, e, d in launches if tid in autograd]
    inside = sum(d for tid, s, e, d in on_autograd
                 if any(t == tid and bs <= s and e <= be for t, bs, be in backward))
    assert inside > 0.5 * sum(d for *_, d in on_autograd)


def _two_gpus() -> None:
    if torch.cuda.device_count() < 2:
        pytest.skip("needs 2 GPUs")


def test_two_ranks_per_rank_exports_show_the_planted_straggler(tmp_path: Path) -> None:
    """--nproc 2 --per-rank: two exports, one process and one GPU each; rank 1 sleeps 30 ms in profiled
    step 2's `dataloader`, so rank 0's NCCL kernel of that step spins while waiting for it."""
    _two_gpus()
    workload = runner.workload_argv("gpt", size="tiny", mode="train", batch=2, seq=32, warmup=1, steps=2,
                                    straggle_rank=1, straggle_ms=30, straggle_step=2)
    plan = runner.run_capture("gpt", workload, tmp_path / "run", nproc=2, per_rank=True, echo=print)
    dataloader, longest_nccl = [], []
    for rank, one in enumerate(plan.exports):
        assert one.sqlite.name == f"run_rank{rank}.sqlite"
        with sqlite3.connect(f"file:{one.sqlite}?mode=ro", uri=True) as db:
            devices = {d for (d,) in db.execute("SELECT DISTINCT deviceId FROM CUPTI_ACTIVITY_KIND_KERNEL")}
            assert devices == {rank}  # each rank on the GPU of its LOCAL_RANK
            dataloader.append([end - start for start, end in db.execute(
                "SELECT e.start, e.\"end\" FROM NVTX_EVENTS AS e LEFT JOIN StringIds AS s ON s.id = e.textId "
                "WHERE coalesce(e.text, s.value) = 'dataloader' ORDER BY e.start")])
            longest_nccl.append(db.execute(
                "SELECT max(k.\"end\" - k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL AS k "
                "JOIN StringIds AS s ON s.id = k.shortName WHERE s.value LIKE 'nccl%'").fetchone()[0])
    assert len(dataloader[0]) == len(dataloader[1]) == 2
    assert dataloader[1][1] >= 30e6 > dataloader[1][0]  # ns
    assert all(ns < 30e6 for ns in dataloader[0])
    assert longest_nccl[0] > 15e6  # rank 0 waits for rank 1 inside the collective
