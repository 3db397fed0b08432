"""Adding an analysis takes one SQL file and one declaration (docs/contributing.md): the test adds a toy one,
outside queries/, and finds it as a command (in --help, with table, csv and json output and `--by`) and in the
library (`Export.analysis`, `Export.run`). Also: the declared table commands, their Export methods and the
shared option groups."""
from __future__ import annotations

import csv
import io
import json
import re

import pytest
from typer.testing import CliRunner

from nsysql.cli.common import OUTPUT, SOURCE, ExportsArg, Output, Source, with_groups
from nsysql.core.formats import Format
from nsysql.sql import analyses, catalog
from nsysql.sql.analyses import Analysis, Param

runner = CliRunner()
EXPORT = "gpt-tiny-train-bf16"

TOY_SQL = """\
-- nsysql: analysis.toy_streams v1
-- purpose: GPU time per stream (or per device), a toy analysis added by tests/test_declared.py.
-- requires: kernel
-- params: $by VARCHAR default 'stream' (stream or device), $min_kernels BIGINT default 1 (fewer kernels: left out)
-- columns:
--   key | BIGINT | id
--   kernels | BIGINT | count
--   gpu_ns | BIGINT | ns
--   mean_ns | DOUBLE | ns | 2
SELECT CASE WHEN $by = 'device' THEN device_id ELSE stream_id END AS key, COUNT(*) AS kernels,
       CAST(SUM(end_ns - start_ns) AS BIGINT) AS gpu_ns, AVG(end_ns - start_ns) AS mean_ns
FROM kernel
GROUP BY 1
HAVING COUNT(*) >= $min_kernels
ORDER BY gpu_ns DESC, key;
"""


@pytest.fixture
def toy(tmp_path, monkeypatch):
    """The recipe, exactly: one SQL file (in a directory of one's own) and one declaration."""
    monkeypatch.setattr(analyses, "DECLARED", list(analyses.DECLARED))  # undone after the test
    (tmp_path / "queries" / "analysis").mkdir(parents=True)
    (tmp_path / "queries" / "analysis" / "toy_streams.sql").write_text(TOY_SQL, encoding="utf-8")
    catalog.add_queries(tmp_path / "queries")
    analyses.declare(Analysis(
        name="toy-streams",
        help="GPU time per stream or device: kernels, total and mean kernel time (a toy analysis).",
        queries={"stream": "analysis.toy_streams", "device": "analysis.toy_streams"}, by_param="by",
        by_help="Group per CUDA stream or per device.",
        params=(Param("min_kernels", int, 1, "Leave out groups with fewer kernels.", min=1),),
        title="GPU time by {by}",
    ))
    yield
    catalog.all_queries().pop("analysis.toy_streams", None)


def _app():
    from nsysql.cli.app import make_app
    return make_app()


def test_a_declared_analysis_is_a_command(toy, export_files, cache_dir):
    app = _app()
    listed = runner.invoke(app, ["--help"], env={"COLUMNS": "100"})
    assert listed.exit_code == 0 and re.search(r"\n  toy-streams +GPU time per stream or device", listed.output)
    help_text = runner.invoke(app, ["toy-streams", "--help"], env={"COLUMNS": "100"}).output
    for option in ("--by <stream|device>", "--min-kernels", "--format", "--output", "--wide", "--cache-dir",
                   "--no-cache", "--debug", "[default: stream]", "[default: 1;"):
        assert option in help_text, option

    path = str(export_files[EXPORT])
    common = ["--cache-dir", str(cache_dir)]
    table = runner.invoke(app, ["toy-streams", path, *common], env={"COLUMNS": "100"})
    assert table.exit_code == 0, table.output
    lines = table.stdout.splitlines()
    assert lines[0] == "GPU time by stream" and lines[1].split() == ["key", "kernels", "gpu", "mean"]
    assert set(lines[2].split()) <= {"s", "ms", "µs", "ns"} and len(lines[2].split()) == 2  # units, from the header

    rows = list(csv.DictReader(io.StringIO(runner.invoke(app, ["toy-streams", path, "-f", "csv", *common]).stdout)))
    assert rows and list(rows[0]) == ["key", "kernels", "gpu_ns", "mean_ns"]
    assert all(len(r["mean_ns"].split(".")[1]) == 2 for r in rows)  # the header's decimals

    devices = json.loads(runner.invoke(app, ["toy-streams", path, "--by", "device", "-f", "json", *common]).stdout)
    assert sum(d["kernels"] for d in devices) == sum(int(r["kernels"]) for r in rows)

    other = str(export_files["ncf-train"])
    many = runner.invoke(app, ["toy-streams", path, other, "--min-kernels", "20", "-f", "csv", *common])
    assert many.exit_code == 0 and many.stdout.startswith("export,rank,key,kernels,gpu_ns,mean_ns\n")
    assert all(int(r["kernels"]) >= 20 for r in csv.DictReader(io.StringIO(many.stdout)))
    bad = runner.invoke(app, ["toy-streams", path, "--by", "thread", *common])
    assert bad.exit_code == 1 and bad.output.count("\n") == 1 and "'thread' is not one of" in bad.output


def test_a_declared_analysis_is_in_the_library(toy, export_files, cache_dir):
    import nsysql
    with nsysql.open(export_files[EXPORT], cache_dir=cache_dir) as ex:
        by_stream = ex.analysis("toy-streams")
        assert by_stream.columns == [c.name for c in analyses.get("toy-streams").columns()]
        assert by_stream.equals(ex.run("analysis.toy_streams", by="stream", min_kernels=1))
        by_device = ex.analysis("toy-streams", by="device", min_kernels=2)
        assert by_device["kernels"].sum() <= by_stream["kernels"].sum()
        with pytest.raises(nsysql.NsysqlError, match="choose one of: stream, device"):
            ex.analysis("toy-streams", by="thread")


def test_a_declaration_naming_a_missing_query_fails_at_once(monkeypatch):
    monkeypatch.setattr(analyses, "DECLARED", list(analyses.DECLARED))
    with pytest.raises(Exception, match="no query named 'analysis.nope'"):
        analyses.declare(Analysis(name="nope", help="Nothing.", queries={"": "analysis.nope"}))


def test_query_files_added_keep_nsysqls_own(tmp_path):
    (tmp_path / "analysis").mkdir()
    (tmp_path / "analysis" / "steps.sql").write_text(TOY_SQL.replace("analysis.toy_streams", "analysis.steps"))
    with pytest.raises(Exception, match="already has a query 'analysis.steps'"):
        catalog.add_queries(tmp_path)


def test_the_declared_commands_and_their_export_methods_agree():
    """Every declared analysis is a command with its `--by` choices; each Export method of a --by family runs the
    declared query of each choice, and refuses others in one line."""
    from nsysql import api
    from nsysql.cli.app import app
    for a in analyses.DECLARED:
        shown = " ".join(runner.invoke(app, [a.name, "--help"], env={"COLUMNS": "100"}).output.split())
        assert " ".join(a.help.split()[:8]) in shown
        if a.choices:
            assert f"--by <{'|'.join(a.choices)}>" in shown and f"[default: {a.default_by}]" in shown
        else:
            assert "--by" not in shown
        assert callable(getattr(api.Export, a.name))


@pytest.mark.parametrize("name, by, query", [("overhead", "kernel", "analysis.overhead_by_kernel"),
                                             ("memcpy", "stream", "analysis.memcpy_by_stream"),
                                             ("efficiency", "layer", "analysis.efficiency")])
def test_by_families_run_their_declared_query(name, by, query):
    assert analyses.get(name).query(by).id == query
    with pytest.raises(Exception, match=f"{name} by 'x'\\? choose one of: "):
        analyses.get(name).query("x")


def test_option_groups_keep_their_place_and_arrive_as_one_object():
    import inspect
    seen = {}

    def command(exports: ExportsArg, out: Output = OUTPUT, top: int = 3, src: Source = SOURCE) -> None:
        seen.update(out=out, top=top, src=src)

    wrapped = with_groups(command)
    assert list(inspect.signature(wrapped).parameters) == [
        "exports", "fmt", "output", "wide", "top", "cache_dir", "no_cache", "nsys", "step_range", "debug"]
    wrapped(exports=[], fmt=Format.csv, output=None, wide=True, top=5, cache_dir=None, no_cache=True, nsys=None,
            step_range="decode_step", debug=False)
    assert seen == {"out": Output(Format.csv, None, True), "top": 5,
                    "src": Source(None, True, None, "decode_step", False)}
