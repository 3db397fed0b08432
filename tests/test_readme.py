"""README's pasted screens (`summarize` on one GPU, and the ranks of a 2-GPU job) are the tool's own output on the
fixtures they name."""
from __future__ import annotations

import re
import shlex

import pytest

from conftest import REPO

EXAMPLE = re.compile(r"<!-- (\w+)-example: COLUMNS=(\d+) nsysql (.*?) -->\n```text\n(.*?)```\n", re.S)


def examples() -> list[tuple[str, str, str, str]]:
    return EXAMPLE.findall((REPO / "README.md").read_text(encoding="utf-8"))


def test_readme_has_its_examples():
    assert [kind for kind, *_ in examples()] == ["summary", "several"], "README lost an example"


@pytest.mark.parametrize("kind,columns,command,pasted", examples(), ids=[e[0] for e in examples()])
def test_readme_example_is_current(tmp_path, monkeypatch, kind, columns, command, pasted):
    from typer.testing import CliRunner

    from nsysql.cli.app import app

    args = shlex.split(command)
    lines = None  # `... | sed -n A,Bp`: README shows lines A to B of the output
    if "|" in args:
        at = args.index("|")
        assert args[at + 1:at + 3] == ["sed", "-n"] and re.fullmatch(r"\d+,\d+p", args[at + 3]), command
        lines = [int(n) for n in args[at + 3][:-1].split(",")]
        args = args[:at]
    monkeypatch.chdir(REPO)  # the example's path is relative to the repository, as in README's first command
    res = CliRunner().invoke(app, [*args, "--cache-dir", str(tmp_path / "cache")], env={"COLUMNS": columns})
    assert res.exit_code == 0, res.output
    shown = res.stdout if lines is None else "".join(res.stdout.splitlines(keepends=True)[lines[0] - 1:lines[1]])
    assert shown == pasted, "regenerate README's example: " + " ".join(["COLUMNS=" + columns, "nsysql", *args])
    assert max(len(line) for line in pasted.splitlines()) <= int(columns)
