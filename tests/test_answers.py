"""Answers kept beside the cache: a repeated query reads its stored result; any change recomputes."""
from __future__ import annotations

import polars as pl
import pytest

import nsysql
from nsysql.sql import catalog
from nsysql.store import stored as answers

from conftest import FIXTURES

EXPORT = FIXTURES / "gpt-tiny-train-w18s3" / "export.sqlite.xz"


class Counting:
    """Wraps an export's DuckDB connection and records the SQL it runs."""

    def __init__(self, con):
        self.con, self.statements = con, []

    def execute(self, sql, *args, **kwargs):
        self.statements.append(sql)
        return self.con.execute(sql, *args, **kwargs)

    def sql(self, sql, *args, **kwargs):  # queries that return frames go through con.sql (the Arrow stream)
        self.statements.append(sql)
        return self.con.sql(sql, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.con, name)


def reopen(cache_dir):
    ex = nsysql.open(EXPORT, cache_dir=cache_dir)
    ex.con = Counting(ex.con)
    return ex


def test_second_run_reads_the_stored_answer(tmp_path):
    with reopen(tmp_path) as ex:
        first = ex.run("analysis.step_breakdown")
        assert ex.con.statements, "the first run computes"
    with reopen(tmp_path) as ex:
        again = ex.run("analysis.step_breakdown")
        assert ex.con.statements == [], "the second run reads the answer"
    assert again.equals(first) and again.schema == first.schema


def test_parameters_and_sql_are_part_of_the_key(tmp_path):
    q = catalog.get("findings.gpu_idle_in_step")
    with reopen(tmp_path) as ex:
        ex.findings()
        low = ex.run(q.id, min_idle_pct=1.0)
        high = ex.run(q.id, min_idle_pct=99.9)
    assert low.height == 1 and high.height == 0  # each threshold its own answer, not the first one stored
    changed = catalog.Query(q.id, q.version, q.purpose, q.requires, q.params, q.columns, q.sql + "\n-- edited",
                            q.path, q.meta)
    params = {"min_idle_pct": 1.0}
    assert answers.key(changed, params) != answers.key(q, params)
    # an analysis it reads changes its key too
    step_label = catalog.get("analysis._step_label")
    assert "analysis._step_label" in answers._inputs(q) and "analysis.steps" in answers._inputs(step_label)


def test_cached_summarize_runs_no_query(tmp_path):
    """Issue 12's guard: once the answers exist, `summarize` reads them and queries no table."""
    from nsysql.answers import summary
    with reopen(tmp_path) as ex:
        summary.build_summary(ex, full=True)
    with reopen(tmp_path) as ex:
        summary.build_summary(ex, full=True)
        assert ex.con.statements == []


def test_a_command_whose_answers_are_stored_opens_no_duckdb(tmp_path):
    """The cache's DuckDB file is opened on first use: a repeated summarize only reads stored answers (and the
    raw tables the export held, kept beside the cache), so it never connects."""
    from nsysql.answers import summary
    with nsysql.open(EXPORT, cache_dir=tmp_path) as ex:
        summary.build_summary(ex, full=True)
        assert ex.store._con is not None
    with nsysql.open(EXPORT, cache_dir=tmp_path) as ex:
        summary.build_summary(ex, full=True)
        assert ex.store._con is None


def test_raw_tables_kept_beside_the_cache_are_the_exports_tables(tmp_path):
    import sqlite3
    with nsysql.open(EXPORT, cache_dir=tmp_path) as ex:
        with sqlite3.connect(f"file:{ex.source}?mode=ro", uri=True) as raw:  # independent: SQLite's own list
            in_export = {r[0] for r in raw.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert ex.store.raw_tables == in_export
        kept_file = answers.directory(ex.cache_path) / "raw_tables.json"
    assert set(answers.load_facts(ex.cache_path, "raw_tables")) == in_export
    kept_file.write_text("{damaged")  # unreadable: read from the cache again, and kept again
    with nsysql.open(EXPORT, cache_dir=tmp_path) as ex:
        assert ex.store.raw_tables == in_export and ex.store._con is not None
    assert set(answers.load_facts(ex.cache_path, "raw_tables")) == in_export
    with nsysql.open(EXPORT, use_cache=False) as ex:  # no cache: nothing kept anywhere
        assert ex.store.raw_tables == in_export


def test_unwritable_cache_directory_only_costs_the_speed_up(tmp_path, monkeypatch):
    with reopen(tmp_path) as ex:
        expected = ex.run("analysis.top_kernels")
    monkeypatch.setattr(pl.DataFrame, "write_parquet", lambda *a, **k: (_ for _ in ()).throw(OSError("read-only")))
    fresh = tmp_path / "other"
    with reopen(fresh) as ex:
        assert ex.run("analysis.top_kernels").equals(expected)
    assert not any(answers.directory(p).exists() and any(f.suffix == ".parquet" for f in answers.directory(p).iterdir())
                   for p in fresh.glob("*.duckdb"))


@pytest.mark.parametrize("group", ["reports", "analysis", "findings"])
def test_every_answer_round_trips_exactly(tmp_path, group):
    from nsysql.errors import NsysqlError
    from nsysql.sql.catalog import NO_DEFAULT as _NO_DEFAULT
    with nsysql.open(EXPORT, cache_dir=tmp_path) as ex:
        for q in catalog.group(group):
            params = q.defaults()
            if any(v is _NO_DEFAULT for v in params.values()):
                continue
            try:
                df = ex.run(q.id, **params)
            except NsysqlError:
                continue
            back = answers.load(ex.cache_path, q, q.bound_params(params))
            assert back is not None and back.equals(df) and back.schema == df.schema, q.id


def test_sanity_warnings_are_remembered(tmp_path):
    with reopen(tmp_path) as ex:
        first = ex.sanity()
        assert ex.con.statements, "the checks run once"
    with reopen(tmp_path) as ex:
        assert ex.sanity() == first and ex.con.statements == []
