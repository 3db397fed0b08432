"""`nsysql summarize`: the headline a user reads first, assembled from analysis queries."""
from __future__ import annotations

import json
from dataclasses import dataclass

import polars as pl

from . import catalog
from .export import Export
from .render import Format, cell_text, to_markdown, to_table


@dataclass
class Section:
    title: str
    frame: pl.DataFrame
    decimals: dict[str, int]
    note: str = ""


def shorten_kernel(name: str, width: int = 70) -> str:
    """Display form of a kernel name: argument list dropped, template arguments elided to <…>.

    Only for tables on screen; CSV, JSON and Parquet keep the full name.
    """
    text = (name or "").removeprefix("void ")
    if text.endswith(")"):  # drop the trailing, balanced (...) argument list
        depth = 0
        for i in range(len(text) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(text[i], 0)
            if depth == 0:
                text = text[:i]
                break
    out, depth = [], 0
    for ch in text:
        if ch == "<":
            if depth == 0:
                out.append("<…>")
            depth += 1
        elif ch == ">" and depth:
            depth -= 1
        elif depth == 0:
            out.append(ch)
    short = "".join(out).strip() or (name or "")
    return short if len(short) <= width else short[: width - 1] + "…"


def build(export: Export, top: int = 10) -> list[Section]:
    sections: list[Section] = []
    facts = export.run("analysis.capture_facts")
    sections.append(Section("Capture", facts.transpose(include_header=True, header_name="fact", column_names=["value"])
                            .with_columns(pl.col("value").cast(pl.Utf8)), {}))
    if export.has("kernel"):
        util = export.run("analysis.gpu_utilization")
        sections.append(Section("GPU busy time vs wall time", util, catalog.decimals("analysis.gpu_utilization"),
                                "busy = union of kernel, memcpy and memset intervals; span = first op start to last op end"))
    if export.has("nvtx_range") and export.has("runtime"):
        by_range = export.gpu_time_by_range()
        cols = ["range_name", "instances", "projected_ns", "inclusive_busy_ns", "exclusive_busy_ns", "kernels"]
        sections.append(Section(f"Top {top} NVTX ranges by GPU busy time (inclusive)", by_range.head(top).select(cols), {}))
        excl = by_range.sort("exclusive_busy_ns", descending=True).filter(pl.col("exclusive_busy_ns") > 0).head(top)
        sections.append(Section(f"Top {top} NVTX ranges by exclusive GPU busy time", excl.select(cols), {}))
    if export.has("kernel"):
        kern = export.report("cuda_gpu_kern_sum").head(top)
        sections.append(Section(f"Top {top} kernels", kern, catalog.decimals("reports.cuda_gpu_kern_sum")))
    if export.has("kernel") and export.has("runtime"):
        sections.append(_launch_overhead(export))
    if export.has("memcpy") or export.has("memset"):
        sections.append(Section("Memory copies and sets", export.memcpy(), catalog.decimals("analysis.memcpy"),
                                "synchronous = the launching call blocked until the copy ended "
                                "(`nsysql memcpy --by range|stream` for where)"))
    if export.has("kernel") or export.has("memcpy") or export.has("memset"):
        sections.append(_gaps(export, top))
    if export.has("nvtx_range"):
        steps = export.steps()
        if steps.height:
            sections.append(Section("Steps", steps.select(STEP_COLUMNS).head(top), catalog.decimals("analysis.steps"),
                                    "GPU work launched by any thread of the process while the step runs (the autograd "
                                    "thread's backward included); fprop/bprop/optim from kernel attribution; "
                                    "`nsysql steps`"))
    if export.has("kernel"):
        sections.append(_layers(export, top))
        cov = export.run("analysis.range_coverage")
        total = cov["kernel_ns"].sum() or 0
        user = cov["in_user_range_ns"].sum() or 0
        none = cov["in_no_range_ns"].sum() or 0
        note = (f"{_pct(total - user, total)} of kernel time is outside every user NVTX range on its launching "
                f"thread ({_pct(none, total)} outside every range, op markers included): what `nsys stats` "
                "projections miss. Backward kernels run on PyTorch's autograd thread; the layers table above "
                "charges them to their forward layer.")
        sections.append(Section("NVTX coverage of kernel time", cov, catalog.decimals("analysis.range_coverage"), note))
    return sections


STEP_COLUMNS = ["step", "name", "wall_ns", "gpu_busy_ns", "gpu_busy_pct", "fprop_ns", "bprop_ns", "optim_ns", "kernels",
                "off_thread_ops"]
LAUNCH_COLUMNS = ["pid", "tid", "thread_name", "launches", "cpu_ns", "gpu_busy_ns", "launch_span_ns", "gpu_idle_ns",
                  "median_api_ns", "p95_api_ns", "median_queue_ns", "p95_queue_ns", "shorter_than_launch", "launch_bound"]
GAP_COLUMNS = ["device_id", "gap_ns", "before_op", "after_op", "tid", "thread_name", "launch_api", "launch_offset_ns",
               "range_path"]
SUMMARY_MIN_GAP_US = 100


def _layers(export: Export, top: int) -> Section:
    """Kernel time per layer (two path levels, numbered layers merged), largest first, with attribution coverage."""
    from .commands.attribution import coverage_line
    layers = export.layers(depth=2, merge_repeats=True).sort("total_ns", descending=True).head(top)
    note = (coverage_line(export.attribution_coverage()) +
            ". `nsysql layers --depth N`, `nsysql kernels` for every kernel")
    return Section(f"Top {top} layers by kernel time (forward, backward, optimizer)", layers,
                   catalog.decimals("analysis.layers"), note)


def _launch_overhead(export: Export) -> Section:
    """Launch overhead per launching thread (the per-range view is its own command: it costs more)."""
    note = ("cpu = time in launching calls; queue = kernel start - launch call end (>= 0); launch_bound = GPU idle "
            "more than half of the thread's first-to-last launch span; `nsysql overhead --by range` says which NVTX "
            "ranges are launch-bound")
    return Section("Launch overhead by launching thread", export.overhead(by="thread").select(LAUNCH_COLUMNS),
                   catalog.decimals("analysis.overhead_by_thread"), note)


def _gaps(export: Export, top: int) -> Section:
    """The longest GPU idle gaps and what the launching thread was doing, with the total they add up to."""
    gaps = export.gaps(min_gap_us=SUMMARY_MIN_GAP_US, calls=False)  # the calls in each gap cost a pass over every call
    totals = export.run("analysis.export_totals").row(0, named=True)
    busy = {"busy": totals["gpu_busy_ns"], "span": totals["gpu_span_ns"]}
    idle = int(gaps["gap_ns"].sum() or 0) if gaps.height else 0
    note = (f"{gaps.height} gaps of {SUMMARY_MIN_GAP_US} µs or more, {idle / 1e6:.1f} ms in all "
            f"({_pct(idle, busy['span'])} of the GPUs' active span, busy {_pct(busy['busy'], busy['span'])}); "
            "launch_offset = launch call start - gap start (> 0: the CPU issued the work late); "
            "`nsysql gaps` lists them with the CUDA and OS calls the thread was in, `--threads` for every thread, "
            "`nsysql utilization` busy share over time")
    frame = gaps.select(GAP_COLUMNS).head(top) if gaps.height else pl.DataFrame({c: [] for c in GAP_COLUMNS})
    return Section(f"Top {top} GPU idle gaps", frame, catalog.decimals("analysis.gaps"), note)


def _pct(part: float, whole: float) -> str:
    return f"{100.0 * part / whole:.1f}%" if whole else "n/a"


def _display(section: Section) -> pl.DataFrame:
    df = section.frame
    for col in ("Name", "kernel_name", "before_op", "after_op"):
        if col in df.columns:
            df = df.with_columns(pl.col(col).map_elements(shorten_kernel, return_dtype=pl.Utf8))
    return df


def render(export: Export, sections: list[Section], fmt: Format, *, color: bool = False, width: int | None = None) -> str:
    if fmt is Format.json:
        doc = {"export": str(export.path)}
        for s in sections:
            rows = []
            for row in s.frame.iter_rows(named=True):
                rows.append({k: (float(cell_text(v, s.decimals[k])) if isinstance(v, float) and k in s.decimals else v)
                             for k, v in row.items()})
            doc[s.title] = {"rows": rows, **({"note": s.note} if s.note else {})}
        return json.dumps(doc, indent=1, default=str) + "\n"
    parts = []
    if fmt is Format.markdown:
        parts.append(f"# nsysql summary: {export.path.name}\n")
        for s in sections:
            parts.append(f"## {s.title}\n\n{to_markdown(_display(s), s.decimals)}")
            if s.note:
                parts.append(f"_{s.note}_\n")
        return "\n".join(parts)
    parts.append(f"nsysql summary: {export.path}\n")
    for s in sections:
        parts.append(to_table(_display(s), s.decimals, s.title, color=color, width=width))
        if s.note:
            parts.append(f"  {s.note}\n")
    return "\n".join(parts)
