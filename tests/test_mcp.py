"""`nsysql mcp` as an agent uses it: the MCP SDK's own client starts `python -m nsysql mcp` over stdio, lists the tools
and resources, calls every tool on fixtures, and each answer must equal what the command line prints with `-f json`
(cut at the call's `limit`); bad input must come back as the command line's one-line error.

The session tests need the `mcp` extra (in the test extra); without it they skip, unless NSYSQL_MCP=required (.ci/run
sets it), which turns the skip into a failure so that CI always runs them. The tool specs are checked without it."""
from __future__ import annotations

import asyncio
import json
import os
import sys

import pytest
import typer.main
from typer.testing import CliRunner

from nsysql.cli import mcp_tools
from nsysql.cli.app import app
from nsysql.cli.index import GROUPS

from conftest import FIXTURES, REPO

runner = CliRunner()
BASE, NOSYNC = "whatif-cnn-base", "whatif-cnn-nosync"
GPT, RANK0, RANK1 = "gpt-tiny-train-fp32", "ddp-2gpu-rank0", "ddp-2gpu-rank1"
NAMES = (BASE, NOSYNC, GPT, RANK0, RANK1)


def _fx(name: str) -> str:
    return str(FIXTURES / name / "export.sqlite.xz")


# (tool, arguments, the command line that must print the same JSON)
CALLS = [
    ("summarize", {"exports": [_fx(BASE)]}, ["summarize", _fx(BASE)]),
    ("findings", {"exports": [_fx(BASE)]}, ["findings", _fx(BASE)]),
    ("steps", {"exports": [_fx(BASE)]}, ["steps", _fx(BASE)]),
    ("layers", {"exports": [_fx(BASE)], "depth": 2}, ["layers", _fx(BASE), "--depth", "2"]),
    ("kernels", {"exports": [_fx(GPT)], "limit": 5}, ["kernels", _fx(GPT)]),
    ("comm", {"exports": [_fx(RANK0), _fx(RANK1)]}, ["comm", _fx(RANK0), _fx(RANK1)]),
    ("critical_path", {"exports": [_fx(BASE)], "step": 2}, ["critical-path", _fx(BASE), "--step", "2"]),
    ("what_if", {"exports": [_fx(BASE)], "scale": ["range:dataloader=0", "kernel:*gemm*=0.5"]},
     ["what-if", _fx(BASE), "--scale", "range:dataloader=0", "--scale", "kernel:*gemm*=0.5"]),
    ("report", {"name": "cuda_gpu_kern_sum", "exports": [_fx(BASE)], "limit": 10},
     ["report", "cuda_gpu_kern_sum", _fx(BASE)]),
    ("sql", {"exports": [_fx(BASE)], "query": "SELECT short_name, COUNT(*) AS n FROM kernel WHERE end_ns - start_ns > "
             "$min_ns GROUP BY 1 ORDER BY 2 DESC, 1", "param": ["min_ns=100000"], "limit": 3},
     ["sql", _fx(BASE), "SELECT short_name, COUNT(*) AS n FROM kernel WHERE end_ns - start_ns > $min_ns GROUP BY 1 "
      "ORDER BY 2 DESC, 1", "-p", "min_ns=100000"]),
    ("diff", {"export_a": _fx(NOSYNC), "export_b": _fx(BASE), "fail_above": "5%", "top": 5},
     ["diff", _fx(NOSYNC), _fx(BASE), "--fail-above", "5%", "--top", "5"]),
]
# (tool, arguments, the command line whose one-line error the tool must return)
BAD = [
    ("diff", {"export_a": _fx(NOSYNC), "export_b": _fx(BASE), "fail_above": "5x"},
     ["diff", _fx(NOSYNC), _fx(BASE), "--fail-above", "5x"]),
    ("diff", {"export_a": _fx(NOSYNC), "export_b": _fx(BASE), "fail_above": "5%", "metric": "kernels:*"},
     ["diff", _fx(NOSYNC), _fx(BASE), "--fail-above", "5%", "--metric", "kernels:*"]),
    ("sql", {"exports": [_fx(BASE)], "query": "DELETE FROM kernel"}, ["sql", _fx(BASE), "DELETE FROM kernel"]),
    ("sql", {"exports": [_fx(BASE)], "query": "SELECT $x AS x"}, ["sql", _fx(BASE), "SELECT $x AS x"]),
    ("layers", {"exports": [_fx(BASE)], "depth": -1}, ["layers", _fx(BASE), "--depth", "-1"]),
    ("report", {"name": "no_such_report", "exports": [_fx(BASE)]}, ["report", "no_such_report", _fx(BASE)]),
    ("steps", {"exports": ["/nonexistent/run.sqlite"]}, ["steps", "/nonexistent/run.sqlite"]),
]
# arguments that do not fit the tool's schema: refused before any command runs, one line
MISFIT = [
    ("steps", {"exports": [_fx(BASE)], "colour": "red"}, "Error: the steps tool takes no argument 'colour'"),
    ("steps", {"exports": _fx(BASE)}, "Error: the steps tool's `exports` takes an array"),
    ("layers", {"exports": [_fx(BASE)], "depth": "2"}, "Error: the layers tool's `depth` takes an integer"),
    ("diff", {"export_a": _fx(BASE)}, "Error: the diff tool needs `export_b`"),
    ("steps", {"exports": [_fx(BASE)], "limit": 5000}, "Error: the steps tool's `limit` takes 1 to 1000 rows"),
]


def _sdk():
    try:
        import mcp  # noqa: F401
    except ModuleNotFoundError:
        if os.environ.get("NSYSQL_MCP") == "required":
            pytest.fail("NSYSQL_MCP=required, but the MCP SDK is not installed (pip install '.[mcp]')")
        pytest.skip("the MCP SDK is not installed (pip install '.[mcp]'; NSYSQL_MCP=required makes this a failure)")


def cli(words, cache) -> tuple[int, str, str]:
    res = runner.invoke(app, [*words, "-f", "json", "--cache-dir", str(cache)])
    return res.exit_code, res.stdout, res.stderr


async def dialogue(cache) -> dict:
    """One client session: everything the tests below look at."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    env = {"PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p),
           "NSYSQL_AHEAD": "foreground", "COLUMNS": "80"}
    server = StdioServerParameters(command=sys.executable, args=["-m", "nsysql", "mcp", "--cache-dir", str(cache)],
                                   env=env, cwd=str(REPO))
    seen: dict = {"calls": [], "bad": [], "misfit": []}
    with open(os.devnull, "w") as quiet:
        async with stdio_client(server, errlog=quiet) as (read, write), ClientSession(read, write) as session:
            seen["init"] = await session.initialize()
            seen["tools"] = (await session.list_tools()).tools
            for name, args, _ in CALLS:
                seen["calls"].append(await session.call_tool(name, args))
            for name, args, _ in BAD:
                seen["bad"].append(await session.call_tool(name, args))
            for name, args, _ in MISFIT:
                seen["misfit"].append(await session.call_tool(name, args))
            seen["resources"] = (await session.list_resources()).resources
            seen["templates"] = (await session.list_resource_templates()).resource_templates
            seen["findings_page"] = await session.read_resource("nsysql://docs/findings")
            seen["query_page"] = await session.read_resource("nsysql://query/analysis.step_stats")
            try:
                await session.call_tool("no_such_tool", {})
            except Exception as exc:  # the SDK's MCPError: a protocol error, as the spec has it for unknown tools
                seen["unknown"] = exc
    return seen


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    missing = [n for n in NAMES if not (FIXTURES / n / "export.sqlite.xz").exists()]
    if missing:
        pytest.skip(f"fixtures absent: {', '.join(missing)}")
    return tmp_path_factory.mktemp("mcp-cache")


@pytest.fixture(scope="module")
def seen(cache):
    _sdk()
    return asyncio.run(asyncio.wait_for(dialogue(cache), timeout=600))


# -- without the SDK: what the tools are made of ---------------------------------------------------------------
def test_the_tools_are_the_commands():
    tools = {t.name: t for t in mcp_tools.tools()}
    assert list(tools) == ["summarize", "findings", "steps", "layers", "kernels", "comm", "critical_path", "what_if",
                           "report", "sql", "diff"]
    root = typer.main.get_command(app)
    lines = {name: line for _, rows in GROUPS for name, line in rows}
    for tool in tools.values():
        cmd = root.commands[tool.command]
        # the description: the catalog's line, then the command's own help, as `nsysql --help` and `CMD --help`
        assert tool.description.startswith(lines[tool.command] + ".\n\n")
        assert "\n\n" + " ".join(cmd.help.split("\n\n")[0].split()) + "\n\n" in tool.description
        expected = {p.name for p in cmd.params} - mcp_tools.SERVER_SET | {"limit"}
        assert set(tool.schema["properties"]) == expected
        assert set(tool.schema["required"]) == {p.name for p in cmd.params if p.required}
    assert tools["diff"].schema["properties"]["fail_above"]["type"] == "string"
    assert tools["what_if"].schema["properties"]["scale"]["type"] == "array"
    assert tools["layers"].schema["properties"]["depth"] == {**tools["layers"].schema["properties"]["depth"],
                                                             "type": "integer", "minimum": 0, "default": 0}


def test_arguments_become_the_command_line():
    tools = {t.name: t for t in mcp_tools.tools()}
    words, limit = mcp_tools.argv(tools["sql"], {"exports": ["a.sqlite"], "query": "-- note\nSELECT 1",
                                                 "param": ["x=1"], "limit": 7})
    assert words == ["sql", "--param", "x=1", "--", "a.sqlite", "-- note\nSELECT 1"] and limit == 7
    words, limit = mcp_tools.argv(tools["layers"], {"exports": ["a"], "merge_repeats": True, "depth": 1})
    assert words == ["layers", "--depth", "1", "--merge-repeats", "--", "a"] and limit == mcp_tools.DEFAULT_LIMIT


def test_bound_cuts_every_list():
    cut, lengths = mcp_tools.bound({"a": list(range(5)), "b": {"c": [[1, 2, 3]]}}, 2)
    assert cut == {"a": [0, 1], "b": {"c": [[1, 2]]}} and lengths == {"$.a": 5, "$.b.c[0]": 3}


def test_without_the_sdk_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "mcp", None)
    monkeypatch.delitem(sys.modules, "nsysql.cli.mcp_server", raising=False)
    res = runner.invoke(app, ["mcp"])
    assert res.exit_code == 1
    assert res.stderr == "Error: nsysql mcp needs the MCP SDK, which is not installed: pip install 'nsysql[mcp]'\n"


# -- a session of the SDK's client ---------------------------------------------------------------------------
def test_the_session_lists_every_tool(seen):
    assert seen["init"].server_info.name == "nsysql"
    listed = {t.name: t for t in seen["tools"]}
    made = {t.name: t for t in mcp_tools.tools()}
    assert list(listed) == list(made)
    for name, tool in listed.items():
        assert tool.description == made[name].description and tool.input_schema == made[name].schema
        assert tool.annotations.read_only_hint is True


@pytest.mark.parametrize("at", range(len(CALLS)), ids=[c[0] for c in CALLS])
def test_each_answer_equals_the_command_lines_json(seen, cache, at):
    name, args, words = CALLS[at]
    result = seen["calls"][at]
    assert not result.is_error, result.content[0].text
    envelope = json.loads(result.content[0].text)
    assert envelope == result.structured_content
    code, out, _ = cli(words, cache)
    assert code == envelope["exit_code"] and code in (0, 3)
    limit = args.get("limit", mcp_tools.DEFAULT_LIMIT)
    expected, lengths = mcp_tools.bound(json.loads(out), limit)
    assert envelope["answer"] == expected
    assert envelope["truncated"] == bool(lengths) and envelope["lengths"] == lengths
    assert envelope["command"].startswith(f"nsysql {words[0]} ") and envelope["command"].endswith(" -f json")


def test_long_answers_are_cut_and_say_so(seen, cache):
    kernels = json.loads(seen["calls"][[c[0] for c in CALLS].index("kernels")].content[0].text)
    assert kernels["truncated"] and len(kernels["answer"]) == 5 and list(kernels["lengths"]) == ["$"]
    assert kernels["lengths"]["$"] == 809 + 23  # every kernel, and the 23 copies (fixtures/README.md)
    diff = json.loads(seen["calls"][-1].content[0].text)["answer"]
    assert diff["verdict"] == "regression" and diff["exit_code"] == 3 and len(diff["rows"]) == 5
    assert diff["line"] == "step time +33.6 % (95 % interval +26.1 to +41.2 %, 8 vs 8 steps): regression"


@pytest.mark.parametrize("at", range(len(BAD)), ids=[f"{b[0]}-{i}" for i, b in enumerate(BAD)])
def test_bad_input_is_the_command_lines_one_line_error(seen, cache, at):
    _, _, words = BAD[at]
    result = seen["bad"][at]
    code, out, err = cli(words, cache)
    assert code == 1 and out == ""
    said = [line for line in err.splitlines() if line.startswith("Error:")]
    assert result.is_error and len(said) == 1
    assert [c.text for c in result.content] == said


@pytest.mark.parametrize("at", range(len(MISFIT)), ids=[f"{m[0]}-{i}" for i, m in enumerate(MISFIT)])
def test_arguments_that_do_not_fit(seen, at):
    result = seen["misfit"][at]
    assert result.is_error and len(result.content) == 1
    assert result.content[0].text.startswith(MISFIT[at][2]) and "\n" not in result.content[0].text


def test_an_unknown_tool_is_a_protocol_error(seen):
    assert "no tool 'no_such_tool'" in str(seen["unknown"])


def test_resources_are_the_docs(seen):
    uris = {str(r.uri) for r in seen["resources"]}
    assert {"nsysql://docs/findings", "nsysql://docs/sql-reference"} <= uris
    assert seen["findings_page"].contents[0].text == (REPO / "docs" / "findings.md").read_text(encoding="utf-8")
    page = seen["query_page"].contents[0].text
    assert page.startswith("# analysis.step_stats (v2)") and "| mean_ns | DOUBLE | ns |" in page
    assert [t.uri_template for t in seen["templates"]] == ["nsysql://query/{id}"]
