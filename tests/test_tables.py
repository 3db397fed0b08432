"""Every table-printing command's default output at 80 columns: no line wider than 80, one line per row (no cell
folds), numbers whole, and the times the tables show count from the same origin as `nsysql plot`."""
from __future__ import annotations

import csv
import io
import re

import pytest
from typer.testing import CliRunner

from nsysql.cli.app import app
from nsysql.present.render import TABLE_ROWS
from nsysql.sql import catalog

runner = CliRunner()
MAIN = "gpt-tiny-train-w18s3"
A, B = "gpt-tiny-train-fp32", "gpt-tiny-train-bf16"
REPORTS = ["cuda_api_sum", "cuda_gpu_kern_sum", "cuda_gpu_mem_size_sum", "cuda_gpu_mem_time_sum", "cuda_kern_exec_sum",
           "nvtx_gpu_proj_sum", "nvtx_kern_sum", "nvtx_sum", "osrt_sum"]
# (arguments before the export, after it, rows capped at TABLE_ROWS in table output)
COMMANDS = [
    (["steps"], [], False),
    (["overhead"], [], False), (["overhead"], ["--by", "kernel"], False), (["overhead"], ["--by", "thread"], False),
    (["memcpy"], [], False), (["memcpy"], ["--by", "range"], False), (["memcpy"], ["--by", "stream"], False),
    (["gaps"], [], True), (["gaps"], ["--threads"], True), (["utilization"], [], True),
    (["kernels"], [], True), (["kernels"], ["--style", "pyprof"], True),
    (["layers"], [], False), (["layers"], ["--depth", "2", "--merge-repeats"], False),
    (["efficiency"], [], True), (["efficiency"], ["--by", "layer"], True),
    *[(["report", name], [], True) for name in REPORTS],
    (["sql"], ["SELECT * FROM kernels ORDER BY start_ns LIMIT 50"], True),
]
FOOTER = re.compile(r"[\d,]+ more rows; |.*: ms since the capture's first event$|\d+ columns? hidden to fit \d+ columns|"
                    r"coverage: ")
NUMBER = re.compile(r"^[<>]?-?\d+(,\d+)*(\.\d+)?$")
GROUPED = re.compile(r"^[<>]?-?\d{1,3}(,\d{3})*(\.\d+)?$")


def run(args, cache_dir, columns="80"):
    res = runner.invoke(app, [str(a) for a in args] + ["--cache-dir", str(cache_dir)], env={"COLUMNS": columns})
    assert res.exit_code == 0, res.output
    return res.stdout


def rows_of(text: str) -> tuple[list[str], list[str]]:
    """(row lines, footer lines) of a table: the lines after the rule under the header."""
    lines = text.splitlines()
    rule = next(i for i, line in enumerate(lines) if line.startswith("─"))
    body = lines[rule + 1:]
    n = next((i for i, line in enumerate(body) if FOOTER.match(line)), len(body))
    return body[:n], body[n:]


def csv_rows(args, cache_dir) -> list[dict]:
    return list(csv.DictReader(io.StringIO(run([*args, "-f", "csv"], cache_dir))))


def check_table(text: str, expected_rows: int, width: int = 80):
    lines = text.splitlines()
    too_wide = [line for line in lines if len(line) > width]
    assert not too_wide, too_wide[:3]
    rows, footer = rows_of(text)
    assert len(rows) == expected_rows, (len(rows), expected_rows, text[:2000])
    assert all(FOOTER.match(line) or line.startswith("  ") for line in footer), footer  # (wrapped coverage)
    for row in rows:  # a number is whole: grouped by thousands (or a plain id), never cut into pieces
        for token in row.split():
            if NUMBER.match(token) and ("," in token or "." in token):
                assert GROUPED.match(token), (token, row)


@pytest.mark.parametrize("before,after,capped", COMMANDS, ids=lambda v: " ".join(v) if isinstance(v, list) else "")
def test_default_table_at_80_columns(export_files, cache_dir, before, after, capped):
    path = export_files[MAIN]
    rows = csv_rows([*before, path, *after], cache_dir)
    text = run([*before, path, *after], cache_dir)
    check_table(text, min(len(rows), TABLE_ROWS) if capped else len(rows))
    if capped and len(rows) > TABLE_ROWS:
        assert f"{len(rows) - TABLE_ROWS:,} more rows; " in text


@pytest.mark.parametrize("name", sorted(q.name for q in catalog.group("reports")))
def test_every_report_at_80_columns(export_files, cache_dir, name):
    """Each report on the first fixture where it has rows (traces of 7,725 kernels among them): 80 columns, one
    line per row, the first TABLE_ROWS rows, numbers and addresses whole."""
    for fixture in (MAIN, "mpi-2rank", "um-faults-syscall"):
        if fixture not in export_files:
            continue
        res = runner.invoke(app, ["report", name, str(export_files[fixture]), "-f", "csv", "--cache-dir", str(cache_dir)])
        rows = list(csv.DictReader(io.StringIO(res.stdout))) if res.exit_code == 0 else []  # 1: not traced there
        if rows:
            text = run(["report", name, export_files[fixture]], cache_dir)
            check_table(text, min(len(rows), TABLE_ROWS))
            assert not re.search(r"0x[0-9A-F]*…", text), text  # an address is never shortened
            return
    pytest.skip(f"no fixture here has rows for {name}")


@pytest.mark.parametrize("rule", ["cuda_api_sync", "cuda_memcpy_async", "cuda_memcpy_sync", "cuda_memset_sync",
                                  "gpu_gaps", "gpu_time_util"])
def test_every_rule_at_80_columns(export_files, cache_dir, rule):
    """Each expert rule on the first fixture where it finds something: 80 columns, names whole (`API Name`)."""
    for fixture in (MAIN, "cnn-dataloader-train", "um-faults-syscall"):
        res = runner.invoke(app, ["analyze", rule, str(export_files[fixture]), "-f", "csv", "--cache-dir", str(cache_dir)])
        rows = list(csv.DictReader(io.StringIO(res.stdout))) if res.exit_code == 0 else []  # 1: not traced there
        if rows:
            text = run(["analyze", rule, export_files[fixture]], cache_dir)
            check_table(text, len(rows))
            for api in {r["API Name"] for r in rows if r.get("API Name")}:
                assert api in text, api
            return
    pytest.skip(f"no fixture here has rows for {rule}")


@pytest.mark.parametrize("by", ["range", "kernel", "layer"])
def test_diff_table_at_80_columns(export_files, cache_dir, by):
    args = ["diff", export_files[A], export_files[B], "--by", by]
    rows = csv_rows(args, cache_dir)
    check_table(run(args, cache_dir), min(len(rows), TABLE_ROWS))


def test_several_exports_at_80_columns(export_files, cache_dir):
    for cmd in (["steps"], ["report", "cuda_gpu_kern_sum"], ["overhead", "--by", "thread"]):
        args = [*cmd, export_files[A], export_files[B]]
        rows = csv_rows(args, cache_dir)
        check_table(run(args, cache_dir), min(len(rows), TABLE_ROWS) if cmd[0] == "report" else len(rows))


def test_piped_output_is_100_wide_and_wide_shows_everything(export_files, cache_dir):
    path = export_files[MAIN]
    res = runner.invoke(app, ["overhead", str(path), "--cache-dir", str(cache_dir)], env={"COLUMNS": None})
    assert res.exit_code == 0 and max(map(len, res.stdout.splitlines())) <= 100
    assert "\x1b" not in res.stdout  # no colour into a pipe
    wide = run(["steps", path, "--wide"], cache_dir)
    assert "hidden" not in wide and "range_id" in wide and "off_thread_ops" in wide


def test_steps_values_in_ms_since_the_plot_origin(export_files, cache_dir, opened):
    """The table's start is the csv's start_ns in ms since the capture's first event, the zero of `nsysql plot`."""
    path = export_files[MAIN]
    origin = opened[MAIN].run("analysis._plot_window", start_ms=None, end_ms=None)["origin_ns"][0]
    rows = csv_rows(["steps", path], cache_dir)
    table, _ = rows_of(run(["steps", path], cache_dir, columns="200"))
    for row, line in zip(rows, table):
        cells = line.split()
        assert f"{(int(row['start_ns']) - origin) / 1e6:,.3f}" in cells
        assert f"{int(row['wall_ns']) / 1e6:,.3f}" in cells
    assert re.search(r"start, end(, gpu_end)?: ms since the capture's first event",
                     run(["steps", path], cache_dir, columns="200"))


def test_origin_falls_back_when_analysis_details_is_on_another_clock(tmp_path):
    """Nsight Systems 2022.4 wrote ANALYSIS_DETAILS on another clock than the events: the origin is then the first
    event, so times stay positive and `nsysql plot timeline` finds its ranges."""
    import nsysql

    from conftest import FIXTURES
    with nsysql.open(FIXTURES / "cpu-nvtx-osrt-nsys2022.4" / "export.sqlite.xz", cache_dir=tmp_path) as ex:
        origin = ex.run("analysis._plot_window", start_ms=None, end_ms=None)["origin_ns"][0]
        first = ex.sql("SELECT MIN(start_ns) AS t FROM nvtx_range")["t"][0]
        assert ex.sql("SELECT MIN(start_ns) AS t FROM capture_span")["t"][0] > first  # the other clock
        assert origin == first


def test_kernels_table_is_capped_but_csv_is_not(export_files, cache_dir):
    path = export_files[MAIN]
    text = run(["kernels", path], cache_dir)
    total = len(csv_rows(["kernels", path], cache_dir))
    assert total > TABLE_ROWS
    assert f"{total - TABLE_ROWS:,} more rows; -f csv, or -f parquet -o FILE, for all" in text


def test_layer_paths_kept_whole_at_80_columns(export_files, cache_dir):
    """A ResNet's layer paths (up to 37 characters) read whole at 80 columns: the backward/forward ratio gives way
    first, and the footer says so; the csv rows are the paths the table shows."""
    path = export_files["bwdtruth-resnet18"]
    layers = [r["layer"] for r in csv_rows(["layers", path], cache_dir)]
    assert 30 < max(map(len, layers)) <= 40  # the case: longer than the 30 characters the column used to get
    text = run(["layers", path], cache_dir)
    check_table(text, len(layers))
    rows, footer = rows_of(text)
    assert [row[:len(layer)] for row, layer in zip(rows, layers)] == layers
    assert "1 column hidden to fit 80 columns (bprop_ratio); --wide shows them" in footer
