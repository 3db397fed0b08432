"""The tools of `nsysql mcp` (docs/agents.md), made from the command line itself, without the MCP SDK.

Each tool is a command of `nsysql`: its name (`critical_path` for `critical-path`), its description (the command's
line in the command catalog, nsysql/cli/index.py, then its `--help` text) and its input schema (the command's
arguments and options, their help and defaults) are read from the click command, so the tools change when the
commands do. A call runs the command in this process as a user would type it, with `-f json`, and answers with its
JSON: the same numbers, the same caching, the same one-line errors. Lists in the answer are cut at `limit` rows
(`truncated` and `lengths` say where), so that an agent's context is not flooded.
"""
from __future__ import annotations

import functools
import io
import json
import shlex
import sys
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from typing import Any

from nsysql.cli.index import GROUPS

# the commands served, in the order the tools are listed: what an agent asks about an export, read-only
COMMANDS = ("summarize", "findings", "steps", "layers", "kernels", "comm", "critical-path", "what-if", "report", "sql",
            "diff")
# options the server sets itself (how the answer is written, where the cache is) or that would act outside it
SERVER_SET = {"fmt", "text_fmt", "output", "wide", "open_page", "cache_dir", "no_cache", "nsys", "debug"}
DEFAULT_LIMIT, MAX_LIMIT = 50, 1000
OK_EXITS = (0, 3)  # 3: `diff --fail-above` found a regression, which its answer says


class ToolInputError(Exception):
    """A call whose arguments do not fit the tool (one line, as the command line says it)."""


@dataclass
class Tool:
    name: str
    command: str
    description: str
    schema: dict
    params: list = field(default_factory=list)  # the click parameters a call may set, in the command's order


@functools.lru_cache(maxsize=1)
def _root():
    import typer.main

    from nsysql.cli.app import app
    return typer.main.get_command(app)


def catalog_line(command: str) -> str:
    """The command's one line in `nsysql --help` (nsysql/cli/index.py)."""
    return next(line for _, rows in GROUPS for name, line in rows if name == command)


def _paragraphs(text: str) -> str:
    """A docstring's paragraphs, each on one line (the help text rewrapped as `--help` rewraps it)."""
    return "\n\n".join(" ".join(p.split()) for p in text.replace("\b", "").split("\n\n") if p.strip())


def _schema_of(param) -> dict:
    """The JSON schema of one click parameter's value."""
    kind = param.type.name if hasattr(param.type, "name") else str(param.type)
    if getattr(param, "is_flag", False):
        one: dict[str, Any] = {"type": "boolean"}
    elif "int" in kind:
        one = {"type": "integer"}
        if getattr(param.type, "min", None) is not None:
            one["minimum"] = param.type.min
        if getattr(param.type, "max", None) is not None:
            one["maximum"] = param.type.max
    elif "float" in kind:
        one = {"type": "number"}
        if getattr(param.type, "min", None) is not None:
            one["minimum"] = param.type.min
    elif kind == "choice":
        one = {"type": "string", "enum": [str(c) for c in param.type.choices]}
    else:
        one = {"type": "string"}
    many = param.nargs == -1 or getattr(param, "multiple", False)
    out: dict[str, Any] = {"type": "array", "items": one} if many else dict(one)
    if param.nargs == -1 and param.required:
        out["minItems"] = 1
    help_text = " ".join((getattr(param, "help", None) or "").split())
    if help_text:
        out["description"] = help_text
    default = param.default.value if hasattr(param.default, "value") else param.default
    if default not in (None, (), []) and not callable(default) and not many:
        out["default"] = default
    return out


def tools() -> list[Tool]:
    """Every tool, from the commands of COMMANDS as the command line has them now."""
    root = _root()
    found = []
    for command in COMMANDS:
        cmd = root.commands[command]
        params = [p for p in cmd.params if p.name not in SERVER_SET]
        props = {p.name: _schema_of(p) for p in params}
        props["limit"] = {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT,
                          "description": "Rows kept of each list in the answer (`truncated` says when more were "
                                         "left out; `lengths` gives the full length of each list cut)."}
        required = [p.name for p in params if p.required]
        schema = {"type": "object", "properties": props, "required": required, "additionalProperties": False}
        name = command.replace("-", "_")
        description = (f"{catalog_line(command)}.\n\n{_paragraphs(cmd.help or '')}\n\n"
                       f"Answers with the JSON that `nsysql {command} ... -f json` prints (every value exact: "
                       "`_ns` columns in nanoseconds), lists cut at `limit` rows.")
        found.append(Tool(name, command, description, schema, params))
    return found


def _check(tool: Tool, name: str, value: Any, schema: dict) -> None:
    """One argument against its schema; a mismatch is one line naming the argument."""
    want = schema["type"]
    ok = {"boolean": lambda v: isinstance(v, bool),
          "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
          "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
          "string": lambda v: isinstance(v, str),
          "array": lambda v: isinstance(v, list)}[want]
    if not ok(value):
        article = "an" if want[0] in "aeiou" else "a"
        raise ToolInputError(f"Error: the {tool.name} tool's `{name}` takes {article} {want}, not {json.dumps(value)}")
    if want == "array":
        for item in value:
            _check(tool, name, item, schema["items"])


def argv(tool: Tool, arguments: dict | None) -> tuple[list[str], int]:
    """The command line a call stands for (`-f json` added by the caller), and its row limit."""
    arguments = dict(arguments or {})
    props = tool.schema["properties"]
    unknown = sorted(set(arguments) - set(props))
    if unknown:
        raise ToolInputError(f"Error: the {tool.name} tool takes no argument {unknown[0]!r}; it takes "
                             f"{', '.join(props)}")
    for name, value in arguments.items():
        if value is not None:
            _check(tool, name, value, props[name])
    missing = [n for n in tool.schema["required"] if arguments.get(n) in (None, [])]
    if missing:
        raise ToolInputError(f"Error: the {tool.name} tool needs `{missing[0]}`")
    limit = arguments.pop("limit", None)
    limit = DEFAULT_LIMIT if limit is None else limit
    if not 1 <= limit <= MAX_LIMIT:
        raise ToolInputError(f"Error: the {tool.name} tool's `limit` takes 1 to {MAX_LIMIT} rows, not {limit}")
    options: list[str] = []
    positional: list[str] = []
    for p in tool.params:
        value = arguments.get(p.name)
        if value is None:
            continue
        if p.param_type_name == "argument":
            positional += [str(v) for v in value] if isinstance(value, list) else [str(value)]
            continue
        flag = next((o for o in p.opts if o.startswith("--")), p.opts[0])
        if getattr(p, "is_flag", False):
            if value:
                options.append(flag)
            elif p.secondary_opts:
                options.append(p.secondary_opts[0])
        elif isinstance(value, list):
            for item in value:
                options += [flag, str(item)]
        else:
            options += [flag, str(value)]
    return [tool.command, *options, "--", *positional], limit  # `--`: SQL may start with `--`, a path with `-`


def bound(answer: Any, limit: int, path: str = "$", lengths: dict | None = None) -> tuple[Any, dict]:
    """`answer` with every list cut at `limit` items, and {JSON path: full length} of the lists cut."""
    lengths = {} if lengths is None else lengths
    if isinstance(answer, list):
        if len(answer) > limit:
            lengths[path] = len(answer)
        return [bound(v, limit, f"{path}[{i}]", lengths)[0] for i, v in enumerate(answer[:limit])], lengths
    if isinstance(answer, dict):
        return {k: bound(v, limit, f"{path}.{k}", lengths)[0] for k, v in answer.items()}, lengths
    return answer, lengths


@dataclass
class Answer:
    ok: bool
    text: str  # the error's line when not ok
    envelope: dict | None = None


def call(tool: Tool, arguments: dict | None, server_options: list[str]) -> Answer:
    """Run the tool's command in this process (the caller serializes calls: the command line's stdout and stderr
    are taken for the call's duration) and wrap its JSON."""
    try:
        words, limit = argv(tool, arguments)
    except ToolInputError as exc:
        return Answer(False, str(exc))
    shown = shlex.join(["nsysql", *[w for w in words if w != "--"], "-f", "json"])
    code, out, err = run_command([*words[:words.index("--")], "-f", "json", *server_options,
                                  *words[words.index("--"):]])
    lines = [line for line in err.splitlines() if line.strip()]
    if code not in OK_EXITS:
        said = [line for line in lines if line.startswith("Error:")] or lines[-1:] or [f"Error: exit status {code}"]
        return Answer(False, said[0])
    try:
        answer = json.loads(out)
    except ValueError:
        return Answer(False, f"Error: `{shown}` printed no JSON")
    cut, lengths = bound(answer, limit)
    envelope = {"command": shown, "exit_code": code, "truncated": bool(lengths), "lengths": lengths,
                "notes": [line for line in lines if not line.startswith("Error:")], "answer": cut}
    return Answer(True, "", envelope)


def run_command(words: list[str]) -> tuple[int, str, str]:
    """`nsysql WORDS...` in this process: (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    code: Any = 0
    with redirect_stdout(out), redirect_stderr(err):
        try:
            _root().main(args=words, prog_name="nsysql", standalone_mode=True)
        except SystemExit as end:
            code = end.code
    if code is None:
        code = 0
    if not isinstance(code, int):
        err.write(f"Error: {code}\n")
        code = 1
    sys.stdout.flush()
    return code, out.getvalue(), err.getvalue()
