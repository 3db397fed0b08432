"""The unified-memory reports (um_sum, um_total_sum, um_cpu_page_faults_sum) and syscall_sum: their rows argument, and
one line naming the nsys flag on exports captured without unified-memory or system-call tracing (cell by cell
against NVIDIA's CSVs of fixtures/um-faults and um-faults-syscall: tests/test_golden_reports.py)."""
from __future__ import annotations

import pytest

from nsysql.errors import MissingDataError, NsysqlError

from conftest import golden_exports
from test_golden_reports import golden_csv

WITH_UM = [ident for ident, _, csv_dir in golden_exports() if golden_csv(csv_dir, "um_sum") is not None]
WITHOUT = [ident for ident, _, csv_dir in golden_exports() if golden_csv(csv_dir, "um_cpu_page_faults_sum") is None]
NO_SYSCALL = [ident for ident, _, csv_dir in golden_exports() if golden_csv(csv_dir, "syscall_sum") is None]


def test_um_sum_rows_argument(opened):
    ident = WITH_UM[0]
    ex = opened[ident]
    every = ex.run("reports.um_sum", rows=-1)
    assert ex.run("reports.um_sum", rows=3).rows() == every.head(3).rows()
    assert ex.report("um_sum:rows=3").rows() == every.head(3).rows()  # NVIDIA's report argument
    with pytest.raises(NsysqlError, match="whole number"):
        ex.report("um_sum:rows=many")
    assert every.height == every["Virtual Address"].n_unique() > 10
    # no migration, no throughput: those addresses come last
    tput = every["Migration Throughput (MB/s)"].to_list()
    assert all(t is None for t in tput[tput.index(None):])


@pytest.mark.parametrize("name,flag", [("um_sum", "--cuda-um-cpu-page-faults=true"),
                                       ("um_total_sum", "--cuda-um-cpu-page-faults=true"),
                                       ("um_cpu_page_faults_sum", "--cuda-um-cpu-page-faults=true")])
def test_without_um_tracing_one_line(opened, name, flag):
    if not WITHOUT:
        pytest.skip("every golden export has unified-memory data")
    with pytest.raises(MissingDataError) as err:
        opened[WITHOUT[0]].report(name)
    assert "\n" not in str(err.value) and flag in str(err.value)


def test_without_syscall_tracing_one_line(opened):
    with pytest.raises(MissingDataError) as err:
        opened[NO_SYSCALL[0]].report("syscall_sum")
    assert "\n" not in str(err.value) and "SYSCALL" in str(err.value) and "--syscall=process-tree" in str(err.value)
