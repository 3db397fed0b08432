"""`--help` of every command shows every default, and its paragraphs rewrapped, not broken at the source's lines."""
from __future__ import annotations

import re

import pytest
import typer.main
from typer.testing import CliRunner

from nsysql.cli.app import app

runner = CliRunner()


def _commands(group=None, path=()):
    """(argv path, click command) of every command and sub-command, e.g. (('cache', 'list'), <command>)."""
    group = group or typer.main.get_command(app)
    for name, cmd in sorted(group.commands.items()):
        yield (*path, name), cmd
        if hasattr(cmd, "commands"):
            yield from _commands(cmd, (*path, name))


COMMANDS = list(_commands())


def _flat(text: str) -> str:
    return " ".join(text.split())


def _help(path) -> str:
    res = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "100"})
    assert res.exit_code == 0, res.output
    return res.output


@pytest.mark.parametrize("path, cmd", COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_help_shows_every_default(path, cmd):
    shown = _flat(_help(path))
    for param in cmd.params:
        written = re.search(r"\[default: [^\]]+\]", param.help or "")
        if written:  # a default the help text states itself ($NSYSQL_CACHE_DIR or ~/.cache/nsysql)
            assert _flat(written.group(0)) in shown, (param.name, param.help)
        elif param.show_default and param.default not in (None, False, ()) and not param.hidden:
            value = param.default.value if hasattr(param.default, "value") else param.default
            if isinstance(value, bool):  # --calls/--no-calls: the switch that is on
                value = (param.opts if value else param.secondary_opts)[0].lstrip("-")
            assert re.search(rf"\[default: {re.escape(str(value))}[;\]]", shown), (param.name, param.default)


def test_help_keeps_the_cache_dir_default_and_its_sentence():
    """Rich markup used to read `[default: ...]` as a style tag: "Where normalized exports are cached ."."""
    shown = _flat(_help(["gaps"]))
    assert "Where normalized exports are cached [default: $NSYSQL_CACHE_DIR or ~/.cache/nsysql]." in shown
    assert "cached ." not in shown
    assert "[default: 100.0" in shown  # --min-gap-us


@pytest.mark.parametrize("path, cmd", COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_help_paragraphs_are_rewrapped(path, cmd):
    """Each paragraph of a docstring is one flow of text: no line of the help ends mid-sentence only because the
    docstring's source line did (a line is never much shorter than the width while the next word would fit)."""
    lines = _help(path).splitlines()
    end = next(i for i, line in enumerate(lines) if line in ("Arguments:", "Options:", "Commands:"))
    description = lines[1:end]  # after `Usage: ...`, before the lists
    for line, after in zip(description, description[1:]):
        if line.strip() and after.strip():  # two lines of one paragraph
            assert len(line) + 1 + len(after.split()[0]) > 78, (line, after)


@pytest.mark.parametrize("path", [(), ("cache",)], ids=["nsysql", "cache"])
def test_command_lists_show_each_first_sentence_whole(path):
    """Click cuts each command's description at the terminal's width with `...`; the lists show it whole."""
    group = typer.main.get_command(app)
    for name in path:
        group = group.commands[name]
    shown = _flat(_help(path))
    for name, cmd in group.commands.items():
        first = _flat(cmd.get_short_help_str(limit=1 << 16))
        assert f"{name} {first}" in shown, name
