"""Errors raised from the library name Python arguments (`force=True`); the command line shows the same error
with the option that sets the argument (`--force`)."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

import nsysql
from nsysql.answers import dataset, diff
from nsysql.cli.app import app
from nsysql.errors import NsysqlError, cli_text
from nsysql.present import plot
from nsysql.sql import rules

from conftest import FIXTURES, REPO

EXPORT = FIXTURES / "cnn-dataloader-train" / "export.sqlite.xz"


@pytest.mark.parametrize("python, cli", [
    ("x already exists; pass `force=True` to replace it", "x already exists; pass --force to replace it"),
    ("choose `step=1..3` (0 = all kernels)", "choose --step 1..3 (0 = all kernels)"),
    ("`match='base'` applies to kernels only; add `by='kernel'`", "--match base applies to kernels only; add --by kernel"),
    ("give either `step=` or `start_ms=`/`end_ms=`, not both", "give either --step or --start-ms/--end-ms, not both"),
    ("rule gpu_gaps: `gap=` must be 0 or more, not -5", "rule gpu_gaps: --gap must be 0 or more, not -5"),
    ("no `argument` here, `a b=c` neither", "no `argument` here, `a b=c` neither"),
])
def test_cli_text_names_the_option(python, cli):
    assert cli_text(NsysqlError(python)) == cli


def _raises(call) -> str:
    with pytest.raises(NsysqlError) as info:
        call()
    return str(info.value)


def test_library_errors_name_python_arguments(tmp_path):
    out = tmp_path / "run.duckdb"
    out.write_bytes(b"")
    assert "pass `force=True`" in _raises(lambda: dataset.check_duckdb_target(out, force=False))
    assert "`name=`" in _raises(lambda: dataset.export_name(Path("._.sqlite")))
    assert "diff `by=` takes" in _raises(lambda: diff.diff(None, None, by="op"))
    assert "`match='base'` applies" in _raises(lambda: diff.diff(None, None, by="range", match="base"))
    assert "`step=` or `start_ms=`" in _raises(lambda: plot.timeline(None, tmp_path / "t.png", step=1, start_ms=0))
    assert "`gap=` must be" in _raises(lambda: rules.params("gpu_gaps", {"gap": -5}))


def test_the_command_line_names_the_option(tmp_path):
    out = tmp_path / "run.duckdb"
    out.write_bytes(b"")
    res = CliRunner().invoke(app, ["db", str(EXPORT), "-o", str(out), "--cache-dir", str(tmp_path / "cache")])
    assert res.exit_code == 1
    assert res.stderr == f"Error: {out} already exists; pass --force to replace it\n"


def test_to_duckdb_names_force(tmp_path):
    """The Python API itself: `Export.to_duckdb` onto an existing file."""
    out = tmp_path / "run.duckdb"
    out.write_bytes(b"")
    with nsysql.open(EXPORT, cache_dir=tmp_path / "cache") as ex:
        message = _raises(lambda: ex.to_duckdb(out))
    assert "pass `force=True`" in message and "--force" not in message


# Messages of library modules that may name options: nsys's, xz's and pip's own flags, and helpers whose input is
# the command line's own text (`-p name=value` strings of `nsysql sql`, which adhoc parses and checks).
ALLOWED = {"--type", "--trace", "--version", "-dk", "--force-reinstall", "-p", "--format", "-o"}
CLI_ONLY = {"adhoc.py"}


def _error_texts(path: Path):
    """(line, text) of the string parts of every `raise SomethingError(...)` in a module."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
            for part in ast.walk(node.exc):
                if isinstance(part, ast.Constant) and isinstance(part.value, str):
                    yield node.lineno, part.value


def test_no_library_error_names_a_command_line_option():
    found = []
    for path in sorted((REPO / "nsysql").rglob("*.py")):
        if "cli" in path.relative_to(REPO / "nsysql").parts[:-1]:
            continue  # the command line names its own options
        for line, text in _error_texts(path):
            for option in re.findall(r"(?<![\w`-])--?[a-z][\w-]*", text):
                if option not in ALLOWED or (option in ("-p", "--format", "-o") and path.name not in CLI_ONLY):
                    found.append(f"{path.name}:{line}: {option} in {text!r}")
    assert not found, "name the Python argument as `name=value` instead:\n" + "\n".join(found)
