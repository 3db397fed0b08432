"""Issue 12: once an export's cache exists, `summarize` and the default outputs of `steps`, `layers`, `memcpy` and
`report nvtx_gpu_proj_sum` read small stored answers and run no query over a big table, whichever command opened
the export first."""
from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from nsysql.answers import ahead, summary
from nsysql.cli.app import app
from nsysql.query.queries import Queries as Export
from nsysql.store import stored as answers

runner = CliRunner()
BIG_ROWS = 2000  # "a few thousand": the fixture's kernel, runtime, NVTX and OS-runtime tables each have more
FIXTURE = "gpt-tiny-train-w18s3"  # 7,725 kernels, 15,622 CUDA calls, 6,165 NVTX events, 36,541 OS calls


class RecordingConnection:
    """A DuckDB connection that remembers every SQL text it is asked to run."""

    def __init__(self, con):
        self._con = con
        self.statements: list[str] = []

    def execute(self, sql, *args, **kwargs):
        self.statements.append(sql)
        return self._con.execute(sql, *args, **kwargs)

    def sql(self, sql, *args, **kwargs):
        self.statements.append(sql)
        return self._con.sql(sql, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._con, name)


def tables_read(con, sql: str) -> set[str]:
    """The tables and views a SELECT names (CTE names included; the caller looks up the real ones), also as the
    arguments of a table macro, from DuckDB's own parse tree; raises for anything but a SELECT (or a temp table
    made from one)."""
    made = re.match(r"\s*CREATE\s+(?:OR\s+REPLACE\s+)?TEMP(?:ORARY)?\s+TABLE\s+\S+\s+AS\s+", sql, re.IGNORECASE)
    sql = sql[made.end():] if made else sql
    tree = json.loads(con.execute("SELECT json_serialize_sql($q)", {"q": sql}).fetchone()[0])
    if tree.get("error"):
        raise AssertionError(f"not a plain SELECT: {sql[:200]!r}")
    found: set[str] = set()

    def walk(node):
        if isinstance(node, dict):
            if node.get("type") == "BASE_TABLE" and node.get("table_name"):
                found.add(node["table_name"])
            if node.get("type") == "TABLE_FUNCTION":  # a table macro reads the tables passed to it by name
                found.update(arg["column_names"][0] for arg in node["function"].get("children", [])
                             if arg.get("class") == "COLUMN_REF" and len(arg["column_names"]) == 1)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
    walk(tree)
    return found


def row_counts(con) -> dict[str, int]:
    """Rows of every table and view of the cached export (a view counted by running it)."""
    names = [r[0] for r in con.execute("SELECT table_name FROM information_schema.tables "
                                       "WHERE table_schema = 'main'").fetchall()]
    return {n: con.execute(f'SELECT count(*) FROM "{n}"').fetchone()[0] for n in names}


def big_reads(ex: Export, work=None) -> list[str]:
    """Run `work(ex)` (a default summarize when None) and return every statement it ran that read a table of more
    than BIG_ROWS rows (what the recorder saw, checked against the cache's own row counts)."""
    counts = row_counts(ex.con)
    big = {name for name, n in counts.items() if n > BIG_ROWS}
    assert {"kernel", "runtime", "nvtx_range", "osrt"} <= big  # the guard means something on this fixture
    recorder = RecordingConnection(ex.con)
    ex.con = recorder
    try:
        if work is None:
            result = summary.build_summary(ex)
            text = summary.render_text(result, width=80)
            summary.to_json(result)
            assert "Findings" in text and "Step time" in text
        else:
            work(ex)
    finally:
        ex.con = recorder._con
    return [sql for sql in recorder.statements if tables_read(ex.con, sql) & big]


@pytest.mark.parametrize("first", [["report", "nvtx_sum", "{export}"], ["kernels", "{export}", "-f", "csv"]])
def test_summarize_after_another_command_reads_no_big_table(export_files, tmp_path, first):
    export = export_files[FIXTURE]
    cache = tmp_path / "cache"
    argv = [str(export) if a == "{export}" else a for a in first]
    opened = runner.invoke(app, [*argv, "--cache-dir", str(cache)])
    assert opened.exit_code == 0, opened.output
    with Export(export, cache_dir=cache) as ex:
        assert ex.cache_hit
        assert big_reads(ex) == []
        for name, compute in ahead.DEFAULT_OUTPUTS:
            assert big_reads(ex, compute) == [], name


def test_the_guard_sees_a_summarize_that_computes(export_files, tmp_path, monkeypatch):
    """Without stored answers the same check names the big tables read: the guard above can fail."""
    monkeypatch.setattr(answers, "load", lambda *args: None)
    monkeypatch.setattr(answers, "stored_file", lambda *args: None)
    with Export(export_files[FIXTURE], cache_dir=tmp_path / "cache") as ex:
        read = big_reads(ex)
        assert read and any("gpu_op" in sql or "kernel" in sql for sql in read)
        for name, compute in ahead.DEFAULT_OUTPUTS:
            assert big_reads(ex, compute), name


def test_first_open_by_any_command_answers_summarize(export_files, tmp_path):
    """The stored answers come from the command's first open, not from an earlier summarize."""
    export = export_files[FIXTURE]
    cache = tmp_path / "cache"
    assert runner.invoke(app, ["report", "cuda_api_sum", str(export), "--cache-dir", str(cache)]).exit_code == 0
    answers = [p.name for p in cache.glob("*.answers/*.parquet")]
    assert any(name.startswith("findings.") for name in answers), answers
    assert any(name.startswith("analysis.step_breakdown-") for name in answers), answers


def test_no_cache_stores_nothing(export_files, tmp_path, monkeypatch):
    """--no-cache keeps nothing, so it computes no summary it would throw away."""
    called = []
    monkeypatch.setattr(ahead, "answer_ahead", lambda ex, **kw: called.append(ex))
    export = export_files[FIXTURE]
    result = runner.invoke(app, ["report", "nvtx_sum", str(export), "--no-cache", "--cache-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert called == []


def test_default_outputs_after_another_commands_first_open_compute_nothing(export_files, tmp_path):
    """Through the CLI: after `report nvtx_sum` opened the export, the default `steps`, `layers`, `memcpy`,
    `report nvtx_gpu_proj_sum` and `summarize` compute no query (each computed query would store a new answer)."""
    export = export_files[FIXTURE]
    cache = tmp_path / "cache"
    assert runner.invoke(app, ["report", "nvtx_sum", str(export), "--cache-dir", str(cache)]).exit_code == 0
    before = sorted(p.name for p in cache.glob("*.answers/*.parquet"))
    for argv in (["steps"], ["layers"], ["memcpy"], ["report", "nvtx_gpu_proj_sum"], ["summarize"]):
        result = runner.invoke(app, [*argv, str(export), "--cache-dir", str(cache)])
        assert result.exit_code == 0, result.output
        assert sorted(p.name for p in cache.glob("*.answers/*.parquet")) == before, argv
