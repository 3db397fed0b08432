"""The pictures NVIDIA's recipe notebooks draw, as image files: `nsysql plot pace|hist|util-map`.

The rows come from a recipe's result (nsysql/answers/recipes.py: `RecipeResult.people()` and `.rows`); this module
only draws them, with matplotlib's object API on a bare Figure (no pyplot), as nsysql/present/plot.py does.

- pace (NVIDIA's pace.ipynb): each iteration's duration and the delta before it, one line per rank, the outliers
  of each rank marked (Tukey's fences, recipes._pace_people) and the median drawn;
- hist (histogram.ipynb): the probability of kernel durations, all kernels and the kernels with the most GPU
  time, bins by the Freedman-Diaconis rule as NVIDIA's notebook takes them;
- util-map (heatmap.ipynb): the mean utilization over time, then a heatmap per kind of kernels with one row per
  rank/device/PID (NVIDIA's labels) and one column per time bin.
"""
from __future__ import annotations

import math
from pathlib import Path

from nsysql.present.plot import DPI, _fit, _save, check_output

RANK_COLORS = ("#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860", "#DA8BC3", "#8C8C8C",
               "#CCB974", "#64B5CD")
OUTLIER_COLOR = "#D62728"
RING_LABEL = "outlier of its rank (Tukey's fences)"


def pace(people, stats, output: str | Path, *, title: str, labels: list[str]) -> Path:
    """Two panels over the iterations: duration, and delta (the time since the previous instance ended; the first,
    from the session's start, is left out as NVIDIA's notebook leaves it), a line per rank; outliers ringed."""
    from matplotlib.figure import Figure
    output = check_output(output)
    fig = Figure(figsize=(12, 7.5), dpi=DPI, layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True)
    several = len(labels) > 1
    scales = {}
    for panel, column, marks, what in ((top, "duration_ns", ("long", "short"), "duration"),
                                       (bottom, "delta_ns", ("late", "early"), "delta")):
        shown = people.filter(people["iteration"] > 0) if column == "delta_ns" else people
        values = [v for v in shown[column].to_list() if v is not None]
        scale, unit = _unit(values)
        scales[column] = (scale, unit)
        if values and min(values) > 0 and max(values) / min(values) > 50:
            panel.set_yscale("log")  # ranks or instances orders of magnitude apart: each stays readable
        for rank, label in enumerate(labels):
            mine = people.filter(people["rank"] == rank)
            if column == "delta_ns":
                mine = mine.filter(mine["iteration"] > 0)
            x, y = mine["iteration"].to_list(), [v / scale for v in mine[column].to_list()]
            color = RANK_COLORS[rank % len(RANK_COLORS)]
            panel.plot(x, y, color=color, linewidth=1.2 if len(x) <= 300 else 0.6, marker="o",
                       markersize=2.5 if len(x) <= 300 else 1.0,
                       label=f"{rank}: {_fit(label, 40)}" if several else None)
            flagged = [(xi, yi) for xi, yi, o in zip(x, y, mine["outlier"].to_list())
                       if any(m in (o or "").split(", ") for m in marks)]
            if flagged:  # rings smaller where thousands of instances crowd the panel
                size, width = (70, 1.4) if len(x) <= 300 else (22, 0.9)
                panel.scatter([p[0] for p in flagged], [p[1] for p in flagged], s=size, facecolors="none",
                              edgecolors=OUTLIER_COLOR, linewidths=width, zorder=3, label=RING_LABEL)
        panel.set_ylabel(f"{what} ({unit})", fontsize=9)
        panel.grid(color="#DDDDDD", linewidth=0.5)
        panel.set_axisbelow(True)
    if stats is not None and stats.height:
        scale, unit = scales["duration_ns"]
        median = stats["median_ns"][0] / scale
        top.axhline(median, color="#555555", linestyle="--", linewidth=0.9,
                    label=f"median{' (approx., over ranks)' if several else ''} {median:,.3f} {unit}")
    for panel in (top, bottom):
        handles, names = panel.get_legend_handles_labels()
        rings = [h for h, n in zip(handles, names) if n == RING_LABEL]
        kept = [(h, n) for h, n in zip(handles, names) if n != RING_LABEL]
        if rings:  # one entry for the rings of every rank, after the ranks
            kept.append((rings[0], RING_LABEL))
        if kept:
            panel.legend([h for h, _ in kept], [n for _, n in kept], fontsize=8, loc="upper right")
    top.set_title(title, fontsize=11)
    bottom.set_title("delta: from the previous instance's end to this one's start (iteration 0, from the session's "
                     "start, left out)", fontsize=9)
    bottom.set_xlabel("iteration", fontsize=9)
    return _save(fig, output)


def _unit(values: list) -> tuple[float, str]:
    """ns per unit and its name for a panel of durations: by the median magnitude, so one spike keeps the unit."""
    mags = sorted(abs(v) for v in values if v)
    typical = mags[len(mags) // 2] if mags else 0
    return (1e6, "ms") if typical >= 1e5 else (1e3, "µs") if typical >= 1e2 else (1.0, "ns")


def _fd_edges(values: list[int]) -> list[float]:
    """Histogram bin edges by the Freedman-Diaconis rule (at most 1000 bins), as NVIDIA's notebook bins them, but
    never narrower than the step between distinct durations (GPU timestamps tick in steps of tens of ns: narrower
    bins would leave most of them empty)."""
    lo, hi = min(values), max(values)
    if lo == hi:
        return [lo - 0.01, hi + 0.01]
    ordered = sorted(values)

    def q(p: float) -> float:
        h = (len(ordered) - 1) * p
        i = int(math.floor(h))
        return ordered[i] + (h - i) * (ordered[min(i + 1, len(ordered) - 1)] - ordered[i])

    distinct = sorted(set(values))
    gaps = sorted(b - a for a, b in zip(distinct, distinct[1:]))
    tick = gaps[len(gaps) // 2]  # the timestamps' usual step (a few odd durations between do not set it)
    width = max(2 * (q(0.75) - q(0.25)) / len(ordered) ** (1 / 3), tick)
    bins = min(max(math.ceil((hi - lo) / width), 1), 1000)
    step = (hi - lo) / bins
    return [lo + i * step for i in range(bins + 1)]


def _shown(values: list[int]) -> tuple[list[int], int]:
    """The durations a panel bins (up to the 99.5th percentile when a long tail would squeeze the rest into a few
    bins) and how many longer ones are left off its right."""
    ordered = sorted(values)
    edge = ordered[min(len(ordered) - 1, int(len(ordered) * 0.995))]
    if ordered[-1] <= 3 * edge:
        return values, 0
    kept = [v for v in values if v <= edge]
    return kept, len(values) - len(kept)


def hist(rows, output: str | Path, *, title: str, top: int = 5) -> Path:
    """The probability of kernel durations: all kernels, then the `top` kernel names with the most GPU time."""
    from matplotlib.figure import Figure
    output = check_output(output)
    import polars as pl
    totals = rows.group_by("name").agg(pl.col("duration_ns").sum().alias("total"))
    names = totals.sort(["total", "name"], descending=[True, False])["name"].head(top).to_list()
    panels = [("all kernels", rows["duration_ns"].to_list())] + [
        (n, rows.filter(rows["name"] == n)["duration_ns"].to_list()) for n in names]
    cols = 2 if len(panels) > 1 else 1
    nrows = math.ceil(len(panels) / cols)
    fig = Figure(figsize=(12, 1.2 + 3.0 * nrows), dpi=DPI, layout="constrained")
    axes = fig.subplots(nrows, cols, squeeze=False)
    for k, ax in enumerate(ax for line in axes for ax in line):
        if k >= len(panels):
            ax.set_visible(False)
            continue
        name, values = panels[k]
        kept, off = _shown(values)
        edges = _fd_edges(kept)
        scale, unit = (1e3, "µs") if max(kept) >= 1e3 else (1.0, "ns")
        ax.hist([v / scale for v in kept], bins=[e / scale for e in edges], weights=[1 / len(values)] * len(kept),
                color="#4C72B0" if k == 0 else "#55A868", edgecolor="none")
        tail = f"; {off:,} longer, up to {max(values) / scale:,.1f} {unit}, off the right" if off else ""
        ax.set_title(f"{_fit(name, 50)}: {len(values):,} kernels, bins={len(edges) - 1}{tail}", fontsize=9)
        ax.set_xlabel(f"duration ({unit})", fontsize=8)
        ax.set_ylabel("probability", fontsize=8)
        ax.tick_params(labelsize=8)
        ax.grid(color="#DDDDDD", linewidth=0.5)
        ax.set_axisbelow(True)
    fig.suptitle(title, fontsize=11)
    return _save(fig, output)


def util_map(long, output: str | Path, *, title: str, bin_size: int) -> Path:
    """The mean utilization over the time bins (over the rows), then a heatmap per kind of kernels: a row per
    rank/device/PID, a column per bin, 0 to 100 % (bins outside a row's session blank)."""
    from matplotlib.colors import Normalize
    from matplotlib.figure import Figure
    output = check_output(output)
    kinds = long.select("kind", "kind_order").unique().sort("kind_order")["kind"].to_list()
    keys = long.select("rank", "device_id", "pid").unique().sort("rank", "device_id", "pid").rows()
    row_labels = [f"{r}/{d}/{p}" for r, d, p in keys]
    bins = int(long["bin"].max()) + 1
    seconds = bin_size / 1e9
    height = 2.6 + len(kinds) * (0.9 + 0.32 * len(keys))
    fig = Figure(figsize=(12, min(height, 40)), dpi=DPI, layout="constrained")
    grid = fig.add_gridspec(len(kinds) + 1, 1, height_ratios=[2.0] + [0.6 + 0.3 * len(keys)] * len(kinds))
    summary = fig.add_subplot(grid[0])
    norm = Normalize(vmin=0, vmax=100)
    image = None
    for i, kind in enumerate(kinds):
        mine = long.filter(long["kind"] == kind)
        cells = {(r, d, p, b): v for r, d, p, b, v in mine.select("rank", "device_id", "pid", "bin", "pct").rows()}
        z = [[math.nan if (v := cells.get((r, d, p, b))) is None else v for b in range(bins)] for r, d, p in keys]
        ax = fig.add_subplot(grid[i + 1], sharex=summary)
        image = ax.imshow(z, aspect="auto", cmap="viridis", norm=norm, interpolation="nearest",
                          extent=(0, bins * seconds, len(keys) - 0.5, -0.5))
        ax.set_yticks(range(len(keys)), row_labels, fontsize=8)
        ax.set_ylabel("Rank/Device/PID", fontsize=8)
        ax.set_title(kind, fontsize=9)
        ax.tick_params(labelsize=8)
        means = []
        for b in range(bins):
            column = [row[b] for row in z if not math.isnan(row[b])]
            means.append(sum(column) / len(column) if column else math.nan)
        centers = [(b + 0.5) * seconds for b in range(bins)]
        summary.plot(centers, means, marker="o", markersize=3, linewidth=1.2, label=kind)
    summary.set_ylabel("mean utilization (%)", fontsize=8)
    summary.set_ylim(bottom=0)
    summary.grid(color="#DDDDDD", linewidth=0.5)
    summary.tick_params(labelsize=8)
    summary.legend(fontsize=8, loc="upper left")
    summary.set_title(title, fontsize=11)
    fig.axes[-1].set_xlabel(f"time (s) from the aligned start: {bins} bins of {seconds * 1e3:,.1f} ms; blank: outside "
                            "that export's session", fontsize=8)
    if image is not None:
        fig.colorbar(image, ax=fig.axes[1:], label="utilization (%)", shrink=0.9)
    return _save(fig, output)
