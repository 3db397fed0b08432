"""Every nsys-mirroring report, cell by cell against NVIDIA's own `nsys stats -f csv` of the same export: the
reports are the files of queries/reports/ and the goldens the `nsys-stats_<report>.csv[.xz]` files beside each golden
export, so a new report is compared here as soon as its SQL file and its CSVs exist (scripts/make_report_goldens.sh
makes them from the same folder). Golden CSVs over 100 kB are stored xz-compressed."""
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

from conftest import FIXTURES, golden_exports

REPORTS = [q.name for q in catalog.group("reports")]
# compared elsewhere: NVIDIA's recipe output (tests/test_nccl_overlap_trace.py, on the shared 2-GPU run), and the
# start/end ranges no CUDA fixture has (2022.4's nvtxsesum in tests/test_golden_sums.py)
ELSEWHERE = {"nccl_gpu_overlap_trace": "*/recipes/*", "nvtx_startend_sum": "*/nsys-stats_nvtxsesum.csv"}


def golden_csv(csv_dir: Path, name: str) -> Path | None:
    for path in (csv_dir / f"nsys-stats_{name}.csv", csv_dir / f"nsys-stats_{name}.csv.xz"):
        if path.exists() and path.stat().st_size:  # an empty file: NVIDIA skipped the report (below)
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


def assert_same_as_nvidia(export, csv_dir: Path, name: str) -> None:
    """Our `-f csv` of report `name` against NVIDIA's CSV of the same export: header, row count, every cell."""
    mine, theirs = mine_csv(export, name), read_csv(golden_csv(csv_dir, name))
    assert mine[0] == theirs[0], "header"
    assert len(mine) == len(theirs), f"row count {len(mine)} != {len(theirs)}"
    for i, (a, b) in enumerate(zip(mine, theirs)):
        assert a == b, f"row {i} differs"


def nvidia_found_no_rows(csv_dir: Path, name: str) -> bool:
    """NVIDIA logs `PROCESSED (EMPTY RESULTS)` and writes no CSV when a report has no rows, and an empty CSV when
    the export lacks the report's data (`SKIPPED: ... does not contain NV Tools Extension (NVTX) data`)."""
    log = csv_dir / "nsys-stats-more.log"
    if (csv_dir / f"nsys-stats_{name}.csv").exists():  # an empty CSV: `SKIPPED: ... does not contain ... data`
        return not (csv_dir / f"nsys-stats_{name}.csv").stat().st_size
    return log.exists() and f"nsys-stats_{name}.csv]... PROCESSED (EMPTY RESULTS)" in log.read_text()


CASES = [(ident, csv_dir, name) for ident, _, csv_dir in golden_exports() for name in REPORTS
         if golden_csv(csv_dir, name) is not None]
EMPTY = [(ident, name) for ident, _, csv_dir in golden_exports() for name in REPORTS
         if golden_csv(csv_dir, name) is None and nvidia_found_no_rows(csv_dir, name)]


def test_every_report_has_nvidia_goldens():
    """Every report of the folder is compared with NVIDIA's CSV on some real export."""
    assert set(REPORTS) == set(nsysql.reports()) and len(REPORTS) > 20
    for name in REPORTS:
        found = list(FIXTURES.glob(ELSEWHERE.get(name, f"*/nsys-stats_{name}.csv*")))
        if name == "nccl_gpu_overlap_trace":
            continue  # its goldens are the shared run's recipe outputs (not committed), checked in its own test
        assert found, f"no NVIDIA CSV for {name}"


def test_there_are_golden_exports():
    assert CASES, "no golden export found (../shared/samples/small-train or fixtures/*/)"


@pytest.mark.parametrize("ident,csv_dir,name", CASES, ids=[f"{c[0]}-{c[2]}" for c in CASES])
def test_report_matches_nvidia_csv(opened, ident, csv_dir, name):
    assert_same_as_nvidia(opened[ident], csv_dir, name)


@pytest.mark.parametrize("ident,name", EMPTY, ids=[f"{c[0]}-{c[1]}" for c in EMPTY])
def test_report_is_empty_where_nvidia_found_no_rows(opened, ident, name):
    """Where the export holds the report's tables, no rows, as NVIDIA; where it lacks them, one line naming the nsys
    flag that records them (NVIDIA only logs an empty result)."""
    try:
        df = opened[ident].report(name)
    except MissingDataError as err:
        assert "\n" not in str(err) and "capture with" in str(err)
        return
    assert df.height == 0
    assert df.columns == [c.name for c in catalog.get(f"reports.{name}").columns]
