"""`nsysql db`: a standalone DuckDB database with the normalized tables and every catalog query as a view."""
from __future__ import annotations

import csv
import importlib.util
import io
import json
import shutil
import subprocess
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from nsysql.cli.app import app
from nsysql.errors import MissingDataError
from nsysql.sql import catalog, views

from conftest import golden_exports
from plainwalk import Plain

runner = CliRunner()
VIEW_QUERIES = [q for g in views.VIEW_GROUPS for q in catalog.group(g) if not q.name.startswith("_")]  # public


@pytest.fixture(scope="module")
def golden():
    ident, _, csv_dir = golden_exports()[0]
    return ident, csv_dir


@pytest.fixture(scope="module")
def built(tmp_path_factory, export_files, cache_dir, golden):
    """The database of the first golden export, made from a copy of it that is deleted afterwards."""
    ident, _ = golden
    d = tmp_path_factory.mktemp("db")
    export = d / "run.sqlite"
    shutil.copyfile(export_files[ident], export)
    out = d / "out" / "run.duckdb"
    out.parent.mkdir()
    res = runner.invoke(app, ["db", str(export), "-o", str(out), "--cache-dir", str(d / "cache")])
    assert res.exit_code == 0, res.output
    assert "note:" not in res.output, "every public query is a view on a normal export"
    assert sorted(p.name for p in d.iterdir()) == ["cache", "out", "run.sqlite"], "nothing written beside the export"
    assert sorted(p.name for p in out.parent.iterdir()) == ["run.duckdb"], "no leftovers beside the database"
    shutil.rmtree(d / "cache")
    export.unlink()  # the database must stand alone
    return out


def _con(path: Path):
    return duckdb.connect(str(path), read_only=True)


def _rows_match(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert len(g) == len(w)
        for a, b in zip(g, w):
            if isinstance(b, float) and a is not None:
                assert a == pytest.approx(b, rel=1e-9, abs=1e-9)
            else:
                assert a == b


def test_every_report_and_analysis_is_a_documented_view(built):
    with _con(built) as con:
        listed = {r[1]: r for r in con.execute(
            "SELECT view_name, query_id, version, description, columns, note, sql FROM nsysql_views").fetchall()}
        db_views = {r[0]: r[1] for r in con.execute(
            "SELECT view_name, comment FROM duckdb_views() WHERE NOT internal").fetchall()}
        relations = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
        assert set(listed) == {q.id for q in VIEW_QUERIES}
        for q in VIEW_QUERIES:
            name, _, version, description, columns, note, sql = listed[q.id]
            assert version == q.version and description == q.purpose and sql == q.sql
            assert [(c["name"], c["type"], c["unit"]) for c in columns] == [(c.name, c.type, c.unit) for c in q.columns]
            if name not in db_views:  # allowed only with a reason, and never for reports or plain analyses
                assert note and ("not a view" in note or "not created" in note)
                assert q.id.startswith("analysis.") and not _only_needs(q, relations), f"{q.id}: {note}"
                continue
            assert q.purpose in db_views[name]
            got = [d[0] for d in con.execute(f'SELECT * FROM "{name}" LIMIT 0').description]
            assert got == [c.name for c in q.columns]
            units = dict(con.execute("SELECT column_name, comment FROM duckdb_columns() WHERE table_name = $t",
                                     {"t": name}).fetchall())
            assert all(units[c.name] == f"{c.type} | {c.unit}" for c in q.columns)


def _only_needs(q: catalog.Query, relations: set[str]) -> bool:
    """Whether the query reads only normalized tables and takes no parameter without a default."""
    needed = [alt.split()[0] for req in q.requires for alt in req.split("|") if alt.split()]
    return all(n in relations for n in needed) and views._with_defaults(q)[0] is not None


def test_private_queries_are_only_inputs(built):
    """`_` queries (docs/query-headers.md) are not documented views; those public views read exist under their name."""
    with _con(built) as con:
        listed = {r[0] for r in con.execute("SELECT query_id FROM nsysql_views").fetchall()}
        made = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
    assert not any(qid.rsplit(".", 1)[1].startswith("_") for qid in listed)
    assert {"_process_busy", "_step_busy", "_steady_windows", "_step_label"} <= made
    assert not made & {"_diff", "_plot_window", "_plot_timeline_ops"}  # nsysql's own helpers: no view


def test_a_view_other_views_read_reads_its_stored_rows(built, opened, golden):
    """A view that other views read is not computed again inside each of them: it reads a table of its rows made
    when the file was written, which holds what the query gives (Export.run) and says so in its comment."""
    every = [q for g in views.VIEW_GROUPS for q in catalog.group(g)]
    read = {r.split(".", 1)[1] for q in every for r in q.requires if r.startswith("analysis.")}
    ex = opened[golden[0]]
    with _con(built) as con:
        made = dict(con.execute("SELECT view_name, sql FROM duckdb_views() WHERE NOT internal").fetchall())
        stored = dict(con.execute("SELECT table_name, comment FROM duckdb_tables() "
                                  "WHERE starts_with(table_name, 'nsysql_input_')").fetchall())
        notes = dict(con.execute("SELECT view_name, note FROM nsysql_views").fetchall())
        inputs = read & set(made)
        assert {"steps", "steady_steps", "_step_busy", "_process_busy"} <= inputs
        assert set(stored) == {f"nsysql_input_{name}" for name in inputs}
        for name in inputs:
            assert f"nsysql_input_{name}" in made[name] and f"view {name} (" in stored[f"nsysql_input_{name}"]
            q = catalog.get(f"analysis.{name}")
            units = dict(con.execute("SELECT column_name, comment FROM duckdb_columns() WHERE table_name = $t",
                                     {"t": f"nsysql_input_{name}"}).fetchall())
            assert units == {c.name: f"{c.type} | {c.unit}" for c in q.columns}  # as every table's columns
            if not name.startswith("_"):
                assert f"reads table nsysql_input_{name}" in notes[name]
                _rows_match(con.execute(f"SELECT * FROM nsysql_input_{name}").fetchall(),
                            ex.run(f"analysis.{name}").rows())
        assert not any(f"nsysql_input_{name}" in made[name] for name in set(made) - inputs)


def test_parameterized_queries_are_table_macros(built, opened, golden):
    """The stock duckdb shell runs `SELECT * FROM layers(depth := 2)`: a plain connection to the file, the macro
    with its defaults giving the view's rows and with other values what Export gives."""
    ex = opened[golden[0]]
    with _con(built) as con:
        names = dict(con.execute("SELECT query_id, view_name FROM nsysql_views").fetchall())
        for q in VIEW_QUERIES:
            if q.param_names:
                _rows_match(con.execute(f'SELECT * FROM "{names[q.id]}"()').fetchall(),
                            con.execute(f'SELECT * FROM "{names[q.id]}"').fetchall())
        _rows_match(con.execute("SELECT * FROM layers(depth := 2)").fetchall(), ex.layers(depth=2).rows())
        _rows_match(con.execute("SELECT * FROM layers(merge_repeats := true, depth := 1)").fetchall(),
                    ex.layers(depth=1, merge_repeats=True).rows())
        _rows_match(con.execute("SELECT * FROM gaps(min_gap_ns := 1000000, with_calls := false)").fetchall(),
                    ex.run("analysis.gaps", min_gap_ns=1000000, with_calls=False).rows())
        _rows_match(con.execute("SELECT * FROM kernel_table_pyprof(step := 0)").fetchall(),
                    ex.run("analysis.kernel_table_pyprof", step=0).rows())


def test_view_names_are_query_names_unless_taken_by_a_table(built):
    with _con(built) as con:
        tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        names = dict(con.execute("SELECT query_id, view_name FROM nsysql_views").fetchall())
    for q in VIEW_QUERIES:
        expected = f"{q.id.split('.')[0]}_{q.name}" if q.name in tables else q.name
        if q.id.startswith("reports."):
            expected = q.name  # reports keep NVIDIA's names
        assert names[q.id] == expected


def test_views_give_what_export_run_gives(built, opened, golden):
    ex = opened[golden[0]]
    with _con(built) as con:
        names = dict(con.execute("SELECT query_id, view_name FROM nsysql_views").fetchall())
        made = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
        for q in VIEW_QUERIES:
            if names[q.id] not in made:
                continue  # not a view: see the test above
            defaults = q.defaults()  # a view of a parameterized query has its header defaults
            try:
                want = ex.run(q.id, **defaults).rows()
            except MissingDataError:  # the export lacks its raw table (unified memory, syscalls): nothing to compare
                continue
            _rows_match(con.execute(f'SELECT * FROM "{names[q.id]}"').fetchall(), want)


def test_report_view_matches_nvidia_csv(built, golden):
    """Independent check: NVIDIA's `nsys stats` CSV of the same export."""
    _, csv_dir = golden
    with (csv_dir / "nsys-stats_cuda_gpu_kern_sum.csv").open(newline="") as f:
        theirs = list(csv.DictReader(f))
    with _con(built) as con:
        rel = con.execute("SELECT * FROM cuda_gpu_kern_sum")
        cols = [d[0] for d in rel.description]
        mine = [dict(zip(cols, r)) for r in rel.fetchall()]
    assert [r["Name"] for r in mine] == [r["Name"] for r in theirs]
    for a, b in zip(mine, theirs):
        assert a["Total Time (ns)"] == int(b["Total Time (ns)"]) and a["Instances"] == int(b["Instances"])
        assert a["Avg (ns)"] == pytest.approx(float(b["Avg (ns)"]), abs=0.051)


def test_database_never_names_the_raw_export(built):
    with _con(built) as con:
        databases = con.execute("SELECT database_name FROM duckdb_databases() WHERE NOT internal").fetchall()
        assert databases == [(built.stem,)]
        assert not con.execute("SELECT count(*) FROM duckdb_schemas() WHERE schema_name = 'raw'").fetchone()[0]
        for (sql,) in con.execute("SELECT sql FROM duckdb_views() WHERE NOT internal").fetchall():
            assert "sqlite_scan" not in sql and "nsys." not in sql


def stock_duckdb_cli() -> tuple[str | None, str]:
    """The stock DuckDB CLI from the duckdb-cli wheel (test extra), else one on PATH of the same minor version."""
    spec = importlib.util.find_spec("duckdb_cli")
    candidates = [Path(spec.origin).parent / "duckdb"] if spec and spec.origin else []
    if shutil.which("duckdb"):
        candidates.append(Path(shutil.which("duckdb")))
    minor = ".".join(duckdb.__version__.split(".")[:2])
    for cli in candidates:
        if cli.is_file():
            version = subprocess.run([str(cli), "--version"], capture_output=True, text=True).stdout
            if version.lstrip("v").startswith(minor + "."):
                return str(cli), version.strip()
    return None, f"no DuckDB {minor}.x CLI (pip install 'duckdb-cli=={duckdb.__version__}', in the test extra)"


def test_stock_duckdb_cli_opens_it(built, golden):
    cli, why = stock_duckdb_cli()
    if cli is None:
        pytest.skip(why)
    out = subprocess.run([cli, "-readonly", "-json", str(built), "-c", 'SELECT "Range", "Total Proj Time (ns)" '
                          "FROM nvtx_gpu_proj_sum"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    with (golden[1] / "nsys-stats_nvtx_gpu_proj_sum.csv").open(newline="") as f:
        theirs = list(csv.DictReader(f))
    assert [(r["Range"], int(r["Total Proj Time (ns)"])) for r in rows] == [
        (r["Range"], int(r["Total Proj Time (ns)"])) for r in theirs]


def test_stock_duckdb_cli_runs_ad_hoc_joins(built, export_files, golden):
    cli, why = stock_duckdb_cli()
    if cli is None:
        pytest.skip(why)
    join = ("SELECT count(*) AS launched, sum(k.end_ns - k.start_ns) AS kernel_ns FROM kernel AS k "
            "JOIN runtime AS r ON r.correlation_id = k.correlation_id AND r.pid = k.pid")
    out = subprocess.run([cli, "-readonly", "-csv", str(built), "-c", join], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    got = list(csv.DictReader(io.StringIO(out.stdout)))[0]
    plain = Plain(export_files[golden[0]])
    launched = [o for o in plain.ops if o[0] == "kernel" and (o[3], o[4]) in plain.runtime]
    assert int(got["launched"]) == len(launched)
    assert int(got["kernel_ns"]) == sum(o[2] - o[1] for o in launched)


def test_refuses_to_overwrite_without_force(built, export_files, golden, cache_dir, tmp_path):
    out = tmp_path / "x.duckdb"
    out.write_bytes(b"keep me")
    export = str(export_files[golden[0]])
    res = runner.invoke(app, ["db", export, "-o", str(out), "--cache-dir", str(cache_dir)])
    assert res.exit_code == 1 and res.output.startswith("Error: ") and "--force" in res.output
    assert len(res.output.strip().splitlines()) == 1
    assert out.read_bytes() == b"keep me"
    res = runner.invoke(app, ["db", export, "-o", str(out), "--force", "--cache-dir", str(cache_dir)])
    assert res.exit_code == 0, res.output
    with _con(out) as con:
        assert con.execute("SELECT count(*) FROM nsysql_views").fetchone()[0] == len(VIEW_QUERIES)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.duckdb"]


def test_output_directory_is_refused(export_files, golden, cache_dir, tmp_path):
    res = runner.invoke(app, ["db", str(export_files[golden[0]]), "-o", str(tmp_path), "--cache-dir", str(cache_dir)])
    assert res.exit_code == 1 and "is a directory" in res.output


def _query(params: str, sql: str) -> catalog.Query:
    text = (f"-- nsysql: analysis.sample v1\n-- purpose: test\n-- requires: kernel\n-- params: {params}\n"
            f"-- columns:\n--   n | BIGINT | count\n{sql}\n")
    return catalog.parse(text, "analysis/sample.sql")


def test_parameter_defaults_become_literals_or_the_view_is_skipped():
    sql, note = views._with_defaults(_query("$min_ns BIGINT default 1000, $tag VARCHAR default 'a b'",
                                            "SELECT count(*) AS n FROM kernel WHERE end_ns - start_ns > $min_ns "
                                            "AND kernel_name <> $tag;"))
    assert "> 1000" in sql and "<> 'a b'" in sql and "$" not in sql.split("\n", 6)[-1]
    assert "min_ns=1000" in note
    sql, note = views._with_defaults(_query("$min_ns BIGINT default 5", "SELECT count(*) AS n FROM kernel WHERE start_ns > $min_ns"))
    assert sql.endswith("start_ns > 5\n")
    sql, note = views._with_defaults(_query("$min_ns BIGINT (ns)", "SELECT count(*) AS n FROM kernel "
                                            "WHERE start_ns > $min_ns"))
    assert sql is None and "min_ns" in note and "nsysql sql" in note


def test_a_view_that_cannot_be_made_is_listed_with_a_note():
    con = duckdb.connect()
    con.execute("CREATE TABLE kernel (start_ns BIGINT, end_ns BIGINT)")
    q = _query("none", "SELECT count(*) AS n FROM no_such_table")
    made = views.create_views(con, [views.CatalogView(q, "sample", q.sql)])
    assert made[0].sql is None and "not created" in made[0].note


@pytest.mark.parametrize("shell", [False, True], ids=["plain install", "with the shell extra"])
def test_the_printed_try_line_works_with_what_is_installed(export_files, tmp_path, cache_dir, shell):
    """`nsysql db` prints a command that runs: the DuckDB shell only where `duckdb` is a command (the `shell`
    extra), else Python's duckdb, which every install has."""
    import os
    import sys
    shell_path = shutil.which("duckdb") or shutil.which("duckdb", path=str(Path(sys.executable).parent))
    if shell and shell_path is None:
        pytest.skip("no duckdb command (pip install 'nsysql[shell]')")
    bin_dir = tmp_path / "bin"  # a PATH with this Python as `python` and, unless `shell`, no duckdb command
    bin_dir.mkdir()
    (bin_dir / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')  # this venv's Python
    (bin_dir / "python").chmod(0o755)
    if shell:
        (bin_dir / "duckdb").symlink_to(shell_path)
    env = {**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin", "NSYSQL_CACHE_DIR": str(cache_dir), "NSYSQL_AHEAD": "off"}
    out = tmp_path / "x.duckdb"
    done = subprocess.run([sys.executable, "-m", "nsysql", "db", str(export_files["gpt-tiny-forward"]), "-o",
                           str(out)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr
    (line,) = [x for x in done.stdout.splitlines() if x.startswith("try: ")]
    assert line.startswith("try: duckdb " if shell else "try: python -c ")
    ran = subprocess.run(["bash", "-c", line.removeprefix("try: ")], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=120)
    assert ran.returncode == 0, ran.stderr
    assert "reports.cuda_api_sum" in ran.stdout
