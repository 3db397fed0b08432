"""NVIDIA's report arguments (`nsys stats -r cuda_gpu_kern_sum:base`, `:mangled`, `:nvtx-name`), cell by cell
against NVIDIA's own CSV of each golden export, plus the `NAME:arg` syntax of the CLI and of Export.report."""
from __future__ import annotations

import csv
import io
import lzma

import pytest
from typer.testing import CliRunner

from nsysql.cli.app import app
from nsysql.errors import NsysqlError
from nsysql.present.render import to_csv
from nsysql.sql import catalog

from conftest import golden_exports

runner = CliRunner()

# (report, argument): NVIDIA's CSV is nsys-stats_<report>_<argument>.csv[.xz]
ARGS = [("cuda_gpu_kern_sum", "base"), ("cuda_gpu_kern_sum", "mangled"), ("cuda_gpu_kern_sum", "nvtx-name"),
        ("cuda_kern_exec_sum", "base"), ("cuda_kern_exec_sum", "mangled")]


def golden_csv(csv_dir, report: str, arg: str):
    """NVIDIA's CSV text for `report:arg`, or None when the fixture has none."""
    plain = csv_dir / f"nsys-stats_{report}_{arg}.csv"
    if plain.exists():
        return plain.read_text(encoding="utf-8")
    packed = plain.with_name(plain.name + ".xz")
    if packed.exists():
        with lzma.open(packed, "rt", encoding="utf-8", newline="") as f:
            return f.read()
    return None


CASES = [(ident, csv_dir, report, arg) for ident, _, csv_dir in golden_exports() for report, arg in ARGS
         if golden_csv(csv_dir, report, arg) is not None]


def test_every_argument_has_goldens():
    assert CASES, "no golden export found"
    for report, arg in ARGS:
        assert any(c[2:] == (report, arg) for c in CASES), f"no NVIDIA CSV for {report}:{arg}"


@pytest.mark.parametrize("ident,csv_dir,report,arg", CASES, ids=[f"{c[0]}-{c[2]}:{c[3]}" for c in CASES])
def test_argument_matches_nvidia_csv(opened, ident, csv_dir, report, arg):
    decimals = catalog.decimals(f"reports.{report}")
    mine = list(csv.reader(io.StringIO(to_csv(opened[ident].report(f"{report}:{arg}"), decimals))))
    theirs = list(csv.reader(io.StringIO(golden_csv(csv_dir, report, arg))))
    assert mine[0] == theirs[0], "header"
    assert len(mine) == len(theirs), "row count"
    for i, (a, b) in enumerate(zip(mine, theirs)):
        assert a == b, f"row {i} differs"


def test_spec_and_params_are_the_same_report(opened):
    ident = CASES[0][0]
    ex = opened[ident]
    assert ex.report("cuda_gpu_kern_sum:base").equals(ex.report("cuda_gpu_kern_sum", name_form="base"))
    assert ex.report("cuda_gpu_kern_sum:nvtx-name").equals(ex.report("cuda_gpu_kern_sum", nvtx_name=True))
    assert ex.report("cuda_gpu_kern_sum").equals(ex.report("cuda_gpu_kern_sum", name_form="demangled",
                                                           nvtx_name=False))
    # arguments combine in any order, as in nsys stats
    both = ex.report("cuda_gpu_kern_sum:nvtx-name:base")
    assert both.equals(ex.report("cuda_gpu_kern_sum:base:nvtx-name"))
    assert both.equals(ex.report("cuda_gpu_kern_sum", name_form="base", nvtx_name=True))


def test_argument_errors(opened):
    ex = opened[CASES[0][0]]
    with pytest.raises(NsysqlError, match=r"no argument 'bogus'; valid arguments: :nvtx-name, :base, :mangled"):
        ex.report("cuda_gpu_kern_sum:bogus")
    with pytest.raises(NsysqlError, match="exclude each other"):
        ex.report("cuda_gpu_kern_sum:base:mangled")
    with pytest.raises(NsysqlError, match="valid arguments: none"):
        ex.report("cuda_api_sum:base")
    with pytest.raises(NsysqlError, match="name_form must be one of 'demangled', 'base', 'mangled', not 'short'"):
        ex.report("cuda_gpu_kern_sum", name_form="short")
    with pytest.raises(NsysqlError, match="has no parameter 'nvtx'"):
        ex.report("cuda_kern_exec_sum", nvtx=True)


def _cli(*args):
    return runner.invoke(app, [str(a) for a in args])


@pytest.mark.parametrize("ident,csv_dir,report,arg", CASES, ids=[f"{c[0]}-{c[2]}:{c[3]}" for c in CASES])
def test_cli_csv_is_nvidias_byte_for_byte(export_files, cache_dir, tmp_path, ident, csv_dir, report, arg):
    out = tmp_path / "r.csv"
    res = _cli("report", f"{report}:{arg}", export_files[ident], "--format", "csv", "-o", out,
               "--cache-dir", cache_dir)
    assert res.exit_code == 0, res.output
    assert out.read_text(encoding="utf-8") == golden_csv(csv_dir, report, arg)


def test_cli_unknown_argument_is_one_line(export_files, cache_dir):
    path = export_files[CASES[0][0]]
    res = _cli("report", "cuda_kern_exec_sum:demangle", path, "--cache-dir", cache_dir)
    assert res.exit_code == 1
    lines = res.output.strip().splitlines()
    assert len(lines) == 1, res.output
    assert "cuda_kern_exec_sum has no argument 'demangle'" in lines[0]
    assert ":base" in lines[0] and ":mangled" in lines[0] and ":nvtx-name" in lines[0]


def test_reports_lists_the_arguments():
    # at 100 columns (the width with no terminal and no $COLUMNS) every usage fits; pytest-xdist's workers run
    # with COLUMNS=80, where `reports` shortens the longest lines in the middle
    res = runner.invoke(app, ["reports"], env={"COLUMNS": "100"})
    assert res.exit_code == 0
    lines = {line.split()[0]: line for line in res.output.strip().splitlines()}
    for report in ("cuda_gpu_kern_sum", "cuda_kern_exec_sum"):
        assert ":base" in lines[report] and ":mangled" in lines[report] and ":nvtx-name" in lines[report]
    assert ":" not in lines["cuda_api_sum"].split(None, 1)[1]
