"""Several exports for steps, efficiency, sql, parquet, db and plot: `export`/`rank` columns (or one partition,
schema or image per export), each export's share equal to what the command gives for that export alone, and
exports with nothing to show skipped with a note on stderr."""
from __future__ import annotations

import csv
import io
import json
import shutil
import sqlite3
import subprocess

import duckdb
import polars as pl
import pytest
from typer.testing import CliRunner

from nsysql.cli.app import app
from nsysql.errors import MissingDataError
from nsysql.sql import catalog, views

from conftest import make_synthetic
from test_db import _rows_match, stock_duckdb_cli

RANKS = {"train_rank0": "gpt-tiny-train-fp32", "train_rank1": "gpt-tiny-forward"}


@pytest.fixture(scope="module")
def run(tmp_path_factory, export_files, cache_dir):
    """rank0: the fp32 training capture; rank1: the forward-only capture, as symbolic links named as ranks (the
    names give `export` and `rank`); plus `cache`, the session's cache: it is keyed by the resolved path, so it
    already holds both exports and their stored answers, which copies would build and compute again."""
    d = tmp_path_factory.mktemp("ranks")
    for name, ident in RANKS.items():
        (d / f"{name}.sqlite").symlink_to(export_files[ident])
    (d / "cache").symlink_to(cache_dir, target_is_directory=True)
    return d


@pytest.fixture(scope="module")
def no_steps(tmp_path_factory):
    """A synthetic export without steps or op markers, named as a third rank."""
    d = tmp_path_factory.mktemp("nosteps")
    return make_synthetic().no_steps().write(d / "train_rank2.sqlite")


def invoke(run_dir, *args):
    return CliRunner().invoke(app, [str(a) for a in args] + ["--cache-dir", str(run_dir / "cache")])


def ok(res):
    assert res.exit_code == 0, res.output
    return res


def csv_rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def assert_per_export_equals_single(run_dir, multi_csv: str, command):
    """Rows of the several-export CSV, grouped by export, equal the one-export CSV of that file
    (`command(path)`: the arguments that run the command on one export)."""
    head, *rows = csv_rows(multi_csv)
    assert head[:2] == ["export", "rank"]
    assert {r[0] for r in rows} == set(RANKS)
    for name in RANKS:
        single = csv_rows(ok(invoke(run_dir, *command(run_dir / f"{name}.sqlite"), "-f", "csv")).stdout)
        assert head[2:] == single[0]
        mine = [r for r in rows if r[0] == name]
        assert mine and all(r[1] == name[-1] for r in mine)  # rank from the file name
        assert [r[2:] for r in mine] == single[1:]


def one_line_error(res, needle):
    assert res.exit_code == 1, res.output
    assert res.output.startswith("Error: ") and needle in res.output, res.output
    assert len(res.output.strip().splitlines()) == 1


def test_steps_glob_rows_per_export_and_skip(run, no_steps):
    res = ok(invoke(run, "steps", run / "train_rank*.sqlite", "-f", "csv"))  # quoted-glob form
    assert_per_export_equals_single(run, res.stdout, lambda path: ["steps", path])
    res = ok(invoke(run, "steps", run / "train_rank0.sqlite", no_steps, "-f", "csv"))
    assert {r[0] for r in csv_rows(res.stdout)[1:]} == {"train_rank0"}
    assert res.stderr.strip() == "note: no steps in train_rank2; skipped"
    one_line_error(invoke(run, "steps", no_steps, no_steps.parent / "*.sqlite"), "has no steps")  # one file
    twin = no_steps.parent / "train_rank3.sqlite"
    shutil.copy(no_steps, twin)
    one_line_error(invoke(run, "steps", no_steps, twin), "none of the exports has steps")


def test_efficiency_top_is_per_export_and_empty_ones_are_skipped(run, no_steps):
    res = ok(invoke(run, "efficiency", run / "train_rank0.sqlite", run / "train_rank1.sqlite", "--top", "4",
                    "-f", "csv"))
    assert_per_export_equals_single(run, res.stdout, lambda path: ["efficiency", path, "--top", "4"])
    assert len(csv_rows(res.stdout)) == 1 + 2 * 4
    res = ok(invoke(run, "efficiency", run / "train_rank1.sqlite", no_steps, "--by", "layer", "-f", "csv"))
    assert {r[0] for r in csv_rows(res.stdout)[1:]} == {"train_rank1"}
    assert "train_rank2; skipped" in res.stderr


def test_sql_runs_on_each_export(run, export_files):
    query = "SELECT count(*) AS n, sum(end_ns - start_ns) AS ns FROM kernel WHERE end_ns - start_ns > $d"
    res = ok(invoke(run, "sql", run / "train_rank0.sqlite", run / "train_rank1.sqlite", query, "-p", "d=5000",
                    "-f", "json"))
    got = {r["export"]: (r["rank"], r["n"], r["ns"]) for r in json.loads(res.stdout)}
    for name, ident in RANKS.items():  # independent: the raw kernel rows
        with sqlite3.connect(export_files[ident]) as db:
            n, ns = db.execute("SELECT count(*), sum(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL "
                               "WHERE end - start > 5000").fetchone()
        assert got[name] == (int(name[-1]), n, ns)
    first = "SELECT kernel_name, start_ns FROM kernel ORDER BY start_ns LIMIT 3"
    res = ok(invoke(run, "sql", run / "train_rank*.sqlite", first, "-f", "csv"))
    assert_per_export_equals_single(run, res.stdout, lambda path: ["sql", path, first])
    res = ok(invoke(run, "sql", run / "train_rank*.sqlite", "SELECT * FROM kernel WHERE grid_x < 0", "-f", "csv"))
    assert csv_rows(res.stdout)[0][:3] == ["export", "rank", "kernel_id"] and len(csv_rows(res.stdout)) == 1
    assert res.stderr.strip() == "note: no rows in train_rank0, train_rank1; skipped"
    one_line_error(invoke(run, "sql", run / "train_rank*.sqlite", "SELECT * FROM nope"), "train_rank0: ")


def test_parquet_one_partition_per_export(run, export_files, tmp_path):
    ds = tmp_path / "ds"
    res = ok(invoke(run, "parquet", run / "train_rank*.sqlite", "-o", ds))
    assert res.stdout.count("wrote ") == 2
    assert sorted(p.name for p in (ds / "kernel").iterdir()) == ["export=train_rank0", "export=train_rank1"]
    kernels = pl.read_parquet(ds / "kernel" / "**" / "*.parquet", hive_partitioning=True)
    for name, ident in RANKS.items():  # independent: the raw kernel rows
        with sqlite3.connect(export_files[ident]) as db:
            raw = sorted(db.execute("SELECT start, end FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchall())
        mine = kernels.filter(pl.col("export") == name).select("start_ns", "end_ns").sort("start_ns", "end_ns")
        assert mine.rows() == raw
    one_line_error(invoke(run, "parquet", run / "train_rank*.sqlite", "-o", ds, "--force", "--name", "x"),
                   "--name names one export")
    one_line_error(invoke(run, "parquet", run / "train_rank1.sqlite", run / "train_rank0.sqlite", "-o", ds),
                   "already holds export 'train_rank1'")


def test_db_one_schema_per_export(run, opened, tmp_path, export_files):
    out = tmp_path / "all.duckdb"
    res = ok(invoke(run, "db", run / "train_rank0.sqlite", run / "train_rank1.sqlite", "-o", out))
    assert "one schema each (train_rank0, train_rank1)" in res.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["all.duckdb"], "no leftovers beside the database"
    queries = [q for g in views.VIEW_GROUPS for q in catalog.group(g) if not q.name.startswith("_")]  # public
    with duckdb.connect(str(out), read_only=True) as con:
        listed = con.execute("SELECT schema_name, export, rank, path FROM nsysql_exports ORDER BY rank").fetchall()
        assert listed == [(n, n, int(n[-1]), str((run / f"{n}.sqlite").resolve())) for n in RANKS]
        for schema, ident in RANKS.items():
            ex = opened[ident]
            names = dict(con.execute(f"SELECT query_id, view_name FROM {schema}.nsysql_views").fetchall())
            made = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE schema_name = $s",
                                              {"s": schema}).fetchall()}
            assert len(made) > 20
            for q in queries:  # each schema's views read that schema's tables, not another export's
                if names[q.id] in made:
                    try:
                        want = ex.run(q.id, **q.defaults()).rows()
                    except MissingDataError:  # the export lacks its raw table (unified memory, syscalls): nothing to compare
                        continue
                    _rows_match(con.execute(f'SELECT * FROM {schema}."{names[q.id]}"').fetchall(), want)
            con.execute(f"USE {schema}")  # a table macro binds its tables where it is called
            _rows_match(con.execute("SELECT * FROM layers(depth := 1)").fetchall(), ex.layers(depth=1).rows())
            con.execute("USE main")
            for relation, name in (("duckdb_tables()", "table_name"), ("duckdb_views()", "view_name")):
                # kernel is a view over kernel_int: both carry their header's purpose
                comments = con.execute(f"SELECT {name}, comment FROM {relation} WHERE schema_name = $s AND "
                                       f"{name} IN ('kernel', 'kernel_int')", {"s": schema}).fetchall()
                assert comments and all(c.startswith("normalize.") for _, c in comments), comments
    cli, why = stock_duckdb_cli()
    if cli is None:
        pytest.skip(why)
    sql = " UNION ALL ".join(f"""SELECT '{n}' AS s, (SELECT count(*) FROM {n}.kernel) AS n,
                                 (SELECT sum("Total Time (ns)") FROM {n}.cuda_gpu_kern_sum) AS ns""" for n in RANKS)
    got = subprocess.run([cli, "-readonly", "-json", str(out), "-c", sql], capture_output=True, text=True, timeout=120)
    assert got.returncode == 0, got.stderr
    rows = {r["s"]: (r["n"], int(r["ns"])) for r in json.loads(got.stdout)}
    for name, ident in RANKS.items():  # independent: the raw kernel rows
        with sqlite3.connect(export_files[ident]) as db:
            raw = db.execute("SELECT count(*), sum(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()
        assert rows[name] == raw


def test_plot_one_image_per_export(run, tmp_path):
    res = ok(invoke(run, "plot", "kernels", run / "train_rank*.sqlite", "-o", tmp_path / "k.png", "--top", "5"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k_train_rank0.png", "k_train_rank1.png"]
    assert res.stderr.count("wrote ") == 2
    for name in RANKS:
        single = tmp_path / "single" / f"{name}.png"
        single.parent.mkdir(exist_ok=True)
        ok(invoke(run, "plot", "kernels", run / f"{name}.sqlite", "-o", single, "--top", "5"))
        assert (tmp_path / f"k_{name}.png").read_bytes() == single.read_bytes()
