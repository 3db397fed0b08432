"""The summary reports added for issue 14 on Nsight Systems 2022.4's CPU-only fixture: nvtx_startend_sum, which no
golden CUDA fixture has data for, against 2022.4's nvtxsesum, the push/pop tree, and the CUDA sums saying in one
line what they need. (Cell by cell against NVIDIA's 2025.3 CSVs: tests/test_golden_reports.py, for every report.)"""
from __future__ import annotations

from pathlib import Path

import pytest

import nsysql
from nsysql.errors import MissingDataError

from conftest import unxz
from test_golden_reports import mine_csv, read_csv

FIXTURE_2022 = Path(__file__).resolve().parents[1] / "fixtures" / "cpu-nvtx-osrt-nsys2022.4"


# -- the Nsight Systems 2022.4 CPU-only fixture: start/end ranges, and no CUDA at all -----------------
@pytest.fixture(scope="module")
def cpu_export(tmp_path_factory):
    directory = tmp_path_factory.mktemp("nsys2022-sums")
    target = unxz(FIXTURE_2022 / "export.sqlite.xz", directory / "export.sqlite")
    with nsysql.open(target, cache_dir=directory / "cache") as ex:
        yield ex


@pytest.mark.parametrize("name,old", [("nvtx_pushpop_sum", "nvtxppsum"), ("nvtx_startend_sum", "nvtxsesum")])
def test_style_sums_match_nsys_2022_4(cpu_export, name, old):
    """2022.4's nvtxppsum/nvtxsesum have 2025.3's header and rows; only a default-domain range's name differs:
    2022.4 prints `load`, 2025.3 (and nsysql) `:load`."""
    mine, theirs = mine_csv(cpu_export, name), read_csv(FIXTURE_2022 / f"nsys-stats_{old}.csv")
    assert len(theirs) > 1
    assert mine[0] == theirs[0], "header"
    assert len(mine) == len(theirs), "row count"
    rng = theirs[0].index("Range")
    for i, (a, b) in enumerate(zip(mine[1:], theirs[1:]), start=1):
        assert a[:rng] == b[:rng], f"row {i}"
        assert a[rng] == (b[rng] if ":" in b[rng] else ":" + b[rng]), f"row {i} range name"


def test_pushpop_trace_tree_on_nsys_2022_4(cpu_export):
    """Push/pop nesting per thread, start/end ranges left out; every row consistent with its parent's."""
    df = cpu_export.report("nvtx_pushpop_trace")
    rows = {r["RangeId"]: r for r in df.iter_rows(named=True)}
    ranges = cpu_export.sql("SELECT range_id FROM nvtx_range WHERE style = 'PushPop'")["range_id"].to_list()
    assert sorted(rows) == sorted(ranges)
    for r in rows.values():
        assert r["Duration (ns)"] == r["End (ns)"] - r["Start (ns)"]
        assert r["DurNonChild (ns)"] == r["Duration (ns)"] - r["DurChild (ns)"]
        kids = [k for k in rows.values() if k["ParentId"] == r["RangeId"]]
        assert r["NumChild"] == len(kids) and r["DurChild (ns)"] == sum(k["Duration (ns)"] for k in kids)
        if r["ParentId"] is None:
            assert r["Lvl"] == 0 and r["RangeStack"] == f":{r['RangeId']}" and r["NameTree"] == r["Name"]
        else:
            p = rows[r["ParentId"]]
            assert (p["TID"], r["Lvl"], r["RangeStack"]) == (r["TID"], p["Lvl"] + 1, f"{p['RangeStack']}:{r['RangeId']}")
            assert p["Start (ns)"] <= r["Start (ns)"] and r["End (ns)"] <= p["End (ns)"]
            assert r["NameTree"] == "--" * r["Lvl"] + r["Name"]


@pytest.mark.parametrize("name", ["cuda_gpu_sum", "cuda_api_gpu_sum", "cuda_gpu_kern_gb_sum"])
def test_cuda_sums_without_cuda_say_so_in_one_line(cpu_export, name):
    with pytest.raises(MissingDataError) as err:
        cpu_export.report(name)
    assert "\n" not in str(err.value) and "--trace=cuda" in str(err.value)
