"""`nsysql mcp`'s server: the tools of nsysql/cli/mcp_tools.py and the docs as resources, over stdio, on the
official MCP SDK's low-level server (the `mcp` extra). Read-only: every tool runs a command that reads exports
(and, as any command does, writes the cache of normalized exports); no tool writes a file the caller names."""
from __future__ import annotations

import json
import re
from pathlib import Path

import anyio
import mcp_types as types
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from nsysql import __version__
from nsysql.cli import mcp_tools

# the docs pages served as resources: name -> (file under docs/, what it says)
PAGES = {
    "findings": ("findings.md", "Findings: what each rule looks for, its recoverable-time formula, its evidence"),
    "sql-reference": ("sql-reference.md", "SQL reference: every table, view and query, each column's type and unit"),
    "steps": ("steps.md", "What a step is: how nsysql finds the steps, and which are warm-up"),
    "overview": ("overview.md", "The overview's figures: step time breakdown, utilization, SM efficiency"),
    "critical-path": ("critical-path.md", "The critical path and what-if: what bounds each step, the replay"),
    "ci": ("ci.md", "diff as a regression gate: the verdict's rules, the metrics, the JSON keys"),
}
QUERY_TEMPLATE = "nsysql://query/{id}"
INSTRUCTIONS = (
    "Exact answers about where the GPU time went in Nsight Systems exports (.nsys-rep, .sqlite, .sqlite.xz, "
    "parquetdir or arrowdir), each tool a read-only nsysql command answering with its JSON. Start with `summarize` "
    "or `findings`; `steps`, `layers`, `kernels`, `comm`, `critical_path`, `what_if` go deeper; `sql` runs one "
    "read-only SELECT ($name values in `param` as name=value); `diff` compares two runs (with `fail_above`, a "
    "verdict). Give export paths as the server's file system has them (absolute ones are safest). Lists are cut at "
    "`limit` rows; `truncated` says so. The resources explain every column (nsysql://docs/sql-reference, or one "
    "query: nsysql://query/analysis.steps) and every finding (nsysql://docs/findings).")


def docs_dir() -> Path | None:
    """The docs pages: beside the package in a checkout, inside it in an installed wheel (pyproject: nsysql.docs)."""
    import nsysql
    here = Path(nsysql.__file__).resolve().parent
    for d in (here / "docs", here.parent / "docs"):
        if (d / "findings.md").is_file():
            return d
    return None


def query_page(query_id: str) -> str:
    """One catalog query's header as Markdown: what its rows are, its parameters, notes and columns."""
    from nsysql.sql import catalog
    queries = catalog.all_queries()
    if query_id not in queries:
        raise MCPError(types.INVALID_PARAMS, f"Error: no query {query_id!r}; nsysql://docs/sql-reference lists them")
    q = queries[query_id]
    lines = [f"# {q.id} (v{q.version})", "", q.purpose, ""]
    if q.requires:
        lines += ["Requires: " + ", ".join(q.requires) + ".", ""]
    if q.params:
        lines += ["Parameters: " + " ".join(q.meta["params"].split()), ""]
    if q.meta.get("notes"):
        lines += ["Notes: " + " ".join(q.meta["notes"].split()), ""]
    lines += ["| column | type | unit |", "|---|---|---|"]
    lines += [f"| {c.name} | {c.type} | {c.unit} |" for c in q.columns]
    return "\n".join(lines) + "\n"


def build(server_options: list[str]) -> Server:
    tools = {t.name: t for t in mcp_tools.tools()}
    docs = docs_dir()

    async def list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[
            types.Tool(name=t.name, title=f"nsysql {t.command}", description=t.description, input_schema=t.schema,
                       annotations=types.ToolAnnotations(read_only_hint=True, destructive_hint=False,
                                                         idempotent_hint=True, open_world_hint=False))
            for t in tools.values()])

    async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        tool = tools.get(params.name)
        if tool is None:
            raise MCPError(types.INVALID_PARAMS, f"Error: no tool {params.name!r}; the tools: {', '.join(tools)}")
        # one call at a time, in this thread: the command takes stdout and stderr while it runs
        answer = mcp_tools.call(tool, params.arguments, server_options)
        if not answer.ok:
            return types.CallToolResult(content=[types.TextContent(type="text", text=answer.text)], is_error=True)
        text = json.dumps(answer.envelope, ensure_ascii=False)
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                    structured_content=answer.envelope)

    async def list_resources(ctx, params) -> types.ListResourcesResult:
        pages = [] if docs is None else [(n, f, w) for n, (f, w) in PAGES.items() if (docs / f).is_file()]
        return types.ListResourcesResult(resources=[
            types.Resource(name=name, uri=f"nsysql://docs/{name}", description=what, mime_type="text/markdown")
            for name, _, what in pages])

    async def list_templates(ctx, params) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[types.ResourceTemplate(
            name="query", uri_template=QUERY_TEMPLATE, mime_type="text/markdown",
            description="One query of the catalog (`analysis.steps`, `reports.cuda_gpu_kern_sum`, "
                        "`findings.sync_in_step`): its rows, parameters, notes and each column's type and unit")])

    async def read_resource(ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = str(params.uri)
        page = re.fullmatch(r"nsysql://docs/([\w-]+)", uri)
        query = re.fullmatch(r"nsysql://query/([\w.]+)", uri)
        if page and page[1] in PAGES and docs is not None and (docs / PAGES[page[1]][0]).is_file():
            text = (docs / PAGES[page[1]][0]).read_text(encoding="utf-8")
        elif query:
            text = query_page(query[1])
        else:
            raise MCPError(types.INVALID_PARAMS, f"Error: no resource {uri}; resources/list names them")
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, mime_type="text/markdown",
                                                                             text=text)])

    return Server("nsysql", version=__version__, title="nsysql", instructions=INSTRUCTIONS,
                  on_list_tools=list_tools, on_call_tool=call_tool, on_list_resources=list_resources,
                  on_list_resource_templates=list_templates, on_read_resource=read_resource)


def serve(server_options: list[str]) -> None:
    """Serve on stdin/stdout until the client closes them."""
    server = build(server_options)

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)
