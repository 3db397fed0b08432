"""The normalize statements run as a graph (nsysql/store/build_graph.py): several at once build the same tables as one
at a time, a failing statement stops the others and names itself, and the order follows the longest chains."""
from __future__ import annotations

import threading
import time

import duckdb
import pytest

from nsysql.sql import catalog
from nsysql.sql.engine import connect
from nsysql.store import build_graph, importer

from conftest import FIXTURES, unxz

EXPORT = FIXTURES / "gpt-tiny-train-w18s3" / "export.sqlite.xz"


def table_digests(path) -> dict[str, tuple]:
    """Row count and an order-independent hash of every row of every table and view (kernel is a view over kernel_int)."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        tables = [r[0] for r in con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_catalog = current_database()").fetchall()]
        return {t: con.execute(f'SELECT COUNT(*), SUM(hash(COLUMNS(*))) FROM "{t}"').fetchone() for t in tables}
    finally:
        con.close()


@pytest.fixture(scope="module")
def plain_export(tmp_path_factory):
    out = tmp_path_factory.mktemp("graph") / "export.sqlite"
    return unxz(EXPORT, out)


def test_several_statements_at_once_build_the_same_tables(plain_export, tmp_path, monkeypatch):
    built = {}
    for workers in (1, 3):
        monkeypatch.setenv(build_graph.WORKERS_ENV, str(workers))
        target = tmp_path / f"w{workers}.duckdb"
        importer.normalize(plain_export, target)
        built[workers] = table_digests(target)
    assert len(built[1]) > 15 and built[1]["kernel"][0] > 0
    assert built[3] == built[1]


def test_two_statements_at_once_on_two_cores(monkeypatch):
    """The raw reads run on one thread each, so a 2-core machine runs two statements; more cores, one per two."""
    monkeypatch.delenv(build_graph.WORKERS_ENV, raising=False)
    for cores, workers in ((1, 1), (2, 2), (4, 2), (8, 4), (64, 4)):
        monkeypatch.setattr(build_graph.os, "cpu_count", lambda cores=cores: cores)
        assert build_graph.build_workers() == workers


def test_longest_chain_first():
    needs = {"raw_a": set(), "raw_b": set(), "mid": {"raw_a"}, "top": {"mid", "raw_b"}, "lone": set()}
    lengths = build_graph.chain_lengths(needs)
    assert lengths == {"raw_a": 3, "mid": 2, "top": 1, "raw_b": 2, "lone": 1}
    queries = [q for q in catalog.group("normalize.nsys3") if q.name != "raw_stubs"]
    real = build_graph.chain_lengths({q.name: {r for r in q.requires if r in {x.name for x in queries}}
                                      for q in queries})
    assert real["nvtx_range"] > real["osrt"] and real["kernel_int"] > real["gpu_busy"]


def fake_query(name: str, sql: str, requires=()) -> catalog.Query:
    return catalog.Query(f"normalize.test.{name}", 1, "", tuple(requires), "none", (), sql, name)


def test_a_failing_statement_interrupts_the_others_and_is_named():
    con = connect()
    slow = fake_query("slow", "CREATE TABLE slow AS SELECT SUM(a.range * b.range) AS x "
                              "FROM range(200000) AS a, range(200000) AS b")  # minutes unless interrupted
    bad = fake_query("bad", "CREATE TABLE bad AS SELECT * FROM no_such_table")
    never = fake_query("never", "CREATE TABLE never AS SELECT 1", requires=("bad",))
    started = time.monotonic()
    with pytest.raises(RuntimeError, match="bad failed"):
        build_graph.build_graph(con, [slow, bad, never], workers=2,
                                failed=lambda q, exc: RuntimeError(f"{q.name} failed: {exc}"))
    assert time.monotonic() - started < 30, "the slow statement was interrupted"
    assert con.execute("SELECT COUNT(*) FROM duckdb_tables() WHERE table_name IN ('slow', 'never')").fetchone()[0] == 0
    assert threading.active_count() < 5  # no worker thread left behind
    con.close()


def test_a_cycle_is_an_error_not_a_hang():
    con = connect()
    a = fake_query("a", "CREATE TABLE a AS SELECT 1", requires=("b",))
    b = fake_query("b", "CREATE TABLE b AS SELECT 1", requires=("a",))
    with pytest.raises(ValueError, match="wait on each other"):
        build_graph.build_graph(con, [a, b], workers=2, failed=lambda q, exc: RuntimeError(str(exc)))
    con.close()


def test_memory_limit_is_one_share_per_statement(monkeypatch):
    from nsysql.sql import engine
    monkeypatch.delenv(engine.MEMORY_ENV, raising=False)
    con = engine.connect(share=2)
    limit = con.execute("SELECT current_setting('memory_limit')").fetchone()[0]
    con.close()
    assert limit == "7.4 GiB", limit  # 2 x 4000 MB, as DuckDB prints it
    monkeypatch.setenv(engine.MEMORY_ENV, "700MB")
    con = engine.connect(share=2)
    assert con.execute("SELECT current_setting('memory_limit')").fetchone()[0] == "667.5 MiB"
    con.close()


def test_threads_setting_reaches_every_connection(monkeypatch, tmp_path):
    from typer.testing import CliRunner

    from nsysql.cli.app import app
    from nsysql.sql import engine
    monkeypatch.setenv(engine.THREADS_ENV, "1")
    con = engine.connect()
    assert con.execute("SELECT current_setting('threads')").fetchone()[0] == 1
    con.close()
    monkeypatch.setenv(engine.THREADS_ENV, "0")
    res = CliRunner().invoke(app, ["summarize", str(EXPORT), "--cache-dir", str(tmp_path)])
    assert res.exit_code == 1 and res.output.count("\n") == 1
    assert "NSYSQL_THREADS='0' is not a positive whole number" in res.output


def test_bad_worker_count_is_one_line(monkeypatch, tmp_path):
    from typer.testing import CliRunner

    from nsysql.cli.app import app
    monkeypatch.setenv(build_graph.WORKERS_ENV, "two")
    res = CliRunner().invoke(app, ["summarize", str(EXPORT), "--cache-dir", str(tmp_path)])
    assert res.exit_code == 1 and res.output.count("\n") == 1
    assert "NSYSQL_BUILD_WORKERS='two' is not a positive whole number" in res.output


def test_in_memory_spill_stays_out_of_the_working_directory(tmp_path, monkeypatch):
    from nsysql.sql import engine
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(engine.MEMORY_ENV, "40MB")  # small enough that this aggregate must spill
    con = engine.connect()
    spill = con.execute("SELECT current_setting('temp_directory')").fetchone()[0]
    rows = con.execute("SELECT COUNT(*) FROM (SELECT md5(range::VARCHAR) AS h FROM range(2000000) GROUP BY h)").fetchone()
    con.close()
    assert rows == (2_000_000,)
    assert spill.startswith(str(__import__("tempfile").gettempdir())) and "nsysql-" in spill
    assert list(tmp_path.iterdir()) == []  # DuckDB's default would have made ./.tmp here


def test_out_of_memory_names_the_setting_and_the_xz_given(monkeypatch, tmp_path):
    from typer.testing import CliRunner

    from nsysql.cli.app import app
    from nsysql.sql import engine
    monkeypatch.setenv(engine.MEMORY_ENV, "30MB")
    res = CliRunner().invoke(app, ["summarize", str(EXPORT), "--cache-dir", str(tmp_path)])
    assert res.exit_code == 1 and res.output.count("\n") == 1, res.output
    assert res.output.startswith(f"Error: {EXPORT}: could not normalize ")  # the .xz, not its unpacked copy
    assert "Out of Memory" in res.output and "NSYSQL_MEMORY_LIMIT=8GB; now 30MB" in res.output
    assert not list(tmp_path.glob("*.duckdb"))  # no half-built cache kept


def test_a_statement_gets_the_macros_it_requires():
    """A normalize statement that calls a macro (gpu_busy calls union_islands) finds it on its own cursor, with
    the macros that macro calls; TEMP macros made on the connection would not reach the cursor."""
    con = connect()
    q = fake_query("islands", "CREATE TABLE islands AS WITH iv(grp, s, e) AS (VALUES (1, 0, 10), (1, 5, 20), "
                              "(1, 30, 31)) SELECT grp, s, e, n FROM union_islands(iv) ORDER BY s",
                   requires=("macros.union_islands",))
    build_graph.build_graph(con, [q], workers=1, failed=lambda q, exc: RuntimeError(f"{q.name} failed: {exc}"))
    assert con.execute("SELECT * FROM islands").fetchall() == [(1, 0, 20, 2), (1, 30, 31, 1)]
