"""summarize's answer as one self-contained HTML page (`nsysql html`, `Export.html`, `summarize --open`).

The page embeds `summarize -f json --full`'s document (the data every chart and table shows, so the numbers are
summarize's), a row per step, the timelines of the steps nsysql/answers/html_steps.py chooses (each a compressed
block inflated when it is drawn; the events from nsysql/answers/tracedata.py), and its own
script, styles and charting library inline: it opens from file:// with no network. The charts are Plotly's
(plotly.min.js from the `plotly` pip package, gzip-compressed and base64-encoded into the page, decompressed by
the browser's DecompressionStream: 1.9 MB instead of 4.8; docs/decisions.md has the measurement).
"""
from __future__ import annotations

import base64
import gzip
import importlib.util
import json
from functools import lru_cache
from pathlib import Path

import polars as pl

from nsysql.answers import html_path, html_steps, tracedata
from nsysql.errors import NsysqlError

ASSETS = Path(__file__).with_name("report_assets")
TOP = 10  # rows of each top-N table
DIRECTIONS = ("fprop", "bprop", "recompute", "optim", "comm", "other")


def build(exports: list, *, title: str | None = None, steps: str | None = None) -> tuple[dict, list[tuple[int, str]]]:
    """Everything the page shows: ({"summary": summarize's JSON, "timeline": the steps and which are carried, ...},
    the carried steps' timeline blocks). `steps`: which steps get a timeline (html_steps.parse; None: the default)."""
    timeline, blocks = timelines(exports, steps)  # first: a bad `steps=` fails before the long work
    from nsysql.answers import summary
    if len(exports) == 1:
        result = summary.build_summary(exports[0], top=TOP, full=True)
    else:
        from nsysql.answers import job_views
        result = job_views.summary(exports, title or f"{len(exports)} exports of one job")
    doc = json.loads(json.dumps(summary.to_json(result, TOP), default=str))  # exactly what -f json prints
    names = [str(ex.path) for ex in exports]
    return {"summary": doc, "timeline": timeline, "exports": names,
            "command": "nsysql summarize " + " ".join(_quote(n) for n in names),
            "critical_path": html_path.section(exports), "recipes": recipe_charts(exports)}, blocks


def recipe_charts(exports: list) -> dict:
    """The step range's pace and the GPU time utilization heatmap as NVIDIA's recipes compute them over these
    exports (nsysql/answers/recipes.py: `nvtx_pace --name <the step range>`, `cuda_gpu_time_util_map`, 30 bins):
    {"pace": per rank each step's duration, delta and outlier mark, or None where the steps are no NVTX range;
    "util": rank/device/PID rows of bins, or None without kernels}."""
    from nsysql.answers import recipes
    by_path = {ex.path: ex for ex in exports}
    paths = list(by_path)
    labels = [str(i) for i in range(len(paths))]

    def run(recipe_name: str, /, **options):
        try:
            return recipes.run(recipe_name, paths, labels, by_path.__getitem__, recipes.Options(**options),
                               on_skip=lambda *_: None, close=False)
        except NsysqlError:
            return None

    pace = None
    steps = exports[0].steps()
    ranged = steps.filter(pl.col("source") == "range")
    if ranged.height:
        step_name = ranged["name"][0]
        result = run("nvtx_pace", name=step_name)
        if result is not None:
            people, _ = result.people()
            pace = {"name": step_name, "ranks": result.files, "median_ns": result.stats["median_ns"][0]
                    if result.stats is not None else None,
                    "rows": [{"iteration": mine["iteration"].to_list(), "duration_ns": mine["duration_ns"].to_list(),
                              "delta_ns": mine["delta_ns"].to_list(), "outlier": mine["outlier"].to_list()}
                             for mine in (people.filter(pl.col("rank") == k) for k in range(len(result.files)))]}
    util = None
    result = run("cuda_gpu_time_util_map")
    if result is not None:
        rows = result.rows
        keys = rows.select("rank", "device_id", "pid").unique(maintain_order=True).rows()
        util = {"bin_ns": result.bin_size, "ranks": result.files,
                "labels": [f"{r}/{d}/{p}" for r, d, p in keys],
                "z": [rows.filter((pl.col("rank") == r) & (pl.col("device_id") == d) & (pl.col("pid") == p))
                      ["kernel_pct"].to_list() for r, d, p in keys]}
    return {"pace": pace, "util": util}


def timelines(exports: list, steps: str | None = None) -> tuple[dict, list[tuple[int, str]]]:
    """The page's timeline: ({"steps": a compact row per step, "first", "median", "gpu_span", "chosen", "left_out"},
    [(step, its block: html_steps.pack of its rows and bars)] for the steps carried). `steps`: `--steps`' text (None:
    the default choice, html_steps says which)."""
    chosen_spec = html_steps.parse(steps)
    table = tracedata.steps_on_clock(exports)
    has_steps = not table.is_empty() and bool((table["source"] != "gpu_span").any())
    if chosen_spec is not None and not has_steps:
        raise NsysqlError(f"`steps={steps}`: {exports[0].path.name} has no steps (see `nsysql steps`)")
    if table.is_empty():  # no steps and no GPU work (a CPU-only capture): the whole capture, if anything is in it
        win = exports[0].run("analysis._plot_window", start_ms=None, end_ms=None).row(0, named=True)
        if win["origin_ns"] is None:
            return {"steps": [], "first": None, "median": None, "gpu_span": False, "left_out": []}, []
        whole = _step_events(exports, 0, "the whole capture", int(win["from_ns"]), int(win["to_ns"]),
                             int(win["origin_ns"]))
        row = _catalog_row(whole, analysed=True)
        return ({"steps": [dict(row, carried=True)], "first": 0, "median": None, "gpu_span": False, "left_out": []},
                [(0, html_steps.pack(whole))])
    per_step = (table.group_by("step").agg(pl.col("start_ns").min(), pl.col("end_ns").max(),
                                          pl.col("wall_ns").mean().alias("wall"), pl.col("name").first(),
                                          pl.col("analysed").any())
                .sort("step"))
    order, median = html_steps.candidates(per_step, chosen_spec)
    origin = tracedata.origin_of(exports[0])
    blocks: list[tuple[int, str]] = []
    used = 0
    for number in order:
        row = per_step.filter(pl.col("step") == number).row(0, named=True)
        step = _step_events(exports, number, row["name"], int(row["start_ns"]), int(row["end_ns"]), origin)
        if len(exports) == 1:  # the step's critical path over its timeline ("What bounds the step")
            step["path"] = html_path.overlay(exports[0], number, int(row["start_ns"]), step["rows"])
        block = html_steps.pack(html_steps.clip(step))
        if chosen_spec is None and blocks and used + len(block) > html_steps.BUDGET:
            break  # the default choice stays bounded; the steps left out are listed with the --steps to get them
        blocks.append((number, block))
        used += len(block)
    carried = {n for n, _ in blocks}
    rows = [{"step": int(r["step"]), "name": r["name"], "wall_ns": int(r["wall"]), "analysed": bool(r["analysed"]),
             "from_ms": (int(r["start_ns"]) - origin) / 1e6, "carried": int(r["step"]) in carried}
            for r in per_step.iter_rows(named=True)]
    return ({"steps": rows, "first": order[0] if order else None, "median": median,
             "gpu_span": not has_steps, "chosen": None if chosen_spec is None else steps,
             "left_out": [r["step"] for r in rows if not r["carried"]]}, blocks)


def _catalog_row(step: dict, *, analysed: bool) -> dict:
    return {"step": step["step"], "name": step["name"], "wall_ns": step["wall_ns"], "analysed": analysed,
            "from_ms": step["from_ms"]}


def _step_events(exports: list, number: int, name: str, lo: int, hi: int, origin: int) -> dict:
    strings: dict[str, int] = {}

    def sid(text) -> int:
        return strings.setdefault("" if text is None else str(text), len(strings))

    rows: list[dict] = []
    bars: dict[str, list] = {k: [] for k in ("row", "s", "d", "kind", "name", "layer", "launch", "op")}

    def add(row: int, start: int, end: int, kind: str, name, layer=None, launch=None, op=None) -> None:
        bars["row"].append(row)
        bars["s"].append(start - lo)
        bars["d"].append(end - start)
        bars["kind"].append(kind)
        bars["name"].append(sid(name))
        bars["layer"].append(sid(layer))
        bars["launch"].append(sid(launch))
        bars["op"].append(sid(op))

    several = len(exports) > 1
    for ex in exports:
        ev = tracedata.gather(ex, lo, hi)
        who = f"{ex.path.parent.name or ex.path.name} " if several else ""
        threads = (pl.concat([ev.ranges.select("pid", "tid", "thread_name"), ev.calls.select("pid", "tid", "thread_name")])
                   .unique(["pid", "tid"]).sort("pid", "tid"))
        for pid, tid, thread_name in threads.iter_rows():
            thread = f"{who}{thread_name} ({tid})"
            mine = ev.ranges.filter((pl.col("pid") == pid) & (pl.col("tid") == tid))
            levels = _levels(mine)
            base = len(rows)
            for level in range(max(levels, default=-1) + 1):
                rows.append({"label": f"{thread} NVTX" + (f" {level + 1}" if level else ""), "kind": "nvtx",
                             "track": ["thread", pid, tid]})
            for r, level in zip(mine.iter_rows(named=True), levels):
                add(base + level, r["start_ns"], r["end_ns"], "marker" if r["is_op_marker"] else "range", r["text"])
            calls = ev.calls.filter((pl.col("pid") == pid) & (pl.col("tid") == tid))
            if calls.height:
                rows.append({"label": f"{thread} CUDA API", "kind": "api", "track": ["thread", pid, tid]})
                for c in calls.iter_rows(named=True):
                    add(len(rows) - 1, c["start_ns"], c["end_ns"], "api", c["name"])
        for (device, stream), ops in ev.ops.group_by(["device_id", "stream_id"], maintain_order=True):
            rows.append({"label": f"{who}GPU {device} stream {stream}", "kind": "gpu",
                         "track": ["gpu", device, stream]})
            for o in ops.iter_rows(named=True):
                kind = "copy" if o["op_kind"] in ("memcpy", "memset") else o["direction"]
                launch = f"{o['launch_api']} (tid {o['launch_tid']})" if o["launch_api"] else None
                add(len(rows) - 1, o["start_ns"], o["end_ns"], kind, o["name"], o["layer"], launch, o["op"])
    return {"step": number, "name": name, "from_ms": (lo - origin) / 1e6, "wall_ns": hi - lo,
            "gpu_ops": sum(1 for k in bars["kind"] if k in DIRECTIONS or k == "copy"),
            "rows": rows, "bars": bars, "strings": list(strings)}


def _levels(ranges: pl.DataFrame) -> list[int]:
    """A row per range of one thread: nested push/pop ranges by depth among those shown; the others (start/end,
    ended on another thread) on the first level where they overlap nothing drawn yet."""
    ends: list[int] = []  # per level, the end of its latest range
    out = []
    for r in ranges.sort("start_ns", "depth").iter_rows(named=True):
        level = next((i for i, e in enumerate(ends) if e <= r["start_ns"]), len(ends))
        if level == len(ends):
            ends.append(r["end_ns"])
        else:
            ends[level] = r["end_ns"]
        out.append(level)
    # iter order above is by start; give the levels back in the frame's own row order
    order = ranges.with_row_index("i").sort("start_ns", "depth")["i"].to_list()
    back = [0] * len(out)
    for pos, i in enumerate(order):
        back[i] = out[pos]
    return back


def render(data: dict, blocks: list[tuple[int, str]] | None = None) -> str:
    """The page: the template with the styles, the script, Plotly, the data and the steps' timeline blocks inline."""
    page = (ASSETS / "report.html").read_text(encoding="utf-8")
    title = data["summary"].get("export", "nsysql report")
    parts = {
        "{{TITLE}}": _html_escape(f"nsysql: {title}"),
        "{{CSS}}": (ASSETS / "report.css").read_text(encoding="utf-8"),
        "{{PLOTLY_GZ}}": plotly_gz_base64(),
        "{{DATA}}": _script_json(data),
        "{{TIMELINES}}": "\n".join(f'<script id="timeline-{n}" type="text/plain">{b}</script>' for n, b in blocks or []),
        "{{JS}}": (ASSETS / "report.js").read_text(encoding="utf-8"),
    }
    import re  # one pass over the template: a value (the data) is never searched for placeholders
    return re.sub(r"\{\{([A-Z_]+)\}\}", lambda m: parts["{{" + m[1] + "}}"], page)


def write(exports: list, output: str | Path, *, title: str | None = None, steps: str | None = None) -> Path:
    return write_page(exports, output, title=title, steps=steps)[0]


def write_page(exports: list, output: str | Path, *, title: str | None = None,
               steps: str | None = None) -> tuple[Path, dict]:
    """The page written, and its timeline's facts (which steps it carries, which it left out)."""
    output = Path(output)
    if output.suffix.lower() not in (".html", ".htm"):
        raise NsysqlError(f"{output}: name the page .html")
    data, blocks = build(exports, title=title, steps=steps)
    output.write_text(render(data, blocks), encoding="utf-8")
    return output, data["timeline"]


@lru_cache(maxsize=1)
def plotly_gz_base64() -> str:
    """plotly.min.js of the installed `plotly` package, gzip-compressed, base64 (the package is found, not imported:
    importing plotly's Python side costs time and nothing here needs it)."""
    spec = importlib.util.find_spec("plotly")
    if spec is None or not spec.submodule_search_locations:
        raise NsysqlError("the plotly package is missing (it ships the page's charting library): pip install plotly")
    path = Path(list(spec.submodule_search_locations)[0]) / "package_data" / "plotly.min.js"
    if not path.exists():
        raise NsysqlError(f"{path} is missing: reinstall plotly (pip install --force-reinstall plotly)")
    return base64.b64encode(gzip.compress(path.read_bytes(), compresslevel=9, mtime=0)).decode("ascii")


def _script_json(data: dict) -> str:
    """JSON safe inside <script type="application/json">: no `</` can close the element."""
    return json.dumps(data, separators=(",", ":"), default=str).replace("</", "<\\/").replace("<!--", "<\\!--")


def _html_escape(text: str) -> str:
    import html
    return html.escape(text)


def _quote(text: str) -> str:
    import shlex
    return shlex.quote(text)
