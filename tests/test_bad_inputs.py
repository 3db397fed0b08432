"""The reliability corpus: ≥ 40 bad, damaged or odd inputs (scripts/make_bad_inputs.py) through each command
family. For each: a correct result or one clean `Error:` line; exit 0 or 1 as the case states; impossible rows
named in a `warning:` line; never a traceback; nothing written beside the input."""
from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nsysql.cli.app import app

from conftest import load_script

corpus = load_script("scripts/make_bad_inputs.py")

# command families: the answer, an nsys-identical report, ad-hoc SQL
COMMANDS = {
    "summarize": lambda p: ["summarize", p],
    "report": lambda p: ["report", "cuda_gpu_kern_sum", p, "-f", "csv"],
    "sql": lambda p: ["sql", p, "SELECT COUNT(*) AS n FROM kernel"],
}


def _listing(directory: Path) -> dict:
    """Names and contents of everything in a case's directory (FIFOs, sockets and links by name only)."""
    out = {}
    for p in sorted(directory.iterdir()):
        out[p.name] = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() and not p.is_symlink() else "-"
    return out


@pytest.fixture(scope="module")
def cases(export_files, tmp_path_factory):
    good = export_files["gpt-tiny-forward"]
    return corpus.build(good, tmp_path_factory.mktemp("bad"))


def test_corpus_has_forty_cases():
    assert len(corpus.CASES) >= 40 and len({c[0] for c in corpus.CASES}) == len(corpus.CASES)


@pytest.mark.parametrize("name", [c[0] for c in corpus.CASES])
def test_case(cases, tmp_path, name):
    case = next(c for c in cases if c.name == name)
    directory = case.path.parent
    before = _listing(directory)
    for command, args in COMMANDS.items():
        res = CliRunner().invoke(app, args(str(case.path)) + ["--cache-dir", str(tmp_path / "cache")],
                                 env={"TMPDIR": str(tmp_path), "COLUMNS": "100"})
        where = f"{name} / {command}: exit {res.exit_code}\n{res.stderr}"
        assert "Traceback" not in res.output, where
        notes = [l for l in res.stderr.splitlines() if l.startswith(("warning:", "note:"))]
        errors = [l for l in res.stderr.splitlines() if l not in notes]
        if case.expect.startswith("warn"):
            assert any(case.needle in line for line in notes), where
        if res.exit_code == 0:
            assert case.expect in ("ok", "warn", "warn-either", "either") and not errors, where
        else:
            assert case.expect in ("error", "either", "warn-either") and res.exit_code == 1, where
            assert len(errors) == 1 and errors[0].startswith("Error: "), where
            assert case.expect == "warn-either" or case.needle in errors[0], where
    assert _listing(directory) == before, f"{name}: something was written beside the input"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("nsysql-")]  # no temp dir left


def test_full_disk_is_named_as_such():
    """Not the export's fault: the line says where space ran out instead of blaming the export's schema."""
    from nsysql.store.importer import damage
    line = damage(Path("run.sqlite"), Exception('IO Error: Could not write file "x": No space left on device'))
    assert line.startswith("cannot write the cache") and "`cache_dir=`" in line  # the CLI: --cache-dir
    from nsysql.errors import NsysqlError, cli_text
    assert "choose another --cache-dir or NSYSQL_CACHE_DIR" in cli_text(NsysqlError(line))
    assert "damaged" in damage(Path("run.sqlite"), Exception("database disk image is malformed"))
    assert damage(Path("run.sqlite"), Exception("Binder Error: no column gridX")) is None
