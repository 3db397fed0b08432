"""README's pasted `summarize` screen is the tool's own output on the fixture it names."""
from __future__ import annotations

import re
import shlex

from conftest import REPO


def test_readme_summary_example_is_current(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from nsysql.cli import app

    text = (REPO / "README.md").read_text(encoding="utf-8")
    m = re.search(r"<!-- summary-example: COLUMNS=(\d+) nsysql (.*?) -->\n```text\n(.*?)```\n", text, re.S)
    assert m, "README lost its summary example"
    columns, args, pasted = m.group(1), shlex.split(m.group(2)), m.group(3)
    monkeypatch.chdir(REPO)  # the example's path is relative to the repository, as in README's first command
    res = CliRunner().invoke(app, [*args, "--cache-dir", str(tmp_path / "cache")], env={"COLUMNS": columns})
    assert res.exit_code == 0, res.output
    assert res.stdout == pasted, "regenerate README's summary example: " + " ".join(["COLUMNS=" + columns, "nsysql",
                                                                                   *args])
    assert max(len(line) for line in pasted.splitlines()) <= int(columns)
