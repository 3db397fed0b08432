"""`--help` of every command shows every default, and its paragraphs rewrapped, not broken at the source's lines."""
from __future__ import annotations

import re

import pytest
import typer.main
from typer.testing import CliRunner

from nsysql.cli.app import app

from conftest import load_script

# every command in every format its help lists: minutes in all; dealt out first under xdist (conftest.py)
pytestmark = pytest.mark.heavy

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


@pytest.mark.parametrize("path", [("cache",)], ids=["cache"])
def test_command_lists_show_each_first_sentence_whole(path):
    """Click cuts each command's description at the terminal's width with `...`; the lists show it whole (but
    `nsysql --help`'s own: one line each, below)."""
    group = typer.main.get_command(app)
    for name in path:
        group = group.commands[name]
    shown = _flat(_help(path))
    for name, cmd in group.commands.items():
        first = _flat(cmd.get_short_help_str(limit=1 << 16))
        assert f"{name} {first}" in shown, name


# -- what --help lists is accepted ------------------------------------------------------------------------------
EXPORT = "ddp-2gpu-torchrun"  # two ranks with steps and NCCL's kernels: every command has rows to show
ARGS = {"report": ["cuda_gpu_kern_sum", "{p}"], "analyze": ["cuda_api_sync", "{p}"], "diff": ["{p}", "{p}"],
        "recipe": ["cuda_gpu_kern_hist", "{p}"],
        "sql": ["{p}", "SELECT 1 AS x"], "what-if": ["{p}", "--scale", "kernel:*=0.5"]}
EXPORT_OF = {"efficiency": "gpt-tiny-train-fp32"}  # recorded shapes
# no fixture has inference requests yet: the synthetic decode loop of scripts/make_program_shapes.py
SYNTHETIC_OF = {"requests": "decode_loop"}
FORMATTED = [(p, cmd) for p, cmd in COMMANDS if any("--format" in getattr(o, "opts", ()) for o in cmd.params)]


def _listed_formats(path) -> list[str]:
    """The formats `--help` lists for -f/--format (`-f, --format <table|csv|...>`)."""
    found = re.search(r"--format <([a-z|]+)>", _help(path))
    assert found, path
    return found.group(1).split("|")


@pytest.mark.parametrize("path, cmd", FORMATTED, ids=[" ".join(p) for p, _ in FORMATTED])
def test_every_format_the_help_lists_is_accepted(path, cmd, export_files, cache_dir, tmp_path):
    export = EXPORT_OF.get(path[0], EXPORT)
    if path[0] in SYNTHETIC_OF:
        case = getattr(load_script("scripts/make_program_shapes.py"), SYNTHETIC_OF[path[0]])
        p = str(case()[0].write(tmp_path / f"{SYNTHETIC_OF[path[0]]}.sqlite"))
    elif export not in export_files:
        pytest.skip(f"fixtures/{export} absent")
    else:
        p = str(export_files[export])
    argv = [*path, *[a.format(p=p) for a in ARGS.get(path[0], ["{p}"])], "--cache-dir", str(cache_dir)]
    for fmt in _listed_formats(path):
        out = tmp_path / f"out.{fmt}"
        res = runner.invoke(app, [*argv, "-f", fmt, "-o", str(out)], env={"COLUMNS": "100"})
        assert res.exit_code == 0, (fmt, res.output)
        assert out.stat().st_size > 0, fmt


def test_summarize_lists_only_what_it_prints():
    assert _listed_formats(("summarize",)) == ["table", "markdown", "json"]
    res = runner.invoke(app, ["summarize", "x.sqlite", "-f", "csv"])
    assert res.exit_code == 1 and "'csv' is not one of 'table', 'markdown', 'json'" in res.output


def test_plot_writes_every_suffix_its_help_lists(export_files, cache_dir, tmp_path):
    if EXPORT not in export_files:
        pytest.skip(f"fixtures/{EXPORT} absent")
    shown = _flat(_help(("plot",)))
    assert "export and rank columns" not in shown  # images have no rows
    suffixes = re.search(r"Image file; ((?:\.\w+, )*\.\w+ or \.\w+) picks the format", shown).group(1)
    for suffix in re.findall(r"\.(\w+)", suffixes):
        out = tmp_path / f"kernels.{suffix}"
        res = runner.invoke(app, ["plot", "kernels", str(export_files[EXPORT]), "-o", str(out), "--top", "5",
                                  "--cache-dir", str(cache_dir)])
        assert res.exit_code == 0 and out.stat().st_size > 0, (suffix, res.output)


def test_top_level_help_is_one_line_per_command_grouped():
    from nsysql.cli.index import GROUPS
    res = runner.invoke(app, ["--help"], env={"COLUMNS": "80"})
    lines = res.output.splitlines()
    assert all(len(line) <= 80 for line in lines)
    group = typer.main.get_command(app)
    for name in group.commands:
        at = [line for line in lines if line.split()[:1] == [name] and line.startswith("  ")]
        assert len(at) == 1, name  # listed once, on one line: the next line starts another command or group
        after = lines[lines.index(at[0]) + 1]
        assert not after.startswith("   "), (name, after)
    for heading, _ in GROUPS:
        assert f"{heading}:" in lines
    assert len(lines) < 64  # one tall screen: every command on one line, the options and the closing line
