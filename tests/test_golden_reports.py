"""Every nsys-mirroring report, cell by cell against NVIDIA's own `nsys stats -f csv` of the same export."""
from __future__ import annotations

import csv
import io

import pytest

import nsysql
from nsysql import catalog
from nsysql.render import to_csv

from conftest import golden_exports

REPORTS = ["nvtx_sum", "nvtx_gpu_proj_sum", "nvtx_kern_sum", "cuda_api_sum", "cuda_gpu_kern_sum",
           "cuda_kern_exec_sum", "cuda_gpu_mem_time_sum", "cuda_gpu_mem_size_sum", "osrt_sum"]
CASES = [(ident, csv_dir, name) for ident, _, csv_dir in golden_exports() for name in REPORTS
         if (csv_dir / f"nsys-stats_{name}.csv").exists()]


def test_all_reports_are_listed():
    assert sorted(nsysql.reports()) == sorted(REPORTS)


def test_there_are_golden_exports():
    assert CASES, "no golden export found (../shared/samples/small-train or fixtures/*/)"


@pytest.mark.parametrize("ident,csv_dir,name", CASES, ids=[f"{c[0]}-{c[2]}" for c in CASES])
def test_report_matches_nvidia_csv(opened, ident, csv_dir, name):
    q = catalog.get(f"reports.{name}")
    decimals = {c.name: c.decimals for c in q.columns if c.decimals is not None}
    mine = list(csv.reader(io.StringIO(to_csv(opened[ident].report(name), decimals))))
    with (csv_dir / f"nsys-stats_{name}.csv").open(newline="") as f:
        theirs = list(csv.reader(f))
    assert mine[0] == theirs[0], "header"
    assert len(mine) == len(theirs), "row count"
    for i, (a, b) in enumerate(zip(mine, theirs)):
        assert a == b, f"row {i} differs"
