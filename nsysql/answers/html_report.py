"""summarize's answer as one self-contained HTML page (`nsysql html`, `Export.html`, `summarize --open`).

The page embeds `summarize -f json --full`'s document (the data every chart and table shows, so the numbers are
summarize's), the timelines of a few analysed steps (the median one first; nsysql/answers/tracedata.py), and its own
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

from nsysql.answers import html_path, tracedata
from nsysql.errors import NsysqlError

ASSETS = Path(__file__).with_name("report_assets")
TOP = 10  # rows of each top-N table
MAX_STEPS = 8  # step timelines embedded (the median first): each a few thousand ops at most
DIRECTIONS = ("fprop", "bprop", "optim", "comm", "other")


def build(exports: list, *, title: str | None = None) -> dict:
    """Everything the page shows: {"summary": summarize's JSON, "timeline": {...}, "commands": {...}}."""
    from nsysql.answers import summary
    if len(exports) == 1:
        result = summary.build_summary(exports[0], top=TOP, full=True)
    else:
        from nsysql.answers import job_views
        result = job_views.summary(exports, title or f"{len(exports)} exports of one job")
    doc = json.loads(json.dumps(summary.to_json(result, TOP), default=str))  # exactly what -f json prints
    names = [str(ex.path) for ex in exports]
    return {"summary": doc, "timeline": timelines(exports), "exports": names,
            "command": "nsysql summarize " + " ".join(_quote(n) for n in names),
            "critical_path": html_path.section(exports), "recipes": recipe_charts(exports)}


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


def timelines(exports: list) -> dict:
    """The steps to draw (the median step first, then the others by number, MAX_STEPS in all) with their events:
    per step the rows (a thread's NVTX levels and its CUDA API calls, a GPU stream) and the bars on them."""
    table = tracedata.steps_on_clock(exports)
    chosen = table.filter(pl.col("analysed")) if table["analysed"].any() else table
    if chosen.is_empty():  # no steps and no GPU work (a CPU-only capture): the whole capture, if anything is in it
        win = exports[0].run("analysis._plot_window", start_ms=None, end_ms=None).row(0, named=True)
        if win["origin_ns"] is None:
            return {"steps": [], "median": None}
        whole = _step_events(exports, 0, "the whole capture", int(win["from_ns"]), int(win["to_ns"]),
                             int(win["origin_ns"]))
        return {"steps": [whole], "median": 0, "gpu_span": False}
    per_step = (chosen.group_by("step").agg(pl.col("start_ns").min(), pl.col("end_ns").max(),
                                           pl.col("wall_ns").mean().alias("wall"), pl.col("name").first())
                .sort("step"))
    by_wall = per_step.sort("wall", "step")
    median = int(by_wall["step"][(by_wall.height - 1) // 2])
    numbers = [median] + [s for s in per_step["step"].to_list() if s != median][:MAX_STEPS - 1]
    origin = tracedata.origin_of(exports[0])
    steps = []
    for number in sorted(numbers):
        row = per_step.filter(pl.col("step") == number).row(0, named=True)
        steps.append(_step_events(exports, number, row["name"], int(row["start_ns"]), int(row["end_ns"]), origin))
        if len(exports) == 1:  # the step's critical path over its timeline ("What bounds the step")
            steps[-1]["path"] = html_path.overlay(exports[0], number, int(row["start_ns"]), steps[-1]["rows"])
    return {"steps": steps, "median": median, "gpu_span": bool(chosen["source"][0] == "gpu_span")}


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


def render(data: dict) -> str:
    """The page: the template with the styles, the script, Plotly and the data inline."""
    page = (ASSETS / "report.html").read_text(encoding="utf-8")
    title = data["summary"].get("export", "nsysql report")
    parts = {
        "{{TITLE}}": _html_escape(f"nsysql: {title}"),
        "{{CSS}}": (ASSETS / "report.css").read_text(encoding="utf-8"),
        "{{PLOTLY_GZ}}": plotly_gz_base64(),
        "{{DATA}}": _script_json(data),
        "{{JS}}": (ASSETS / "report.js").read_text(encoding="utf-8"),
    }
    import re  # one pass over the template: a value (the data) is never searched for placeholders
    return re.sub(r"\{\{([A-Z_]+)\}\}", lambda m: parts["{{" + m[1] + "}}"], page)


def write(exports: list, output: str | Path, *, title: str | None = None) -> Path:
    output = Path(output)
    if output.suffix.lower() not in (".html", ".htm"):
        raise NsysqlError(f"{output}: name the page .html")
    text = render(build(exports, title=title))
    output.write_text(text, encoding="utf-8")
    return output


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
