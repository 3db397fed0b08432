"""The re-capture fixtures of issue 34 (fixtures/whatif-cnn-*, docs/what-if-recapture.md): each gives the bound its
program was built to have, and on the baseline, whose every phase ends with a synchronize, removing the data
loading predicts each step's wall time less its own `dataloader` range, read from the raw export."""
from __future__ import annotations

import sqlite3

import polars as pl
import pytest

import nsysql

from conftest import FIXTURES, unxz

KINDS = ["cpu_ns", "launch_ns", "gpu_compute_ns", "copy_ns", "sync_wait_ns", "comm_transfer_ns", "comm_wait_ns"]


def _export(name: str):
    path = FIXTURES / name / "export.sqlite.xz"
    if not path.exists():
        pytest.skip(f"fixtures/{name} absent")
    return path


def _share(comp: pl.DataFrame, cols: list[str]) -> float:
    return sum(int(comp[c].sum()) for c in cols) / int(comp["path_ns"].sum())


def _raw_ranges(path, text: str) -> list[tuple[int, int]]:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return con.execute("SELECT n.start, n.end FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId "
                           "WHERE COALESCE(n.text, s.value) = ? AND n.end IS NOT NULL ORDER BY n.start",
                           (text,)).fetchall()
    finally:
        con.close()


def test_without_data_loading_the_baseline_step_is_its_wall_less_its_dataloader_range(tmp_path, cache_dir):
    plain = unxz(_export("whatif-cnn-base"), tmp_path / "base.sqlite")
    steps = _raw_ranges(plain, "profiled_step")
    loading = _raw_ranges(plain, "dataloader")
    with nsysql.open(plain, cache_dir=cache_dir) as ex:
        predicted = ex.what_if(["range:dataloader=0"])
    assert predicted.height == len(steps) == 8
    for row in predicted.iter_rows(named=True):
        start, end = steps[row["step"] - 1]
        inside = [b - a for a, b in loading if start <= a and b <= end]
        assert len(inside) == 1, row
        assert row["measured_ns"] == end - start
        assert row["predicted_ns"] == row["measured_ns"] - inside[0], row


@pytest.mark.parametrize("name, bound, share", [
    ("whatif-cnn-base", ["cpu_ns"], 0.6),  # the step thread's data loading and Python
    ("whatif-cnn-workers", ["gpu_compute_ns", "copy_ns"], 0.75),  # nothing to load: the synchronized GPU work
    ("whatif-cnn-nosync", ["cpu_ns", "launch_ns"], 0.9),  # the GPU's work runs during the next loading
    ("whatif-cnn-all", ["cpu_ns", "launch_ns"], 0.9),  # 11 ms of kernels for 26 ms of launching
])
def test_each_program_has_its_bound(name, bound, share, cache_dir):
    with nsysql.open(_export(name), cache_dir=cache_dir) as ex:
        comp = ex.critical_path()
    assert (comp["path_ns"] == comp["wall_ns"]).all()
    assert (comp.select(pl.sum_horizontal(KINDS)).to_series() == comp["path_ns"]).all()
    assert _share(comp, bound) > share, comp.select(["step", "wall_ns", *KINDS])
