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
                                    warmup=1, steps=1)
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
