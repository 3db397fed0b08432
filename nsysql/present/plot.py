"""Pictures of an export: a timeline, per-layer bars and the top kernels.

The data come from catalog queries (analysis.plot_*, steps, layers); this module only draws.
It uses matplotlib's object API on a bare `Figure` (the Agg canvas), never pyplot, so no display or
GUI backend is touched and nothing global changes.
"""
from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING

from nsysql.errors import NsysqlError

if TYPE_CHECKING:
    from nsysql.query.queries import Queries

FORMATS = (".png", ".svg", ".pdf")
# comm (NCCL's kernels): purple, apart from the blue, orange and green of the compute directions and the grey
DIRECTION_COLORS = {"fprop": "#4C72B0", "bprop": "#DD8452", "recompute": "#CCB974", "optim": "#55A868",
                    "comm": "#8172B3", "other": "#9A9A9A"}
DIRECTION_LABELS = {"fprop": "forward", "bprop": "backward", "recompute": "recompute (checkpointing)",
                    "optim": "optimizer", "comm": "communication (NCCL)", "other": "other / unknown"}
# Light qualitative colors (ColorBrewer Set3 + Pastel2) for NVTX range names, handed out in order of first
# appearance in the window, so the first 20 names all differ and one name keeps one color.
RANGE_PALETTE = ("#8DD3C7", "#FFFFB3", "#BEBADA", "#FB8072", "#80B1D3", "#FDB462", "#B3DE69", "#FCCDE5",
                 "#D9D9D9", "#BC80BD", "#CCEBC5", "#FFED6F", "#B3E2CD", "#FDCDAC", "#CBD5E8", "#F4CAE4",
                 "#E6F5C9", "#FFF2AE", "#F1E2CC", "#CCCCCC")
DPI = 120


# -- public entry points -------------------------------------------------------------------------
def timeline(ex: "Queries", output: str | Path, *, start_ms: float | None = None, end_ms: float | None = None,
             step: int | None = None, pid: int | None = None, op_markers: bool = False,
             critical_path: bool = False) -> Path:
    """NVTX ranges per thread above GPU ops per stream, for a window (ms since the capture's first event) or one step (of
    process `pid` where several processes have steps: each numbers its own). `critical_path`: the step's critical path
    above them (the analysed steps' paths in a window), and a strip under each of its items on its own thread or
    stream (docs/critical-path.md); `ex` must then be an Export (`nsysql.open`)."""
    output = check_output(output)
    if step is not None and (start_ms is not None or end_ms is not None):
        raise NsysqlError("give either `step=` or `start_ms=`/`end_ms=`, not both")
    if pid is not None and step is None:
        raise NsysqlError("`pid=` picks the process of `step=`; give both")
    window = ex.run("analysis._plot_window", start_ms=start_ms, end_ms=end_ms).row(0, named=True)
    origin = window["origin_ns"]
    if origin is None:
        raise NsysqlError(f"{ex.path.name} holds no NVTX ranges, API calls or GPU ops to draw")
    if step is not None:
        steps = ex.steps()
        if steps.is_empty():
            raise NsysqlError(f"{ex.path.name} has no steps (see `nsysql steps`); use `start_ms=`/`end_ms=`")
        row = _step_row(ex, steps, step, pid)
        margin = (row["end_ns"] - row["start_ns"]) // 50  # 2% each side: the step's edges stay visible
        lo, hi = row["start_ns"] - margin, row["end_ns"] + margin
        what = f"step {step} ({row['name']})" + (f" of pid {row['pid']}" if pid is not None else "")
    else:
        lo, hi = window["from_ns"], window["to_ns"]
        what = "window" if start_ms is not None or end_ms is not None else "whole capture"
    if hi <= lo:
        raise NsysqlError(f"empty time window ({(lo - origin) / 1e6:.3f} to {(hi - origin) / 1e6:.3f} ms since "
                          "the capture's first event); `end_ms=` must be greater than `start_ms=`")
    if ex.has("nvtx_range"):
        ranges = ex.run("analysis._plot_timeline_ranges", from_ns=lo, to_ns=hi, op_markers=op_markers)
    else:  # a program without NVTX (a CUDA application, OpenACC, ...): its GPU ops alone
        from nsysql.sql import catalog  # the same query over the (empty) normalized ranges: no ranges, typed columns
        q = catalog.get("analysis._plot_timeline_ranges")
        ranges = ex.sql(q.sql, q.bound_params(dict(from_ns=lo, to_ns=hi, op_markers=op_markers)))
    ops = ex.run("analysis._plot_timeline_ops", from_ns=lo, to_ns=hi)
    if ranges.is_empty() and ops.is_empty():
        raise NsysqlError(f"nothing happens between {(lo - origin) / 1e6:.3f} and {(hi - origin) / 1e6:.3f} ms "
                          "since the capture's first event; widen `start_ms=`/`end_ms=`")
    path = _path_items(ex, step, row["pid"] if step is not None else None, lo, hi) if critical_path else None
    fig = _draw_timeline(ranges, ops, origin, lo, hi, op_markers, path,
                         title=f"{_export_title(ex)}: {what}, {(lo - origin) / 1e6:,.3f} to "
                               f"{(hi - origin) / 1e6:,.3f} ms since the first event")
    return _save(fig, output)


def layers(ex: "Queries", output: str | Path, *, top: int = 25, depth: int = 0, merge_repeats: bool = False) -> Path:
    """Horizontal stacked bars of forward / backward / recompute / optimizer / communication kernel time per layer
    in the analysed steps (as `nsysql layers`), largest first."""
    output = check_output(output)
    df = ex.layers(depth=depth, merge_repeats=merge_repeats, analysed=True)
    if df.is_empty():
        raise NsysqlError(f"{ex.path.name} has no kernels attributed to layers")
    shown = df.sort(["total_ns", "layer"], descending=[True, False]).head(top)
    fig = _draw_layers(shown, title=f"{_export_title(ex)}: kernel time per layer"
                                    + (f" (top {top} of {df.height})" if df.height > top else ""))
    return _save(fig, output)


def kernels(ex: "Queries", output: str | Path, *, top: int = 20) -> Path:
    """Horizontal bars of the kernels with the most GPU time, labelled with the op that launched them."""
    output = check_output(output)
    df = ex.run("analysis._plot_kernels", top=top)
    if df.is_empty():
        raise NsysqlError(f"{ex.path.name} has no kernels (capture with --trace=cuda)")
    fig = _draw_kernels(df, title=f"{_export_title(ex)}: top {df.height} kernels by GPU time")
    return _save(fig, output)


def _step_row(ex: "Queries", steps, step: int, pid: int | None) -> dict:
    """The row of `nsysql steps` for step `step` (of process `pid`): one clear error when there is none, or when
    several processes have that step and `pid` does not say which."""
    import polars as pl
    if pid is not None:
        mine = steps.filter(pl.col("pid") == pid)
        if mine.is_empty():
            pids = ", ".join(str(p) for p in sorted(steps["pid"].unique().to_list()))
            raise NsysqlError(f"`pid={pid}`: {ex.path.name} has steps in process {pids} (see `nsysql steps`)")
        steps = mine
    found = steps.filter(pl.col("step") == step)
    if found.is_empty():
        whose = f" in process {pid}" if pid is not None else ""
        raise NsysqlError(f"`step={step}`: {ex.path.name} has steps 1 to {steps['step'].max()}{whose} "
                          "(see `nsysql steps`)")
    if found.height > 1:
        pids = ", ".join(str(p) for p in sorted(found["pid"].to_list()))
        raise NsysqlError(f"`step={step}`: processes {pids} each have a step {step} (steps are numbered per process); "
                          "choose one with `pid=`")
    return found.row(0, named=True)


def _path_items(ex, step: int | None, pid: int | None, lo: int, hi: int):
    """The critical path's items with their tracks: step `step`'s, or the analysed steps' overlapping [lo, hi]."""
    from nsysql.present.plot_path import in_window
    items = ex.critical_path(step=step, pid=pid, items=True, tracks=True)  # an Export's answer (nsysql/api.py)
    items = in_window(items, lo, hi)
    if items.is_empty():
        raise NsysqlError(f"{ex.path.name}: no critical path to draw here ("
                          + ("this step has none" if step is not None else "no analysed step in this window")
                          + "); see `nsysql critical-path`")
    return items


# -- drawing ---------------------------------------------------------------------------------------
def _draw_timeline(ranges, ops, origin: int, lo: int, hi: int, op_markers: bool, path, title: str):
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    span_ms = (hi - lo) / 1e6
    # NVTX rows: threads in order of their first range, one row per level within a thread
    threads = []  # (pid, tid, name, levels)
    if not ranges.is_empty():
        first = (ranges.group_by(["pid", "tid"])
                 .agg(_min("start_ns"), _max("level"), _first("thread_name"))
                 .sort(["start_ns", "pid", "tid"]))
        threads = [(r["pid"], r["tid"], r["thread_name"], r["level"] + 1) for r in first.iter_rows(named=True)]
    if path is not None:  # the path's threads without a range in the window get a row of their own
        from nsysql.present.plot_path import extra_threads
        threads += [(p, t, name, 1) for p, t, name in extra_threads(path, {(t[0], t[1]) for t in threads})]
    streams = []
    if not ops.is_empty():
        streams = [tuple(r) for r in ops.select("device_id", "stream_id").unique().sort(["device_id", "stream_id"])
                   .iter_rows()]
    nvtx_rows = sum(t[3] for t in threads)
    gpu_rows = len(streams)
    width_in = 14.0
    path_rows = path["pid"].n_unique() if path is not None else 0
    height_in = min(2.0 + 0.32 * (nvtx_rows + gpu_rows) + 0.9 + (0.5 + 0.48 * max(path_rows, 2) if path_rows else 0),
                    40.0)
    fig = Figure(figsize=(width_in, max(height_in, 3.5)), dpi=DPI, layout="constrained")
    ratios = [max(nvtx_rows, 1), max(gpu_rows, 1)]
    if path_rows:
        ax_path, ax_nvtx, ax_gpu = fig.subplots(3, 1, sharex=True,
                                                gridspec_kw={"height_ratios": [max(1.5 * path_rows, 2), *ratios]})
    else:
        ax_nvtx, ax_gpu = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": ratios})
    fig.suptitle(title, fontsize=11)
    axes_width_px = width_in * DPI * 0.78  # room left for row labels
    ms_per_px = span_ms / axes_width_px
    to_ms = lambda ns: (ns - origin) / 1e6  # noqa: E731

    # NVTX ranges
    row_of, ticks, tick_labels, row = {}, [], [], 0
    for pid, tid, name, levels in threads:
        row_of[(pid, tid)] = row
        ticks.append(row + (levels - 1) / 2)
        tick_labels.append(f"{name}\n(pid {pid}, tid {tid})")
        row += levels
        if row < nvtx_rows:
            ax_nvtx.axhline(row - 0.5, color="#666666", linewidth=0.6)
    char_ms = 6.2 * ms_per_px  # ~ width of one 7.5 pt character
    colors: dict[str, str] = {}
    for text in ranges.sort(["start_ns", "range_id"])["text"].to_list():
        colors.setdefault(text, RANGE_PALETTE[len(colors) % len(RANGE_PALETTE)])
    bars = defaultdict(list)  # (row, color) -> spans: one collection each, not one artist per range
    for r in ranges.iter_rows(named=True):
        y = row_of[(r["pid"], r["tid"])] + r["level"]
        start, end = max(to_ms(r["start_ns"]), to_ms(lo)), min(to_ms(r["end_ns"]), to_ms(hi))
        width = max(end - start, ms_per_px)
        bars[(y, "#E8E8E8" if r["is_op_marker"] else colors[r["text"]])].append((start, width))
        text = r["text"].split(",", 1)[0] if r["is_op_marker"] else r["text"]  # `aten::mm, seq = 3, ...`
        label = _fit(text, int(width / char_ms))
        if label:
            ax_nvtx.text(start + width / 2, y, label, ha="center", va="center", fontsize=7.5, clip_on=True)
    for (y, color), spans in bars.items():
        ax_nvtx.broken_barh(spans, (y - 0.4, 0.8), facecolors=color, edgecolors="#555555", linewidth=0.4)
    ax_nvtx.set_ylim(max(nvtx_rows, 1) - 0.5, -0.5)
    ax_nvtx.set_yticks(ticks, tick_labels, fontsize=8)
    ax_nvtx.set_ylabel("NVTX ranges" + (" (with op markers)" if op_markers else ""), fontsize=9)
    if not threads:
        ax_nvtx.text(0.5, 0.5, "no NVTX ranges in this window", transform=ax_nvtx.transAxes, ha="center",
                     va="center", color="#666666")
        ax_nvtx.set_yticks([])
    ax_nvtx.grid(axis="x", color="#DDDDDD", linewidth=0.5)

    # GPU ops per stream, coloured by direction; ops narrower than a pixel are drawn one pixel wide
    for i, (device, stream) in enumerate(streams):
        mine = ops.filter((ops["device_id"] == device) & (ops["stream_id"] == stream))
        for direction, color in DIRECTION_COLORS.items():
            part = mine.filter(mine["direction"] == direction)
            if part.is_empty():
                continue
            spans = [(to_ms(s), max((e - s) / 1e6, ms_per_px)) for s, e in zip(part["start_ns"], part["end_ns"])]
            ax_gpu.broken_barh(spans, (i - 0.4, 0.8), facecolors=color, linewidth=0)
    ax_gpu.set_ylim(max(gpu_rows, 1) - 0.5, -0.5)
    ax_gpu.set_yticks(range(gpu_rows), [f"GPU {d}\nstream {s}" for d, s in streams], fontsize=8)
    ax_gpu.set_ylabel("GPU ops", fontsize=9)
    if not streams:
        ax_gpu.text(0.5, 0.5, "no GPU ops in this window", transform=ax_gpu.transAxes, ha="center", va="center",
                    color="#666666")
        ax_gpu.set_yticks([])
    present = set(ops["direction"].unique()) if not ops.is_empty() else set()
    handles = [Patch(color=c, label=DIRECTION_LABELS[d]) for d, c in DIRECTION_COLORS.items() if d in present]
    if handles:
        ax_gpu.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8,
                      title="GPU op direction", title_fontsize=8, frameon=False)
    ax_gpu.grid(axis="x", color="#DDDDDD", linewidth=0.5)
    ax_gpu.set_xlim(to_ms(lo), to_ms(hi))
    ax_gpu.set_xlabel("time since the capture's first event (ms)", fontsize=9)
    ax_gpu.ticklabel_format(axis="x", useOffset=False, style="plain")
    if path_rows:
        from nsysql.present import plot_path
        plot_path.draw_path(ax_path, path, to_ms, lo, hi, char_ms, _fit)
        last_row = {(p, t): row_of[(p, t)] + levels - 1 for p, t, _, levels in threads}
        plot_path.mark_tracks(ax_nvtx, ax_gpu, path, last_row, {k: i for i, k in enumerate(streams)}, to_ms, lo, hi)
    return fig


def _draw_layers(df, title: str):
    from matplotlib.figure import Figure

    unit, scale = _time_unit(int(df["total_ns"].max()))
    labels = _unique_short_paths(df["layer"].to_list())
    height = min(1.6 + 0.34 * df.height, 30.0)
    fig = Figure(figsize=(12, height), dpi=DPI, layout="constrained")
    ax = fig.subplots()
    y = list(range(df.height))
    left = [0.0] * df.height
    for direction in ("fprop", "bprop", "recompute", "optim", "comm"):
        column = f"{direction}_ns"
        if direction in ("comm", "recompute") and not any(df[column] if column in df.columns else []):
            continue  # a legend entry only where there is communication, or recomputation
        values = [v / scale for v in df[column].to_list()]
        ax.barh(y, values, left=left, height=0.7, color=DIRECTION_COLORS[direction],
                label=DIRECTION_LABELS[direction])
        left = [a + b for a, b in zip(left, values)]
    known = [df[c] if c in df.columns else [0] * df.height
             for c in ("fprop_ns", "bprop_ns", "recompute_ns", "optim_ns", "comm_ns")]
    other = [(t - sum(parts)) / scale for t, *parts in zip(df["total_ns"], *known)]
    if any(v > 0 for v in other):
        ax.barh(y, other, left=left, height=0.7, color=DIRECTION_COLORS["other"], label=DIRECTION_LABELS["other"])
        left = [a + b for a, b in zip(left, other)]
    for yi, total, pct in zip(y, left, df["pct"].to_list() if "pct" in df.columns else [None] * df.height):
        if pct is not None:
            ax.text(total, yi, f"  {pct:.1f}%", va="center", fontsize=8)
    ax.set_yticks(y, labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel(f"kernel time ({unit}); bar note: share of all kernel time", fontsize=9)
    ax.set_xlim(0, max(left) * 1.12)
    ax.grid(axis="x", color="#DDDDDD", linewidth=0.5)
    ax.set_axisbelow(True)
    ax.legend(loc="lower right", fontsize=8, title="direction", title_fontsize=8)
    ax.set_title(title, fontsize=11)
    return fig


def _draw_kernels(df, title: str):
    from matplotlib.figure import Figure

    unit, scale = _time_unit(int(df["total_ns"].max()))
    labels = _kernel_labels(df)
    height = min(1.6 + 0.34 * df.height, 30.0)
    fig = Figure(figsize=(12, height), dpi=DPI, layout="constrained")
    ax = fig.subplots()
    y = list(range(df.height))
    values = [v / scale for v in df["total_ns"].to_list()]
    ax.barh(y, values, height=0.7, color="#4C72B0")
    for yi, v, pct, n in zip(y, values, df["pct"].to_list(), df["instances"].to_list()):
        ax.text(v, yi, f"  {pct:.1f}%  ({n}×)", va="center", fontsize=8)
    ax.set_yticks(y, labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel(f"total GPU time ({unit});  bar note: share of all kernel time (launches)", fontsize=9)
    ax.set_ylabel("kernel · op or autograd node that launched most of them", fontsize=9)
    ax.set_xlim(0, max(values) * 1.2)
    ax.grid(axis="x", color="#DDDDDD", linewidth=0.5)
    ax.set_axisbelow(True)
    ax.set_title(title, fontsize=11)
    return fig


# -- helpers ---------------------------------------------------------------------------------------
def check_output(output) -> Path:
    """`output` as a Path, or an error unless it ends in a format we write."""
    output = Path(output)
    if output.suffix.lower() not in FORMATS:
        raise NsysqlError(f"{output}: the file name must end in {', '.join(FORMATS)} (it picks the format)")
    return output


def _save(fig, output: Path) -> Path:
    fig.savefig(output, format=output.suffix.lower()[1:])
    return output


def _export_title(ex: "Queries") -> str:
    name = ex.path.name
    if name in ("export.sqlite", "export.sqlite.xz"):  # fixtures: the folder says what it is
        return ex.path.parent.name or name
    return name


def _fit(text: str, chars: int) -> str:
    """`text` cut to `chars` characters with an ellipsis; '' when not even 3 fit."""
    if chars >= len(text):
        return text
    return text[:chars - 1] + "…" if chars >= 4 else ""


def _time_unit(max_ns: int) -> tuple[str, float]:
    if max_ns >= 1e9:
        return "s", 1e9
    if max_ns >= 1e6:
        return "ms", 1e6
    return "µs", 1e3


def _unique_short_paths(paths: list[str], limit: int = 60) -> list[str]:
    """Layer paths shortened in the middle (`forward_pass/layer_0/…/computing softmax`), kept distinct."""
    from nsysql.present.render import bounded, middle, shorten_path
    # cut once, in one pass, before the work below (quadratic in a path's length): a 1 MiB range name is drawn
    # as quickly as a short one, and no label is longer than the bound
    paths = [middle(p, bounded(limit)) for p in paths]
    out = []
    for path in paths:
        parts = path.split("/")
        short = path
        if len(path) > limit and len(parts) > 3:
            for keep in range(len(parts) - 2, 0, -1):
                tail = parts[-keep:] if keep else []
                short = "/".join(parts[:2] + ["…"] + tail)
                if len(short) <= limit:
                    break
        out.append(middle(short, limit))
    # two long paths that shorten alike keep their full text, up to twice the limit (then the numbered components
    # that tell them apart, as the tables shorten them)
    dupes = {s for s in out if out.count(s) > 1}
    return [s if s not in dupes else p if len(p) <= 2 * limit else shorten_path(p, 2 * limit)
            for p, s in zip(paths, out)]


_NOISE = {"void", "int", "float", "double", "char", "bool", "long", "unsigned", "at", "native", "std", "array",
          "c10", "BFloat16", "Half", "unnamed", "anonymous", "namespace", "T1", "T2", "T3", "const", "cuda",
          "detail", "TensorIteratorBase", "func_wrapper_t", "ReduceOp", "TensorListMetadata"}


def _kernel_labels(df, limit: int = 60) -> list[str]:
    """`short name · launching op (+n)` per kernel; a template hint, then a number, tells equal names apart."""
    bases, extras, hints = [], [], []
    for r in df.iter_rows(named=True):
        short = r["short_name"] or r["kernel_name"]
        short = short if len(short) <= limit else short[:limit - 1] + "…"
        bases.append(f"{short} · {r['main_op']}" if r["main_op"] else short)
        extras.append(f" (+{r['other_ops']})" if r["main_op"] and r["other_ops"] else "")
        hints.append(_template_hint(r["kernel_name"], r["short_name"]))
    dupes = {b for b in bases if bases.count(b) > 1}
    labels = [b + x + (f" [{h}]" if b in dupes and h else "") for b, x, h in zip(bases, extras, hints)]
    seen: dict[str, int] = {}
    out = []
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
        out.append(label if labels.count(label) == 1 else f"{label} #{seen[label]}")
    return out


def _template_hint(full: str, short: str | None) -> str:
    """The first telling identifier in a kernel's template arguments (a functor, a CUTLASS config), or ''."""
    head, _, inner = full.partition("<")
    if not inner or (short and short not in head):
        return ""
    for word in re.findall(r"[A-Za-z_]\w*", inner):
        if word not in _NOISE and not word.startswith("gpu_kernel_impl") and word != short and len(word) > 2:
            return word if len(word) <= 44 else word[:43] + "…"
    return ""


def _min(col):
    import polars as pl
    return pl.col(col).min()


def _max(col):
    import polars as pl
    return pl.col(col).max()


def _first(col):
    import polars as pl
    return pl.col(col).first()
