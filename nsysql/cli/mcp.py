"""`nsysql mcp`: an MCP server over stdio for coding agents (docs/agents.md): the answers of summarize, findings,
steps, layers, kernels, comm, critical-path, what-if, report, sql and diff as tools, the docs as resources. The
MCP SDK is the `mcp` extra, imported when the command runs."""
from __future__ import annotations

from pathlib import Path

import typer

from nsysql.cli.common import CacheDirOpt, DebugOpt, NoCacheOpt, NsysOpt, add_commands, user_errors
from nsysql.errors import NsysqlError


def mcp(
    cache_dir: CacheDirOpt = None,
    no_cache: NoCacheOpt = False,
    nsys: NsysOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Serve nsysql's answers to an MCP client (a coding agent) over stdin and stdout, read-only.

    Tools: summarize, findings, steps, layers, kernels, comm, critical_path, what_if, report, sql and diff, each the
    command of that name with its arguments and options, answering with its -f json output, lists cut at `limit`
    rows (50 unless the call asks for up to 1000; `truncated` says when), errors as the command's one line.
    Resources: the docs pages on findings, steps, the overview, the critical path and the gate, the SQL reference,
    and each query's columns (nsysql://query/ID). Register it with a client as the command `nsysql mcp`
    (docs/agents.md); it needs the MCP SDK: pip install 'nsysql[mcp]'."""
    with user_errors(debug):
        try:
            from nsysql.cli import mcp_server
        except ModuleNotFoundError as exc:
            if (exc.name or "").split(".")[0] not in ("mcp", "mcp_types", "anyio", "pydantic"):
                raise
            raise NsysqlError("nsysql mcp needs the MCP SDK, which is not installed: pip install 'nsysql[mcp]'") from None
        options: list[str] = []
        if cache_dir is not None:
            options += ["--cache-dir", str(Path(cache_dir))]
        if no_cache:
            options.append("--no-cache")
        if nsys is not None:
            options += ["--nsys", str(nsys)]
        mcp_server.serve(options)


def register(app: typer.Typer) -> None:
    add_commands(app, mcp=mcp)
