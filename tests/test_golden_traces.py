"""The trace reports (one row per event), cell by cell against NVIDIA's own `nsys stats -f csv` of the same export.
Golden CSVs over 100 kB are stored xz-compressed (nsys-stats_<report>.csv.xz)."""
from __future__ import annotations

import csv
import io
import lzma
from pathlib import Path

import pytest

from nsysql.present.render import to_csv
from nsysql.sql import catalog

from conftest import golden_exports

REPORTS = ["cuda_gpu_trace", "cuda_api_trace", "cuda_kern_exec_trace", "nvtx_gpu_proj_trace"]


def _golden(csv_dir: Path, name: str) -> Path | None:
    for candidate in (csv_dir / f"nsys-stats_{name}.csv", csv_dir / f"nsys-stats_{name}.csv.xz"):
        if candidate.exists():
            return candidate
    return None


CASES = [(ident, _golden(csv_dir, name), name) for ident, _, csv_dir in golden_exports() for name in REPORTS
         if _golden(csv_dir, name) is not None]


def _read(path: Path) -> list[list[str]]:
    if path.suffix == ".xz":
        with lzma.open(path, "rt", newline="") as f:
            return list(csv.reader(f))
    with path.open(newline="") as f:
        return list(csv.reader(f))


def test_every_trace_report_has_golden_cases():
    assert {name for _, _, name in CASES} == set(REPORTS)


@pytest.mark.parametrize("ident,golden,name", CASES, ids=[f"{c[0]}-{c[2]}" for c in CASES])
def test_trace_matches_nvidia_csv(opened, ident, golden, name):
    q = catalog.get(f"reports.{name}")
    decimals = {c.name: c.decimals for c in q.columns if c.decimals is not None}
    mine = list(csv.reader(io.StringIO(to_csv(opened[ident].report(name), decimals))))
    theirs = _read(golden)
    assert mine[0] == theirs[0], "header"
    assert len(mine) == len(theirs), f"row count {len(mine)} != {len(theirs)}"
    for i, (a, b) in enumerate(zip(mine, theirs)):
        assert a == b, f"row {i} differs"
