"""One API name under two StringIds ids (scripts/make_duplicate_names.py, as a 2022 MPI export has): NVIDIA's
cuda_api_sum and osrt_sum group by the id (`GROUP BY nameId` in their scripts), so the name has a row per id.
Expected rows from a plain walk of the raw rows, grouped by nameId as NVIDIA's SQL does."""
from __future__ import annotations

import re
import sqlite3
from collections import defaultdict

import pytest

import nsysql

from conftest import load_script


@pytest.fixture(scope="module")
def export(tmp_path_factory):
    return load_script("scripts/make_duplicate_names.py").build(tmp_path_factory.mktemp("dup"))


def _plain(path, table: str, where: str = "") -> list[tuple[str, int, int]]:
    """(name as nsys stats prints it, calls, total ns) per nameId."""
    con = sqlite3.connect(path)
    strings = dict(con.execute("SELECT id, value FROM StringIds"))
    per_id: dict[int, list[int]] = defaultdict(list)
    for name_id, start, end in con.execute(f"SELECT nameId, start, end FROM {table} {where}"):
        per_id[name_id].append(end - start)
    con.close()
    def shown(name: str) -> str:  # cuda_api_sum drops a `_vNNNN` suffix, as NVIDIA's substr(value, -6, 2) = '_v'
        return re.sub(r"_v\d{4}$", "", name) if table.startswith("CUPTI") else name
    return sorted((shown(strings[i]), len(d), sum(d)) for i, d in per_id.items())


@pytest.mark.parametrize("report, table, where", [
    ("cuda_api_sum", "CUPTI_ACTIVITY_KIND_RUNTIME", ""),
    ("osrt_sum", "OSRT_API", "WHERE eventClass NOT IN (31, 32)"),
])
def test_a_name_under_two_ids_keeps_a_row_per_id(export, tmp_path, report, table, where):
    expected = _plain(export, table, where)
    names = [name for name, *_ in expected]
    assert len(names) > len(set(names))  # the case: a name twice
    with nsysql.open(export, cache_dir=tmp_path) as ex:
        df = ex.report(report)
    got = sorted(zip(df["Name"], df["Num Calls"], df["Total Time (ns)"]))
    assert got == expected
    assert df["Time (%)"].sum() == pytest.approx(100.0)
