"""The MPI, OpenMP and OpenACC reports (mpi_event_sum, mpi_event_trace, mpi_msg_size_sum, openmp_sum, openacc_sum),
cell by cell against NVIDIA's own `nsys stats -f csv` (2025.3): the MPI ones on fixtures/mpi-2rank (a real 2-rank
capture), the OpenMP and OpenACC ones on the export scripts/make_synthetic_openmp_openacc.py writes, on which NVIDIA's
scripts ran (fixtures/synthetic-openmp-openacc; our GPU machine has no OpenMP runtime with OMPT and no OpenACC
compiler). The normalized tables against a plain walk of the raw rows, and one line naming the nsys flag on exports
without the data."""
from __future__ import annotations

import hashlib
import importlib.util
import sqlite3
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

import nsysql
from nsysql.cli.app import app
from nsysql.errors import MissingDataError

from conftest import FIXTURES, REPO, golden_exports
from test_golden_reports import assert_same_as_nvidia, golden_csv

MPI = ["mpi_event_sum", "mpi_event_trace", "mpi_msg_size_sum"]
SYNTHETIC = FIXTURES / "synthetic-openmp-openacc"
CASES = [(ident, csv_dir, name) for ident, _, csv_dir in golden_exports() for name in MPI
         if golden_csv(csv_dir, name) is not None]
WITH_MPI = sorted({ident for ident, _, _ in CASES})
WITHOUT_MPI = [ident for ident, _, csv_dir in golden_exports() if golden_csv(csv_dir, "mpi_event_sum") is None]


def rows_digest(path: Path) -> str:
    """What the GPU machine logged for the file NVIDIA's scripts read (check.log): every row of every table."""
    con = sqlite3.connect(path)
    try:
        h = hashlib.sha256()
        for (table,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").fetchall():
            for row in con.execute(f'SELECT * FROM "{table}" ORDER BY rowid'):
                h.update(repr((table, row)).encode())
        return h.hexdigest()
    finally:
        con.close()


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    """(path, opened export) of the synthetic OpenMP/OpenACC export, rebuilt by its script."""
    spec = importlib.util.spec_from_file_location("make_synthetic_openmp_openacc",
                                                  REPO / "scripts" / "make_synthetic_openmp_openacc.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    directory = tmp_path_factory.mktemp("openmp-openacc")
    path = module.openmp_openacc().write(directory / "openmp-openacc.sqlite")
    with nsysql.open(path, cache_dir=directory / "cache") as ex:
        yield path, ex


def test_there_are_golden_cases():
    assert {name for *_, name in CASES} == set(MPI)
    assert WITHOUT_MPI


@pytest.mark.parametrize("ident,csv_dir,name", CASES, ids=[f"{c[0]}-{c[2]}" for c in CASES])
def test_mpi_report_matches_nvidia_csv(opened, ident, csv_dir, name):
    assert_same_as_nvidia(opened[ident], csv_dir, name)


def test_synthetic_export_is_the_one_nvidia_read(synthetic):
    """The script writes the rows NVIDIA's scripts were run on: same digest as the GPU machine logged, and the
    layout check there found nsys 2025.3's own columns (`nsys export --lazy=false`) in all 21 tables."""
    log = (SYNTHETIC / "check.log").read_text()
    assert "DDL differences: 0" in log and "only nsys: [] only mine: []" in log
    assert f"ROWS DIGEST {rows_digest(synthetic[0])}" in log


@pytest.mark.parametrize("name", ["openmp_sum", "openacc_sum"])
def test_openmp_openacc_match_nvidia_csv(synthetic, name):
    assert_same_as_nvidia(synthetic[1], SYNTHETIC, name)


# -- the normalized tables against the raw rows -----------------------------------------------------------------
def raw_rows(path: Path, sql: str) -> list[tuple]:
    con = sqlite3.connect(path)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_mpi_event_is_every_raw_row_with_its_rank(opened, export_files):
    ident = WITH_MPI[0]
    path = export_files[ident]
    names = dict(raw_rows(path, "SELECT id, value FROM StringIds"))
    ranks = dict(raw_rows(path, "SELECT globalTid, rank FROM MPI_RANKS"))
    expected = []
    for source, table, extra in (("p2p", "MPI_P2P_EVENTS", "tag, remoteRank, NULL, size, NULL, NULL"),
                                 ("start-wait", "MPI_START_WAIT_EVENTS", "NULL, NULL, NULL, NULL, NULL, NULL"),
                                 ("other", "MPI_OTHER_EVENTS", "NULL, NULL, NULL, NULL, NULL, NULL"),
                                 ("collectives", "MPI_COLLECTIVES_EVENTS", "NULL, NULL, rootRank, NULL, size, recvSize")):
        for rowid, start, end, gtid, text_id, *rest in raw_rows(
                path, f"SELECT rowid, start, \"end\", globalTid, textId, {extra} FROM {table}"):
            expected.append((source, rowid, start, end, (gtid >> 24) & 0xFFFFFF, gtid & 0xFFFFFF, ranks.get(gtid),
                             names.get(text_id), *rest))
    mine = opened[ident].sql("SELECT source, source_row, start_ns, end_ns, pid, tid, rank, name, tag, peer_rank, "
                             "root_rank, bytes, send_bytes, recv_bytes FROM mpi_event").rows()
    assert sorted(mine, key=repr) == sorted(expected, key=repr)
    assert {r[6] for r in mine} == {0, 1}  # both ranks, every event on a thread MPI_RANKS lists


def test_openmp_and_openacc_events_are_every_raw_row(synthetic):
    path, ex = synthetic
    names = dict(raw_rows(path, "SELECT id, value FROM StringIds"))
    tables = [t for (t,) in raw_rows(path, "SELECT name FROM sqlite_master WHERE name LIKE 'OPENMP_EVENT_KIND_%'")]
    expected = Counter((t.removeprefix("OPENMP_EVENT_KIND_"), names[n], e - s)
                       for t in tables for s, e, n in raw_rows(path, f'SELECT start, "end", nameId FROM {t}'))
    mine = Counter(ex.sql("SELECT kind, name, end_ns - start_ns FROM openmp_event").rows())
    assert mine == expected and len(tables) == 10
    expected = Counter()
    for t in ("DATA", "LAUNCH", "OTHER"):
        for s, e, n, f, line in raw_rows(path, f'SELECT start, "end", nameId, srcFile, lineNo '
                                               f'FROM CUPTI_ACTIVITY_KIND_OPENACC_{t}'):
            expected[(t, names[n], names.get(f), line, e - s)] += 1
    mine = Counter(ex.sql("SELECT kind, name, source_file, line, end_ns - start_ns FROM openacc_event").rows())
    assert mine == expected and any(f is None for _, _, f, _, _ in mine)  # device init has no source file


# -- exports without the data: one line naming the flag ----------------------------------------------------------
@pytest.mark.parametrize("name", MPI)
def test_without_mpi_tracing_one_line(opened, name):
    with pytest.raises(MissingDataError) as err:
        opened[WITHOUT_MPI[0]].report(name)
    assert "\n" not in str(err.value) and "MPI_*_EVENTS" in str(err.value) and "--trace=mpi" in str(err.value)


@pytest.mark.parametrize("name,flag", [("openmp_sum", "--trace=openmp"), ("openacc_sum", "--trace=openacc")])
def test_without_openmp_or_openacc_tracing_one_line(opened, name, flag):
    with pytest.raises(MissingDataError) as err:
        opened[WITH_MPI[0]].report(name)
    assert "\n" not in str(err.value) and flag in str(err.value)


def test_synthetic_export_has_no_mpi(synthetic):
    with pytest.raises(MissingDataError, match="--trace=mpi"):
        synthetic[1].report("mpi_event_trace")


def test_reports_lists_them_with_a_description():
    res = CliRunner().invoke(app, ["reports"])
    assert res.exit_code == 0
    lines = {line.split()[0]: line for line in res.output.splitlines() if line.strip()}
    for name in (*MPI, "openmp_sum", "openacc_sum"):
        version, *description = lines[name].split()[1:]
        assert version == "v1" and len(description) >= 3, lines[name]
