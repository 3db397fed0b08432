"""The summary reports added for issue 14 (cuda_gpu_sum, cuda_api_gpu_sum, cuda_gpu_kern_gb_sum, nvtx_pushpop_sum,
nvtx_pushpop_trace, nvtx_startend_sum), cell by cell against NVIDIA's own `nsys stats -f csv` (2025.3) of the same
export; nvtx_startend_sum, which no golden fixture has data for, against the empty result NVIDIA logged and against
Nsight Systems 2022.4's nvtxsesum of the CPU-only fixture."""
from __future__ import annotations

import csv
import io
import lzma
from pathlib import Path

import pytest

import nsysql
from nsysql.errors import MissingDataError
from nsysql.present.render import to_csv
from nsysql.sql import catalog

from conftest import golden_exports, unxz

REPORTS = ["cuda_gpu_sum", "cuda_api_gpu_sum", "cuda_gpu_kern_gb_sum", "nvtx_pushpop_sum", "nvtx_pushpop_trace",
           "nvtx_startend_sum"]
FIXTURE_2022 = Path(__file__).resolve().parents[1] / "fixtures" / "cpu-nvtx-osrt-nsys2022.4"


def golden_csv(csv_dir: Path, name: str) -> Path | None:
    for path in (csv_dir / f"nsys-stats_{name}.csv", csv_dir / f"nsys-stats_{name}.csv.xz"):
        if path.exists():
            return path
    return None


def read_csv(path: Path) -> list[list[str]]:
    opener = lzma.open if path.suffix == ".xz" else open
    with opener(path, "rt", newline="") as f:
        return list(csv.reader(f))


def mine_csv(export, name: str) -> list[list[str]]:
    q = catalog.get(f"reports.{name}")
    decimals = {c.name: c.decimals for c in q.columns if c.decimals is not None}
    return list(csv.reader(io.StringIO(to_csv(export.report(name), decimals))))


CASES = [(ident, csv_dir, name) for ident, _, csv_dir in golden_exports() for name in REPORTS
         if golden_csv(csv_dir, name) is not None]
# NVIDIA logs `PROCESSED (EMPTY RESULTS)` and writes no CSV when a report has no rows
def nvidia_found_no_rows(csv_dir: Path, name: str) -> bool:
    log = csv_dir / "nsys-stats-more.log"
    return log.exists() and f"nsys-stats_{name}.csv]... PROCESSED (EMPTY RESULTS)" in log.read_text()


EMPTY = [(ident, name) for ident, _, csv_dir in golden_exports() for name in REPORTS
         if golden_csv(csv_dir, name) is None and nvidia_found_no_rows(csv_dir, name)]


def test_there_are_golden_cases():
    assert {name for _, _, name in CASES} >= set(REPORTS) - {"nvtx_startend_sum"}
    assert ("nvtx_startend_sum" in {name for _, name in EMPTY}) or any(n == "nvtx_startend_sum" for *_, n in CASES)


@pytest.mark.parametrize("ident,csv_dir,name", CASES, ids=[f"{c[0]}-{c[2]}" for c in CASES])
def test_report_matches_nvidia_csv(opened, ident, csv_dir, name):
    assert_same_as_nvidia(opened[ident], csv_dir, name)


def assert_same_as_nvidia(export, csv_dir: Path, name: str) -> None:
    """Our `-f csv` of report `name` against NVIDIA's CSV of the same export: header, row count, every cell."""
    mine, theirs = mine_csv(export, name), read_csv(golden_csv(csv_dir, name))
    assert mine[0] == theirs[0], "header"
    assert len(mine) == len(theirs), "row count"
    for i, (a, b) in enumerate(zip(mine, theirs)):
        assert a == b, f"row {i} differs"


@pytest.mark.parametrize("ident,name", EMPTY, ids=[f"{c[0]}-{c[1]}" for c in EMPTY])
def test_report_is_empty_where_nvidia_found_no_rows(opened, ident, name):
    df = opened[ident].report(name)
    assert df.height == 0
    assert df.columns == [c.name for c in catalog.get(f"reports.{name}").columns]


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
