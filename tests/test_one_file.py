"""Adding a thing is one file (docs/contributing.md): a toy analysis that declares its own command in its header
(`-- command:`), and a toy finding rule, each ONE SQL file in a directory of one's own added with
`nsysql.catalog.add_queries(DIR)`. Each is then seen everywhere nsysql shows its own: the CLI (`--help`, the command,
`findings`), the library, `nsysql db` files and the generated reference docs. Their numbers are checked against a
plain walk of the raw export."""
from __future__ import annotations

import csv
import io
import json
import sqlite3

import duckdb
import pytest
from typer.testing import CliRunner

import nsysql
from nsysql.sql import analyses, catalog

from conftest import load_script

runner = CliRunner()
EXPORT = "gpt-tiny-train-bf16"

TOY_ANALYSIS = """\
-- nsysql: analysis.toy_busy v1
-- purpose: Kernels and their GPU time per CUDA stream (a toy analysis of tests/test_one_file.py).
-- requires: kernel
-- params: $min_kernels BIGINT default 1 (leave out streams with fewer kernels)
-- command: toy-busy (after steps)
-- columns:
--   stream_id | BIGINT | id
--   kernels | BIGINT | count
--   gpu_ns | BIGINT | ns
SELECT stream_id, COUNT(*) AS kernels, CAST(SUM(end_ns - start_ns) AS BIGINT) AS gpu_ns
FROM kernel
GROUP BY stream_id
HAVING COUNT(*) >= $min_kernels
ORDER BY gpu_ns DESC, stream_id;
"""

TOY_FINDING = """\
-- nsysql: findings.toy_longest_kernel v1
-- purpose: Finding: the longest kernel, as if it were a problem (a toy rule of tests/test_one_file.py).
-- requires: kernel
-- params: none
-- columns:
--   rule | VARCHAR | text
--   title | VARCHAR | text
--   where | VARCHAR | text
--   evidence | VARCHAR | text
--   action | VARCHAR | text
--   recoverable_ns | BIGINT | ns
--   recoverable_pct | DOUBLE | pct | 1
SELECT 'toy_longest_kernel' AS rule, 'The longest kernel' AS title, 'stream ' || stream_id AS "where",
       kernel_name AS evidence, 'nothing: it is a toy' AS action, end_ns - start_ns AS recoverable_ns,
       NULL::DOUBLE AS recoverable_pct
FROM kernel
ORDER BY end_ns - start_ns DESC, start_ns
LIMIT 1;
"""


@pytest.fixture
def added(tmp_path):
    (tmp_path / "mine" / "analysis").mkdir(parents=True)
    (tmp_path / "mine" / "findings").mkdir()
    (tmp_path / "mine" / "analysis" / "toy_busy.sql").write_text(TOY_ANALYSIS, encoding="utf-8")
    (tmp_path / "mine" / "findings" / "toy_longest_kernel.sql").write_text(TOY_FINDING, encoding="utf-8")
    added = catalog.add_queries(tmp_path / "mine")
    assert sorted(q.id for q in added) == ["analysis.toy_busy", "findings.toy_longest_kernel"]
    yield
    for q in added:
        catalog.all_queries().pop(q.id, None)


def _raw_streams(path, min_kernels: int) -> list[tuple[int, int, int]]:
    """A plain walk of the raw kernel rows: (streamId, kernels, GPU ns) per stream, GPU time first."""
    per: dict[int, list[int]] = {}
    for stream, start, end in sqlite3.connect(path).execute("SELECT streamId, start, end FROM CUPTI_ACTIVITY_KIND_KERNEL"):
        per.setdefault(stream, []).append(end - start)
    rows = [(s, len(d), sum(d)) for s, d in per.items() if len(d) >= min_kernels]
    return sorted(rows, key=lambda r: (-r[2], r[0]))


def test_an_analysis_file_declares_its_own_command(added, export_files, cache_dir):
    from nsysql.cli.app import make_app
    app = make_app()
    listed = runner.invoke(app, ["--help"], env={"COLUMNS": "100"}).output
    assert "toy-busy" in listed
    help_text = " ".join(runner.invoke(app, ["toy-busy", "--help"], env={"COLUMNS": "100"}).output.split())
    assert "Kernels and their GPU time per CUDA stream" in help_text and "--min-kernels" in help_text
    assert "leave out streams with fewer kernels" in help_text and "[default: 1" in help_text  # the header's

    path = export_files[EXPORT]
    done = runner.invoke(app, ["toy-busy", str(path), "--min-kernels", "5", "-f", "csv", "--cache-dir", str(cache_dir)])
    assert done.exit_code == 0, done.output
    got = [(int(r["stream_id"]), int(r["kernels"]), int(r["gpu_ns"])) for r in csv.DictReader(io.StringIO(done.stdout))]
    assert got == _raw_streams(path, 5) and got
    table = runner.invoke(app, ["toy-busy", str(path), "--cache-dir", str(cache_dir)], env={"COLUMNS": "80"})
    assert table.exit_code == 0 and table.stdout.splitlines()[0] == "Kernels and their GPU time per CUDA stream"

    with nsysql.open(path, cache_dir=cache_dir) as ex:  # the library: Export.analysis, by the same declaration
        rows = ex.analysis("toy-busy", min_kernels=5).rows()
        assert rows == got
        assert ex.analysis("toy-busy").height == len(_raw_streams(path, 1))
        with pytest.raises(nsysql.NsysqlError, match="no parameter 'minimum'"):
            ex.analysis("toy-busy", minimum=3)
    assert analyses.get("toy-busy").after == "steps"


def test_a_finding_rule_is_one_file(added, export_files, cache_dir):
    from nsysql.cli.app import make_app
    path = export_files[EXPORT]
    done = runner.invoke(make_app(), ["findings", str(path), "-f", "json", "--cache-dir", str(cache_dir)])
    assert done.exit_code == 0, done.output
    toy = [f for f in json.loads(done.stdout) if f["rule"] == "toy_longest_kernel"]
    longest = sqlite3.connect(path).execute("SELECT MAX(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
    assert len(toy) == 1 and toy[0]["recoverable_ns"] == longest


def test_both_are_in_nsysql_db_files_and_the_docs(added, export_files, cache_dir, tmp_path):
    path = export_files[EXPORT]
    out = tmp_path / "toy.duckdb"
    with nsysql.open(path, cache_dir=cache_dir) as ex:
        ex.to_duckdb(out)
    con = duckdb.connect(str(out), read_only=True)
    views = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
    assert {"toy_busy", "toy_longest_kernel"} <= views
    got = con.execute("SELECT stream_id, kernels, gpu_ns FROM toy_busy").fetchall()
    assert got == _raw_streams(path, 1)

    docs = load_script("scripts/make_reference_docs.py")
    assert "## nsysql toy-busy" in docs.cli_reference()
    sql_reference = docs.sql_reference()
    assert "analysis.toy_busy" in sql_reference and "findings.toy_longest_kernel" in sql_reference
