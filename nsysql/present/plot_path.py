"""The critical path over `nsysql plot timeline` (`--critical-path`): a row per process whose step path is drawn,
the path's items coloured by kind, and a strip under each item on the thread or stream it ran on.

The items come from the caller (an Export's `critical_path(items=True, tracks=True)`, nsysql/answers/
critical_path.py): this module only draws. Every drawn collection carries a gid (`critical-path-<kind>` on the path
rows, `critical-path-track-<kind>` on the thread and stream rows): SVG output names them, tests read them back."""
from __future__ import annotations

from collections import defaultdict

# the kinds of nsysql/answers/critical_path.py (KINDS), in its order; present/ sits below answers/ and cannot import it
KINDS = ("cpu", "launch", "gpu_compute", "copy", "sync_wait", "comm_transfer", "comm_wait")
# Okabe-Ito colours, told apart with colour-blindness too: host work warm, GPU work blue, waits grey, communication
# purple (the purple of NCCL's kernels on the GPU rows)
KIND_COLORS = {"cpu": "#E69F00", "launch": "#F0E442", "gpu_compute": "#0072B2", "copy": "#D55E00",
               "sync_wait": "#999999", "comm_transfer": "#8172B3", "comm_wait": "#CC79A7"}
KIND_LABELS = {"cpu": "CPU work", "launch": "CUDA call, launch latency", "gpu_compute": "GPU compute",
               "copy": "copy / set", "sync_wait": "sync wait", "comm_transfer": "comm transfer",
               "comm_wait": "comm wait (late rank)"}
STRIP = (0.2, 0.28)  # the strip under an item on its own row: offset below the row's centre, height (rows)


def in_window(items, lo: int, hi: int):
    """The items overlapping [lo, hi]."""
    import polars as pl
    return items.filter((pl.col("end_ns") > lo) & (pl.col("start_ns") < hi))


def extra_threads(items, shown: set[tuple[int, int]]) -> list[tuple[int, int, str]]:
    """(pid, tid, name) of the threads the path runs on that have no row yet (no NVTX range in the window), in
    order of first appearance on the path."""
    out: dict[tuple[int, int], str] = {}
    for pid, tid, name in items.select("on_pid", "tid", "thread_name").iter_rows():
        if tid is not None and (pid, tid) not in shown:
            out.setdefault((pid, tid), name or f"tid {tid}")
    return [(pid, tid, name) for (pid, tid), name in out.items()]


def draw_path(ax, items, to_ms, lo: int, hi: int, char_ms: float, fit) -> None:
    """One row per process with a path: each item from its start to its end (clipped to the window), coloured by
    kind, the names that fit written inside; the legend gives the path's time per kind."""
    pids = sorted(set(items["pid"].to_list()))
    spans: dict[str, list] = defaultdict(list)  # kind -> (row, start, width)
    for row, pid in enumerate(pids):
        mine = items.filter(items["pid"] == pid)
        for kind, name, s, e in mine.select("kind", "name", "start_ns", "end_ns").iter_rows():
            a, b = to_ms(max(s, lo)), to_ms(min(e, hi))
            spans[kind].append((row, a, b - a))
            label = fit(name, int((b - a) / char_ms))
            if label:
                ax.text(a + (b - a) / 2, row, label, ha="center", va="center", fontsize=7.5, clip_on=True)
    for kind in KINDS:
        by_row = defaultdict(list)
        for row, a, w in spans.get(kind, ()):
            by_row[row].append((a, w))
        for row, xs in by_row.items():
            ax.broken_barh(xs, (row - 0.4, 0.8), facecolors=KIND_COLORS[kind], linewidth=0,
                           gid=f"critical-path-{kind}")
    ax.set_ylim(len(pids) - 0.5, -0.5)
    ranks = len(pids) > 1 or set(items["on_pid"].to_list()) != set(pids)  # name the process where it matters
    labels = []
    for pid in pids:
        steps = sorted(set(items.filter(items["pid"] == pid)["step"].to_list()))
        label = f"step {steps[0]}" if len(steps) == 1 else f"steps {steps[0]}-{steps[-1]}"
        labels.append(label + (f"\nof pid {pid}" if ranks else ""))
    ax.set_yticks(range(len(pids)), labels, fontsize=8)
    ax.set_ylabel("critical path", fontsize=9)
    ax.grid(axis="x", color="#DDDDDD", linewidth=0.5)
    _legend(ax, items)


def _legend(ax, items) -> None:
    """Every kind, with its time on the drawn paths: per step when one step is drawn, as a share of the paths' time
    otherwise (several steps)."""
    from matplotlib.patches import Patch

    from nsysql.core import units
    ns = {k: 0 for k in KINDS}
    for kind, s, e in items.select("kind", "start_ns", "end_ns").iter_rows():
        ns[kind] += e - s
    total = sum(ns.values())
    steps = items.select("pid", "step").unique().height
    handles = []
    for kind in KINDS:
        pct = f"{100 * ns[kind] / total:.0f}%" if 100 * ns[kind] >= 0.5 * total else "<1%"
        if not ns[kind]:
            text = f"{KIND_LABELS[kind]}: none"
        elif steps == 1:
            text = f"{KIND_LABELS[kind]}: {units.duration(ns[kind])} ({pct})"
        else:
            text = f"{KIND_LABELS[kind]}: {pct}"
        handles.append(Patch(color=KIND_COLORS[kind], label=text))
    title = "the step's path by kind" if steps == 1 else f"{steps} steps' paths by kind"
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, title=title,
              title_fontsize=8, frameon=False)


def mark_tracks(ax_nvtx, ax_gpu, items, thread_row: dict, stream_row: dict, to_ms, lo: int, hi: int) -> None:
    """A strip coloured by kind under each item, on its thread's last NVTX row or on its stream's row."""
    strips: dict[tuple[str, str, float], list] = defaultdict(list)  # (axis, kind, y) -> (start, end) ns
    for kind, pid, tid, device, stream, s, e in items.select(
            "kind", "on_pid", "tid", "device_id", "stream_id", "start_ns", "end_ns").iter_rows():
        if tid is not None and (pid, tid) in thread_row:
            where, y = "nvtx", thread_row[(pid, tid)]
        elif device is not None and (device, stream) in stream_row:
            where, y = "gpu", stream_row[(device, stream)]
        else:
            continue
        a, b = max(s, lo), min(e, hi)
        run = strips[(where, kind, y)]
        if run and run[-1][1] == a:  # consecutive items of one kind on one track: one strip, one outline
            run[-1] = (run[-1][0], b)
        else:
            run.append((a, b))
    for (where, kind, y), runs in strips.items():
        xs = [(to_ms(a), to_ms(b) - to_ms(a)) for a, b in runs]
        ax = ax_nvtx if where == "nvtx" else ax_gpu
        ax.broken_barh(xs, (y + STRIP[0], STRIP[1]), facecolors=KIND_COLORS[kind], edgecolors="#222222",
                       linewidth=0.3, zorder=3, gid=f"critical-path-track-{kind}")
