"""`nsysql sql`: ad-hoc read-only SQL over the normalized tables and report/analysis views, with bound -p values."""
from __future__ import annotations

import csv
import io
import json

import polars as pl
import pytest
from typer.testing import CliRunner

from nsysql.cli.app import app
from nsysql.query.adhoc import parse_params

from conftest import golden_exports
from plainwalk import Plain

runner = CliRunner()


@pytest.fixture(scope="module")
def case(export_files, cache_dir):
    ident, _, csv_dir = golden_exports()[0]
    return str(export_files[ident]), ["--cache-dir", str(cache_dir)], csv_dir, export_files[ident]


def sql(case, query, *extra):
    path, cache, _, _ = case
    return runner.invoke(app, ["sql", path, query, *extra, *cache])


def one_line_error(res, needle):
    assert res.exit_code == 1, res.output
    assert res.output.startswith("Error: ") and needle in res.output, res.output
    assert len(res.output.strip().splitlines()) == 1 and "Traceback" not in res.output


def test_bound_parameter_against_raw_rows(case):
    """Independent check: kernels longer than a threshold, counted from the raw export with sqlite3."""
    plain = Plain(case[3])
    durations = sorted(o[2] - o[1] for o in plain.ops if o[0] == "kernel")
    threshold = durations[len(durations) // 2]
    res = sql(case, "SELECT count(*) AS n, sum(end_ns - start_ns) AS ns FROM kernel WHERE end_ns - start_ns > $min_ns",
              "-p", f"min_ns={threshold}", "--format", "json")
    assert res.exit_code == 0, res.output
    longer = [d for d in durations if d > threshold]
    assert json.loads(res.output) == [{"n": len(longer), "ns": sum(longer)}]


def test_report_views_are_there(case):
    """Independent check: NVIDIA's CSV of the same export."""
    res = sql(case, 'SELECT "Range", "Total Proj Time (ns)" FROM nvtx_gpu_proj_sum WHERE "Range Instances" >= $n',
              "-p", "n=1", "--format", "csv")
    assert res.exit_code == 0, res.output
    with (case[2] / "nsys-stats_nvtx_gpu_proj_sum.csv").open(newline="") as f:
        theirs = [(r["Range"], r["Total Proj Time (ns)"]) for r in csv.DictReader(f)]
    mine = [(r["Range"], r["Total Proj Time (ns)"]) for r in csv.DictReader(io.StringIO(res.output))]
    assert mine == theirs


def test_values_are_typed_int_float_text(case):
    res = sql(case, "SELECT typeof($a) AS a, typeof($b) AS b, $c AS c, typeof($d) AS d", "-p", "a=7", "-p", "b=2.5",
              "-p", "c=x=y", "-p", "d=1e3", "--format", "json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.output) == [{"a": "INTEGER", "b": "DOUBLE", "c": "x=y", "d": "DOUBLE"}]
    assert parse_params(["name=O'Brien; DROP TABLE kernel"]) == {"name": "O'Brien; DROP TABLE kernel"}


def test_values_are_bound_not_interpolated(case):
    res = sql(case, "SELECT $v AS v", "-p", "v=1) UNION SELECT 2 --", "--format", "json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.output) == [{"v": "1) UNION SELECT 2 --"}]


@pytest.mark.parametrize("statement", [
    "DELETE FROM kernel",
    "INSERT INTO kernel SELECT * FROM kernel",
    "UPDATE kernel SET start_ns = 0",
    "CREATE TABLE t AS SELECT 1",
    "CREATE TEMP TABLE t AS SELECT 1",
    "DROP TABLE kernel",
    "COPY kernel TO 'k.csv'",
    "EXPLAIN ANALYZE COPY kernel TO 'k.csv'",
    "ATTACH 'other.duckdb' AS other",
    "SET threads = 1",
    "INSTALL httpfs",
    "CHECKPOINT",
])
def test_writing_statements_fail_with_one_line(case, statement, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    one_line_error(sql(case, statement), "read-only")
    assert list(tmp_path.iterdir()) == []


def test_duckdb_errors_are_one_line(case):
    one_line_error(sql(case, "SELECT no_such_column FROM kernel"), "no_such_column")
    one_line_error(sql(case, "SELEC 1"), "syntax error")
    one_line_error(sql(case, "SELECT 1; SELECT 2"), "one SQL statement")


def test_parameter_mistakes(case):
    one_line_error(sql(case, "SELECT $a AS a"), "-p a=VALUE")
    one_line_error(sql(case, "SELECT 1 AS a", "-p", "b=1"), "not used")
    one_line_error(sql(case, "SELECT 1 AS a", "-p", "novalue"), "name=value")


def test_parquet_output(case, tmp_path):
    out = tmp_path / "r.parquet"
    res = sql(case, "SELECT kernel_name, count(*) AS n FROM kernel GROUP BY kernel_name ORDER BY n DESC, kernel_name",
              "--format", "parquet", "-o", str(out))
    assert res.exit_code == 0, res.output
    df = pl.read_parquet(out)
    plain = Plain(case[3])
    assert df["n"].sum() == sum(1 for o in plain.ops if o[0] == "kernel")


def test_only_the_views_a_statement_names_are_made(case):
    """A statement over the normalized tables makes no catalog view; one naming `findings_gpu_idle_in_step`-style
    views gets those and the private inputs they read, and what it reads equals the Export method's answer. An
    analysis other views read is a TEMP table (computed once), not a view each reader computes again."""
    import nsysql
    from nsysql.query import adhoc
    from nsysql.sql import views
    path, cache, _, _ = case
    with nsysql.open(path, cache_dir=cache[1]) as ex:
        made = lambda kind: {r[0] for r in ex.con.execute(  # noqa: E731
            f"SELECT {kind}_name FROM duckdb_{kind}s() WHERE temporary AND NOT internal").fetchall()}
        adhoc.run(ex, "SELECT count(*) FROM kernel")
        assert made("view") == made("table") == set()
        got = adhoc.run(ex, "SELECT * FROM layers")
        assert got.equals(ex.layers())
        every = {v.query.id: v for v in views.catalog_views(set())}
        needed, pending = set(), ["analysis.layers"]  # layers and the analyses it reads, at any depth
        while pending:
            q = pending.pop()
            if q not in needed:
                needed.add(q)
                pending += [r for r in every[q].query.requires if r in every]
        assert made("view") | made("table") == {every[q].view_name for q in needed}
        got = adhoc.run(ex, "SELECT b.* FROM steps AS s JOIN step_breakdown AS b USING (pid, step) "
                            "ORDER BY b.pid, b.step")
        assert {"steps", "steady_steps", "_steady_windows"} <= made("table")  # step_breakdown's inputs
        assert "step_breakdown" in made("view") and "step_breakdown" not in made("table")
        assert got.equals(ex.run("analysis.step_breakdown").sort("pid", "step"))
