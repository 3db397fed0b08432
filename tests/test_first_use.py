"""Tables built on first use (`built: on first use` in a normalize header): a cache's first open leaves them out,
the first query that reads one adds it, and every answer equals that of a cache built whole at once."""
from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import polars as pl
import pytest

import nsysql
from nsysql.api import Export
from nsysql.query import queries
from nsysql.sql import catalog
from nsysql.store import hygiene, importer

from conftest import FIXTURES

EXPORT = FIXTURES / "gpt-tiny-train-w18s3" / "export.sqlite.xz"
NINE = ["cuda_api_sum", "cuda_gpu_kern_sum", "cuda_gpu_mem_size_sum", "cuda_gpu_mem_time_sum", "cuda_kern_exec_sum",
        "nvtx_gpu_proj_sum", "nvtx_kern_sum", "nvtx_sum", "osrt_sum"]
STATEMENTS = {q.name: q for q in catalog.group("normalize.nsys3")}
ON_FIRST_USE = {name for name, q in STATEMENTS.items() if importer.built_on_first_use(q)}


def relations(cache_path) -> set[str]:
    """The tables and views in a cache file as it is on disk, read by a database of the test's own (a connection
    to the path would share the database that the export's open connection read)."""
    con = duckdb.connect()
    try:
        con.execute(f"ATTACH '{cache_path}' AS c (READ_ONLY)")
        return {r[0] for r in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = 'c' UNION ALL "
            "SELECT view_name FROM duckdb_views() WHERE database_name = 'c' AND NOT internal").fetchall()}
    finally:
        con.close()


def same(a: pl.DataFrame, b: pl.DataFrame) -> bool:
    """Equal frames, floats to 1e-12 relative: DuckDB's parallel STDDEV_SAMP moves the 16th digit between two
    runs of the same query on the same cache."""
    if a.schema != b.schema or a.shape != b.shape:
        return False
    for name, dtype in a.schema.items():
        x, y = a[name], b[name]
        if dtype.is_float():
            if not (x.is_null() == y.is_null()).all():
                return False
            both = pl.DataFrame({"x": x, "y": y})
            close = both.select(((pl.col("x") - pl.col("y")).abs()
                                 <= 1e-12 * pl.max_horizontal(pl.col("x").abs(), pl.col("y").abs()))
                                | (pl.col("x") == pl.col("y"))).to_series()
            if not close.fill_null(True).all():
                return False
        elif not x.equals(y):
            return False
    return True


def test_the_headers_keep_the_first_open_whole():
    assert ON_FIRST_USE >= {"_gpu_op_rules", "gpu_op_attribution", "user_range", "nvtx_context", "gpu_busy"}
    for name, q in STATEMENTS.items():
        if name in ON_FIRST_USE:  # built from the cache alone, the export is not attached then
            assert not [r for r in q.requires if r.startswith("raw.")], name
        else:  # a first open builds what it reads
            assert not set(q.requires) & ON_FIRST_USE, name


def test_a_statement_that_reads_the_export_cannot_be_built_on_first_use(tmp_path):
    with pytest.raises(ValueError, match="kernel_int read the export"):
        importer.extend(tmp_path / "none.duckdb", [STATEMENTS["kernel_int"]], scratch=tmp_path)


FULL = duckdb.IOException('IO Error: Could not write file "x": No space left on device')


class _FullAtCheckpoint:
    """A connection whose CHECKPOINT finds the disk full (DuckDB writes most of a new table then)."""

    def __init__(self, con):
        self._con = con

    def __getattr__(self, name):
        return getattr(self._con, name)

    def execute(self, sql, *args):
        if sql.strip().upper() == "CHECKPOINT":
            raise FULL
        return self._con.execute(sql, *args)


@pytest.mark.parametrize("where", ["building", "checkpoint"])
def test_a_full_disk_while_they_are_built_is_one_line_with_what_to_do(tmp_path, monkeypatch, where):
    nsysql.open(EXPORT, cache_dir=tmp_path).close()
    cache = next(tmp_path.glob("*.duckdb"))
    before = cache.read_bytes()
    if where == "building":
        def full(con, queries, *, workers, failed):
            raise failed(queries[0], FULL)
        monkeypatch.setattr(importer, "build_graph", full)
    else:
        real = importer.connect
        monkeypatch.setattr(importer, "connect", lambda *a, **k: _FullAtCheckpoint(real(*a, **k)))
    with nsysql.open(EXPORT, cache_dir=tmp_path) as ex:
        with pytest.raises(nsysql.NsysqlError) as raised:
            ex.layers()
    line = str(raised.value)
    assert "\n" not in line and "No space left on device" in line and "free some space" in line
    assert cache.read_bytes() == before, "the cache as it was"
    assert not list(tmp_path.glob(".building-*")), "no scratch file left"


def test_the_command_says_it_in_one_line_and_exits_1(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from nsysql.cli.app import app
    nsysql.open(EXPORT, cache_dir=tmp_path).close()

    def full(con, queries, *, workers, failed):
        raise failed(queries[0], FULL)

    monkeypatch.setattr(importer, "build_graph", full)
    monkeypatch.setenv("NSYSQL_AHEAD", "off")
    res = CliRunner().invoke(app, ["layers", str(EXPORT), "--cache-dir", str(tmp_path)])
    assert res.exit_code == 1 and "Traceback" not in res.output
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "No space left on device" in lines[0], res.output
    assert "free some space, or choose another --cache-dir or NSYSQL_CACHE_DIR" in lines[0]


def test_the_nine_reports_read_none_of_them_and_attribution_does():
    for name in NINE:
        assert not queries.tables_read(catalog.get(f"reports.{name}")) & ON_FIRST_USE, name
    assert "gpu_op_attribution" in queries.tables_read(catalog.get("analysis.layers"))
    assert "gpu_busy" in queries.tables_read(catalog.get("analysis.gaps"))  # through no header: gaps names no table of it


def test_reports_leave_them_out_and_every_answer_equals_a_whole_build(tmp_path):
    with nsysql.open(EXPORT, cache_dir=tmp_path / "lazy") as lazy, \
            Export(EXPORT, cache_dir=tmp_path / "whole", build_all=True) as whole:
        assert not relations(lazy.cache_path) & ON_FIRST_USE
        assert relations(whole.cache_path) >= ON_FIRST_USE
        for name in NINE:
            assert same(lazy.report(name), whole.report(name)), name
        assert not relations(lazy.cache_path) & ON_FIRST_USE, "no report builds them"
        mode = stat.S_IMODE(os.stat(lazy.cache_path).st_mode)
        assert same(lazy.layers(), whole.layers())
        assert relations(lazy.cache_path) >= {"gpu_op_attribution", "_gpu_op_rules", "user_range"}
        assert stat.S_IMODE(os.stat(lazy.cache_path).st_mode) == mode, "the rebuilt file keeps the cache's mode"
        assert same(lazy.steps(), whole.steps())
        assert same(lazy.gaps(), whole.gaps())
        assert "gpu_op_label" not in relations(lazy.cache_path), "nothing read it yet"
        lazy.con  # noqa: B018 - builds every table
        assert relations(lazy.cache_path) == relations(whole.cache_path)
        assert not list(lazy.cache_path.parent.glob(".building-*")), "no scratch file left"


def test_a_reader_of_the_old_file_keeps_it_and_finds_them_built(tmp_path):
    with nsysql.open(EXPORT, cache_dir=tmp_path) as first, nsysql.open(EXPORT, cache_dir=tmp_path) as second:
        kernels = first.report("cuda_gpu_kern_sum")  # computed: `first` holds a connection to the file as built
        before = os.stat(first.cache_path).st_ino
        layers = second.layers()  # replaces the file
        built = os.stat(second.cache_path).st_ino
        assert built != before
        assert first.sql("SELECT count(*) AS n FROM kernel")["n"][0] == kernels["Instances"].sum()
        assert same(first.layers(), layers)  # reads what `second` built, building nothing again
        assert os.stat(first.cache_path).st_ino == built


def test_con_and_sql_build_what_they_read(tmp_path):
    with nsysql.open(EXPORT, cache_dir=tmp_path) as ex:
        rows = ex.sql("SELECT count(*) AS n FROM user_range")["n"][0]
        assert rows > 0 and "user_range" in relations(ex.cache_path)
        assert "gpu_busy" not in relations(ex.cache_path)
        ex.con.execute("SELECT count(*) FROM gpu_busy").fetchone()
        assert relations(ex.cache_path) >= ON_FIRST_USE


def test_a_table_no_query_word_names_is_built_when_duckdb_misses_it(tmp_path, monkeypatch):
    monkeypatch.setattr(queries, "tables_read", lambda q: set())
    with nsysql.open(EXPORT, cache_dir=tmp_path) as ex, \
            Export(EXPORT, cache_dir=tmp_path / "whole", build_all=True) as whole:
        assert same(ex.layers(), whole.layers())
        assert "gpu_op_attribution" in relations(ex.cache_path)
        with pytest.raises(nsysql.NsysqlError, match="no_such_table"):
            ex.sql("SELECT * FROM no_such_table")  # a table no statement makes is the user's error, as before


def test_processes_that_need_them_at_once_build_them_once(tmp_path):
    nsysql.open(EXPORT, cache_dir=tmp_path).close()
    log = tmp_path / "stages.tsv"
    script = ("import sys, nsysql; ex = nsysql.open(sys.argv[1], cache_dir=sys.argv[2]); "
              "print(ex.layers().write_csv())")
    env = dict(os.environ, NSYSQL_STAGE_LOG=str(log))
    runs = [subprocess.Popen([sys.executable, "-c", script, str(EXPORT), str(tmp_path)], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)]
    outputs = [r.communicate(timeout=300) for r in runs]
    assert [r.returncode for r in runs] == [0, 0, 0], [err for _, err in outputs]
    assert len({out for out, _ in outputs}) == 1
    built = [stage for stage in (line.split("\t")[1] for line in log.read_text().splitlines()) if stage in ON_FIRST_USE]
    wanted = importer.statements_to_add(set(STATEMENTS) - ON_FIRST_USE, queries.tables_read(catalog.get("analysis.layers")))
    assert sorted(built) == sorted(q.name for q in wanted), "each table once, by one of them"
    assert {"gpu_op_attribution", "user_range"} <= set(built) < ON_FIRST_USE


def test_summarize_builds_everything_on_its_first_open(tmp_path):
    from nsysql.cli.common import open_export
    ex = open_export(EXPORT, tmp_path, False, answer_summary=False)
    try:
        assert relations(ex.cache_path) >= ON_FIRST_USE
    finally:
        ex.close()


def test_diff_builds_what_it_reads_in_both_caches(tmp_path):
    fp32, bf16 = (FIXTURES / f"gpt-tiny-train-{d}" / "export.sqlite.xz" for d in ("fp32", "bf16"))
    with nsysql.open(fp32, cache_dir=tmp_path / "lazy") as a, nsysql.open(bf16, cache_dir=tmp_path / "lazy") as b, \
            Export(fp32, cache_dir=tmp_path / "whole", build_all=True) as whole_a, \
            Export(bf16, cache_dir=tmp_path / "whole", build_all=True) as whole_b:
        assert same(a.diff(b, by="layer"), whole_a.diff(whole_b, by="layer"))
        assert "gpu_op_attribution" in relations(a.cache_path) & relations(b.cache_path)


def test_a_cache_directory_it_cannot_write_costs_only_the_time(tmp_path, monkeypatch):
    nsysql.open(EXPORT, cache_dir=tmp_path / "shared").close()
    cache = next((tmp_path / "shared").glob("*.duckdb"))
    real = importer.scratch_cache

    def refused(directory):  # as in a read-only directory (root ignores the modes)
        if Path(directory) == cache.parent:
            raise PermissionError(13, "Permission denied", str(directory))
        return real(directory)

    monkeypatch.setattr(importer, "scratch_cache", refused)
    before = os.stat(cache).st_ino
    with nsysql.open(EXPORT, cache_dir=tmp_path / "shared") as ex, \
            Export(EXPORT, cache_dir=tmp_path / "whole", build_all=True) as whole:
        assert same(ex.layers(), whole.layers())
        assert same(ex.gaps(), whole.gaps())
        private = ex.store._private.directory
        assert private.is_dir()
    assert os.stat(cache).st_ino == before and not relations(cache) & ON_FIRST_USE, "the shared cache untouched"
    assert not private.exists(), "the private copy goes with its handle"


def test_a_cache_that_grows_keeps_the_directory_under_its_cap(export_files, tmp_path, monkeypatch):
    # plain .sqlite exports: an unpacked .xz lives in the cache directory, and its mtime is part of its cache key
    mine, other = export_files["gpt-tiny-train-w18s3"], export_files["gpt-tiny-forward"]
    nsysql.open(other, cache_dir=tmp_path).close()
    nsysql.open(mine, cache_dir=tmp_path).close()
    used = time.time() - 7200
    for p in tmp_path.iterdir():  # both caches used 2 h ago
        os.utime(p, (used, used))
    monkeypatch.setenv(hygiene.SIZE_ENV, str(sum(e.size for e in hygiene.entries(tmp_path))))
    with nsysql.open(mine, cache_dir=tmp_path) as ex:  # within the cap, and now the most recently used
        assert ex.cache_hit and len(hygiene.entries(tmp_path)) == 2
        ex.layers()  # its cache grows past the cap: the least recently used export goes
        assert [e.paths[0] for e in hygiene.entries(tmp_path)] == [ex.cache_path]
