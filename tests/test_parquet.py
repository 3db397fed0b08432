"""`nsysql parquet`: the normalized tables as a Hive-partitioned Parquet dataset that other engines read directly."""
from __future__ import annotations

import hashlib
from pathlib import Path

import duckdb
import polars as pl
import pytest
from spark_session import spark_or_skip
from typer.testing import CliRunner

from nsysql.answers.dataset import export_name
from nsysql.cli.app import app
from nsysql.errors import MissingDataError
from nsysql.sql import catalog

from conftest import golden_exports
from plainwalk import Plain

# reports on Spark (a JVM in CI): dealt out first under xdist (conftest.py)
pytestmark = pytest.mark.heavy

runner = CliRunner()
REPORTS = catalog.group("reports")


@pytest.fixture(scope="module")
def two(export_files):
    """Two golden exports: (ident, path) each."""
    idents = [i for i, _, _ in golden_exports()][:2]
    assert len(idents) == 2, "needs two golden exports"
    return [(i, export_files[i]) for i in idents]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory, two, cache_dir):
    """Both exports in one dataset, under the names first and second."""
    d = tmp_path_factory.mktemp("pq") / "ds"
    for name, (_, path) in zip(("first", "second"), two):
        res = runner.invoke(app, ["parquet", str(path), "-o", str(d), "--name", name, "--cache-dir", str(cache_dir)])
        assert res.exit_code == 0, res.output
    return d


def tables(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))


def duckdb_over(directory: Path, export: str) -> duckdb.DuckDBPyConnection:
    """The recipe in README.md (nsysql parquet): one view per table, one export selected."""
    con = duckdb.connect()
    for t in tables(directory):
        glob = str(directory / t / "*" / "*.parquet").replace("'", "''")
        con.execute(f'CREATE VIEW "{t}" AS SELECT * EXCLUDE (export) '
                    f"FROM read_parquet('{glob}', hive_partitioning = true) WHERE export = '{export}'")
    return con


def polars_over(directory: Path, export: str) -> pl.SQLContext:
    ctx = pl.SQLContext()
    for t in tables(directory):
        lf = pl.scan_parquet(directory / t / "**" / "*.parquet", hive_partitioning=True)
        ctx.register(t, lf.filter(pl.col("export") == export).drop("export"))
    return ctx


def _rows_match(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        for a, b in zip(g, w, strict=True):
            if isinstance(b, float) and a is not None:
                assert float(a) == pytest.approx(b, rel=1e-9, abs=1e-9)
            else:
                assert a == b


def test_hive_layout_one_partition_per_export(dataset, opened, two):
    relations = {r[0] for r in opened[two[0][0]].con.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_catalog = current_database()").fetchall()}
    # the tables behind the views (kernel_int under kernel, ...) only duplicate rows the dataset already has, and
    # _gpu_op_rules is gpu_op_attribution's first half
    storage = {"kernel_int", "runtime_int", "gpu_op_int", "osrt_int", "name", "nvtx_node", "nvtx_name",
               "_gpu_op_rules"}
    assert storage <= relations and {"kernel", "runtime", "gpu_op", "nvtx_range"} <= relations
    assert set(tables(dataset)) == relations - storage
    for t in tables(dataset):
        assert sorted(p.name for p in (dataset / t).iterdir()) == ["export=first", "export=second"]
        for part in (dataset / t).iterdir():
            assert [p.name for p in part.iterdir()] == ["part-0.parquet"]
    assert [p.name for p in dataset.iterdir() if p.name.startswith(".")] == [], "no staging left behind"


def test_all_exports_of_a_table_share_one_schema(dataset):
    """So that every engine reads DIR/<table> as one table over all exports."""
    for t in tables(dataset):
        schemas = {part.name: pl.read_parquet_schema(part / "part-0.parquet") for part in (dataset / t).iterdir()}
        assert schemas["export=first"] == schemas["export=second"], t
        whole = pl.scan_parquet(dataset / t / "**" / "*.parquet", hive_partitioning=True).collect()
        assert whole.columns[-1] == "export" and whole.columns[:-1] == list(schemas["export=first"])


def test_kernels_match_the_raw_export(dataset, two):
    """Independent check: the kernel rows of each partition against a plain sqlite3 reading of each export."""
    for name, (_, path) in zip(("first", "second"), two):
        plain = Plain(path)
        durations = sorted(o[2] - o[1] for o in plain.ops if o[0] == "kernel")
        got = duckdb.sql(f"SELECT end_ns - start_ns FROM read_parquet('{dataset}/kernel/*/*.parquet', "
                         f"hive_partitioning = true) WHERE export = '{name}' ORDER BY 1").fetchall()
        assert [r[0] for r in got] == durations


@pytest.mark.parametrize("q", REPORTS, ids=[q.name for q in REPORTS])
def test_reports_run_unchanged_on_duckdb_over_the_dataset(dataset, opened, two, q):
    for name, (ident, _) in zip(("first", "second"), two):
        with duckdb_over(dataset, name) as con:
            # the kernel reports' arguments are $params (name_form, nvtx_name): bound at their header defaults
            rel = con.execute(q.sql, q.bound_params(q.defaults()))
            assert [d[0] for d in rel.description] == [c.name for c in q.columns]
            try:
                want = opened[ident].report(q.name).rows()
            except MissingDataError:  # the export lacks its raw table (unified memory, syscalls): nothing to compare
                continue
            _rows_match(rel.fetchall(), want)


def test_polars_sql_runs_nvtx_gpu_proj_sum_unchanged(dataset, opened, two):
    """A second engine: Polars' SQLContext over scan_parquet(hive_partitioning=True).

    Polars SQL runs all nine report files, but reads a literal like 100.0 as a decimal with 7
    places, so the percentage columns of the other reports come back rounded; nvtx_gpu_proj_sum
    has none and must match exactly."""
    q = catalog.get("reports.nvtx_gpu_proj_sum")
    ident = two[0][0]
    got = polars_over(dataset, "first").execute(q.sql, eager=True)
    assert got.columns == [c.name for c in q.columns]
    want = opened[ident].report("nvtx_gpu_proj_sum")
    assert got.height == want.height > 0
    _rows_match(got.rows(), want.rows())


# report files written in DuckDB's dialect beyond what Spark SQL parses (docs/cluster-cookbook.md lists them)
SPARK_CANNOT = {
    "cuda_gpu_trace": "`//` integer division", "um_sum": "`//` integer division",
    "nccl_gpu_overlap_trace": "AS MATERIALIZED", "nvtx_pushpop_trace": "AS MATERIALIZED",
    "nvtx_gpu_proj_trace": "ORDER BY inside an aggregate", "um_total_sum": "format()",
}


def test_spark_sql_runs_the_reports_unchanged(dataset, opened, two):
    """Every report file on Spark SQL in local mode (PySpark and Java: .ci/run installs them), its $params bound
    as Spark's named parameters (:name) at their header defaults."""
    import re
    spark = spark_or_skip()
    for t in tables(dataset):
        spark.read.parquet(str(dataset / t)).where("export = 'first'").drop("export").createOrReplaceTempView(t)
    ran = 0
    for q in REPORTS:
        if q.name in SPARK_CANNOT:
            continue
        try:
            want = opened[two[0][0]].report(q.name).rows()
        except MissingDataError:  # the export lacks its raw table (unified memory, syscalls): nothing to compare
            continue
        sql = re.sub(r"\$([a-z_]+)", r":\1", q.sql.rstrip().rstrip(";"))  # Spark wants no ';', and :name
        got = spark.sql(sql, args=q.bound_params(q.defaults())).collect()
        _rows_match([tuple(r) for r in got], want)
        ran += 1
    assert ran >= 10 and len(SPARK_CANNOT) <= 6


def _digest(directory: Path) -> dict[str, str]:
    return {str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.rglob("*.parquet"))}


def test_same_export_refused_without_force(tmp_path, two, cache_dir):
    d = tmp_path / "ds"
    path = str(two[0][1])
    assert runner.invoke(app, ["parquet", path, "-o", str(d), "--cache-dir", str(cache_dir)]).exit_code == 0
    name = export_name(two[0][1])
    assert (d / "kernel" / f"export={name}" / "part-0.parquet").is_file()
    before = _digest(d)
    res = runner.invoke(app, ["parquet", path, "-o", str(d), "--cache-dir", str(cache_dir)])
    assert res.exit_code == 1 and res.output.startswith("Error: ") and "--force" in res.output
    assert len(res.output.strip().splitlines()) == 1
    assert _digest(d) == before
    (d / "kernel" / f"export={name}" / "part-0.parquet").write_bytes(b"stale")
    res = runner.invoke(app, ["parquet", path, "-o", str(d), "--force", "--cache-dir", str(cache_dir)])
    assert res.exit_code == 0, res.output
    assert _digest(d) == before


def test_second_export_adds_a_partition(tmp_path, two, cache_dir):
    d = tmp_path / "ds"
    assert runner.invoke(app, ["parquet", str(two[0][1]), "-o", str(d), "--name", "a",
                               "--cache-dir", str(cache_dir)]).exit_code == 0
    before = _digest(d)
    assert runner.invoke(app, ["parquet", str(two[1][1]), "-o", str(d), "--name", "b",
                               "--cache-dir", str(cache_dir)]).exit_code == 0
    after = _digest(d)
    assert {k: v for k, v in after.items() if "export=a" in k} == before
    assert len(after) == 2 * len(before)


@pytest.mark.parametrize("file,name", [("run.sqlite", "run"), ("rank 3.sqlite.xz", "rank_3"),
                                       ("gpt.sqlite", "gpt"), ("a=b.sqlite", "a_b")])
def test_export_names_come_from_the_file_name(file, name):
    assert export_name(Path("/x") / file) == name


def test_bad_name_is_one_line(tmp_path, two, cache_dir):
    res = runner.invoke(app, ["parquet", str(two[0][1]), "-o", str(tmp_path), "--name", "../up",
                              "--cache-dir", str(cache_dir)])
    assert res.exit_code == 1 and res.output.startswith("Error: ") and len(res.output.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []
