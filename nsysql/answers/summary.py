"""`nsysql summarize`: what a performance engineer reads first. The steady-state overview (step time and its
breakdown, GPU figures, top operators, kernels and CUDA calls), optionally the capture-wide detail tables
(`--full`), then the top findings; as text for people or JSON with stable keys for tools."""
from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass, field

import polars as pl

from nsysql.answers.findings import replay_text as findings_replay
from nsysql.answers.overview import BREAKDOWN, BREAKDOWN_KEYS, Overview
from nsysql.answers.overview import build as build_overview
from nsysql.core import progress, units
from nsysql.present.render import Format, Meta, cell_text, middle, table_width, to_markdown, to_table
from nsysql.query.queries import Queries
from nsysql.sql import catalog
from nsysql.store.inputs import printable

SUMMARY_TOP_FINDINGS = 5


@dataclass
class Section:
    title: str
    frame: pl.DataFrame
    note: str = ""
    key: str = ""  # the JSON key (snake_case, stable)
    query: str | None = None  # catalog id whose header gives the columns' units and decimals
    optional: tuple[str, ...] = ()  # columns a narrow table may hide
    # a frame no query describes: its float columns' decimals and its columns' units (ns, pct, count), so that
    # tables show durations in ms/µs as the described ones do
    own_decimals: dict[str, int] = field(default_factory=dict)
    own_units: dict[str, str] = field(default_factory=dict)

    @property
    def decimals(self) -> dict[str, int]:
        return catalog.decimals(self.query) if self.query else self.own_decimals

    @property
    def columns(self):
        """What the renderer reads of the columns: the query's header, or the own units and decimals."""
        if self.query:
            return self.query
        return {n: Meta(n, u, self.own_decimals.get(n)) for n, u in self.own_units.items()}


@dataclass
class Summary:
    export: Queries
    capture: dict  # analysis.capture_facts, plus the capture-wide GPU figures
    overview: Overview
    findings: pl.DataFrame | None
    details: list[Section] = field(default_factory=list)  # --full
    origin: int | None = None  # the capture's first event: where timestamps in the --full tables count from
    comm: Section | None = None  # only when the export has communication kernels
    title: str | None = None  # what the summary is of, when not one export (the exports of one job)
    bound: dict | None = None  # what bounds the analysed steps on their critical path (bound_section)
    structure: list[dict] = field(default_factory=list)  # analysis.structure's rows: what a step is, and how found
    requests: Section | None = None  # an inference capture's requests (analysis.requests): it leads the summary


def build_summary(export: Queries, *, top: int = 5, full: bool = False) -> Summary:
    with progress.shown("summarizing"):
        return _build_summary(export, top=top, full=full)


def _build_summary(export: Queries, *, top: int, full: bool) -> Summary:
    capture = export.run("analysis.capture_facts").row(0, named=True)
    totals = export.run("analysis.export_totals").row(0, named=True)
    capture.update(gpu_busy_ns=totals["gpu_busy_ns"], gpu_span_ns=totals["gpu_span_ns"])
    capture["capture_gpu_busy_pct"] = (100.0 * totals["gpu_busy_ns"] / totals["duration_ns"]
                                       if totals["duration_ns"] else None)
    from nsysql.answers.findings import run_findings
    findings = run_findings(export)
    details = detail_sections(export, top=top) if full else []
    origin = export.time_origin() if full else None
    return Summary(export, capture, build_overview(export), findings, details, origin, communication_section(export),
                   bound=bound_section(export), structure=structure_rows(export), requests=requests_section(export))


REQUEST_COLUMNS = ("request", "warmup", "ttft_ns", "decode_steps", "tpot_mean_ns", "tpot_p50_ns", "tpot_p99_ns",
                   "tokens_per_s", "decode_gpu_idle_pct")


def requests_section(export: Queries) -> Section | None:
    """Per request (analysis.requests) when the steps are decode steps in requests; the note gives the figures
    over the requests that are not warm-up, and what to try when the decode steps leave the GPU idle."""
    from nsysql.errors import MissingDataError
    try:
        rows = export.run("analysis.requests")
    except MissingDataError:
        return None
    if rows.is_empty():
        return None
    real = rows.filter(~pl.col("warmup")) if not rows["warmup"].all() else rows
    steps, total = int(real["decode_steps"].sum()), int(real["decode_ns"].sum())
    note = (f"{real.height} request{'s' if real.height != 1 else ''} (warm-up left out): {steps:,} decode steps, "
            f"{steps * 1e9 / total:,.1f} steps/s" if total else f"{real.height} requests")
    ttft = real["ttft_ns"].drop_nulls()
    if ttft.len():
        note += f", median TTFT {units.duration(int(ttft.median()))}"  # type: ignore[arg-type]
    idle = real["decode_gpu_idle_pct"].drop_nulls()
    mean_idle = float(idle.sum()) / idle.len() if idle.len() else 0.0
    if mean_idle >= 20:
        note += (f"; the GPU is idle {mean_idle:.0f}% of a decode step: the launches bound it, so capture "
                 "each step in a CUDA graph (torch.compile(mode=\"reduce-overhead\") or torch.cuda.graphs)")
    return Section("Requests (time to first token, time per output token)", rows.select(REQUEST_COLUMNS),
                   note + "; `nsysql requests` has every column", key="requests", query="analysis.requests")


def structure_rows(export: Queries) -> list[dict]:
    """analysis.structure's rows, the process with the most steps first; none for an export it cannot read."""
    from nsysql.errors import MissingDataError
    try:
        frame = export.run("analysis.structure")
    except MissingDataError:
        return []
    return frame.sort(["steps", "pid"], descending=[True, False]).to_dicts()


def _shown_bound(summary: Summary) -> dict | None:
    """The bound line people read: when the CPU runs ahead of the GPU the GPU sets the pace whatever the ranges'
    critical path says (it walks the launches, which wait for the GPU), so the line says that."""
    rows = summary.structure
    if rows and rows[0]["clock"] == "period":
        return {"line": "Bound by: the GPU (the CPU runs ahead and waits for it; `nsysql critical-path` walks each "
                        "step's range)."}
    return summary.bound


def structure_text(rows: list[dict]) -> str:
    """One sentence on what a step is and how nsysql found it, and one when the CPU runs ahead of the GPU (the
    process with the most steps speaks for the export)."""
    if not rows or rows[0]["step_source"] == "gpu_span":
        return ""
    r = rows[0]
    micro, recompute = r.get("micro_batches") or 0, r.get("recompute_ns") or 0
    if (r["step_source"], r["step_rule"], r["clock"], r["close_level"]) == ("range", "step name", "range", None) \
            and "/" not in r["step_level"] and not micro and not recompute:
        return ""  # a top-level step-named range, as the Analysed line names it: nothing to add
    kind = {"training": "Training", "inference": "Inference"}.get(r["program_kind"], "A program")
    source = r["step_source"]
    if source == "range":
        why = {"step name": "named like a step", "decode steps": "decode steps", "override": "chosen by --step-range",
               "repeating level": "the outermost level that repeats and tiles the work"}.get(r["step_rule"], r["step_rule"])
        text = f"{kind}; a step is one `{r['step_level']}` range ({why})"
    elif source == "pattern":
        text = f"{kind}; a step is one repetition of the top-level ranges from `{r['step_level']}` on"
    elif source == "graph-launch":
        text = f"{kind} without NVTX steps; a step is one CUDA graph launch of the repeating op sequence"
    elif r.get("request_ops"):
        text = (f"{kind} without NVTX steps: requests of {r['request_ops']:,} GPU ops repeat, each a prefill and "
                f"then a run of alike iterations; a step is one of those (a decode step: {r['period_ops']:,} ops, "
                f"from `{middle(printable(r['step_level']), 40)}`)")
    else:
        text = (f"{kind} without NVTX steps; a step is one iteration of the repeating GPU op sequence "
                f"({r['period_ops']:,} ops, from `{middle(printable(r['step_level']), 40)}`)")
    if micro > 1:
        text += f", {micro} micro-batches each (gradient accumulation)"
    if recompute:
        text += (f"; activation checkpointing re-runs {units.duration(recompute)} of forward GPU work in each "
                 "step's backward (`recompute` in `nsysql layers`)")
    if r.get("close_level"):
        text += f"; `{r['close_level']}` would make steps too (--step-range)"
    text += "."
    if r["clock"] == "period":
        text += (f" The CPU runs ahead of the GPU (a step's GPU work ends a median "
                 f"{units.duration(r['cpu_ahead_ns'])} after its range): step times are GPU periods "
                 "(`nsysql steps` shows both).")
    return text


def bound_section(export: Queries) -> dict | None:
    """The analysed steps' critical path (nsysql/answers/critical_path.py): the line saying what bounds them and the
    mean time per step of each kind on the path; None when the export has no graph to walk."""
    from nsysql.answers import critical_path
    from nsysql.answers.what_if import GAINS_VERSION
    from nsysql.errors import MissingDataError

    def compute() -> dict | None:
        budget = critical_path.SUMMARY_BUDGET
        try:
            comp = critical_path.composition(export, budget=budget)
            items = critical_path.item_rows(export, budget=budget)
            analysed = critical_path.steps(export)["step"].n_unique()
        except MissingDataError:
            return None
        return bound_of(comp, items, analysed)
    from nsysql.answers.critical_path_kept import code_key
    return export.store.fact(f"critical_path_bound {GAINS_VERSION} {code_key()}", compute)  # kept with the answers


def bound_of(comp: pl.DataFrame, items: pl.DataFrame, analysed: int) -> dict | None:
    """bound_section's answer from the walked steps' composition and items (`analysed`: how many analysed steps
    there are, by number; every process numbers its own). The line covers them all, or says which it covers:
    `last 7 of 1,200 steps`, `last step of 6` (a sample past critical_path.SUMMARY_BUDGET)."""
    from nsysql.answers import critical_path
    line = critical_path.bound_line(comp, items)
    if line is None:
        return None
    mean = {c: int(comp[c].mean()) for c in ("path_ns",) + critical_path.COLUMNS}  # type: ignore[arg-type]
    walked = comp["step"].n_unique()
    sample = "" if walked >= analysed else f", last {walked:,} of {analysed:,} steps" if walked > 1 else \
        f", last step of {analysed:,}"
    return {"line": f"Bound by (critical path{sample}): " + line[len("the step is bound by: "):] + ".",
            "steps": comp.height, "mean_per_step": mean}



def communication_section(export: Queries) -> Section | None:
    """Per analysed step and rank: compute, transfer, wait, exposed communication, lateness and the straggler
    (analysis.comm); None without communication kernels. With several ranks it leads the summary, with the
    straggler in its note."""
    if not (export.has("kernel") and export.has("runtime")) or not export.run("analysis._comm_present")["present"][0]:
        return None
    return ranks_section(export.run("analysis.comm"))


RANK_COLUMNS = ("step", "rank", "pid", "device_id", "wall_ns", "compute_ns", "transfer_ns", "wait_ns", "exposed_comm_ns",
                "late_ns", "straggler")


def ranks_section(rows: pl.DataFrame) -> Section:
    """communication_section's table from analysis.comm's rows (of one export, or of every export of a job): per
    analysed step and rank, compute, transfer, wait, exposed communication, lateness and the straggler; the note
    names the rank that is the straggler most often."""
    analysed = rows.filter(pl.col("analysed")) if rows["analysed"].any() else rows
    frame = analysed.select(RANK_COLUMNS).sort("step", "rank", "pid", "device_id")
    per_rank = (analysed.group_by("rank", "pid", "device_id")
                .agg(pl.len().alias("steps"), pl.col("late_ns").mean().alias("late_ns"),
                     pl.col("straggler").sum().alias("straggler_steps")))
    several = per_rank.height > 1
    note = ("transfer = communication moving data, wait = spinning until the collective's last rank arrives, late = "
            "how long after the first rank it arrived (summed over the step's collectives); `nsysql comm` for the "
            "other columns")
    if several:
        worst = per_rank.sort(["straggler_steps", "late_ns"], descending=True).row(0, named=True)
        if worst["straggler_steps"]:
            note = (f"straggler: rank {worst['rank']} (pid {worst['pid']}, GPU {worst['device_id']}) arrives last in "
                    f"{worst['straggler_steps']} of {worst['steps']} analysed steps, "
                    f"{units.duration(int(worst['late_ns']))} late per step; " + note)
        else:
            note = "no straggler: no rank arrives late at the collectives; " + note
    return Section("Ranks per analysed step" if several else "Communication per analysed step",
                   frame, note, key="communication", query="analysis.comm", optional=("wall_ns", "exposed_comm_ns"))


def _ranks_shown(s: Section, top: int) -> tuple[pl.DataFrame, list[str]]:
    """The ranks table for people: the first `top` steps' rows, then each rank's mean over every analysed step
    (`mean`, its straggler steps counted), and a line saying how many steps are left out."""
    frame = s.frame
    steps = frame["step"].unique(maintain_order=True).to_list()
    shown = frame.filter(pl.col("step").is_in(steps[:top])).with_columns(
        pl.col("step").cast(pl.Utf8), pl.when(pl.col("straggler")).then(pl.lit("yes")).otherwise(pl.lit(""))
        .alias("straggler"))
    if frame.select("rank", "pid").unique().height == 1:  # one rank waits for nobody
        shown = shown.drop("straggler")
    if len(steps) <= 1:
        return shown, []
    means = (frame.group_by("rank", "pid", "device_id", maintain_order=True)
             .agg(*[pl.col(c).mean().round(0).cast(pl.Int64) for c in RANK_COLUMNS if c.endswith("_ns")],
                  (pl.col("straggler").sum().cast(pl.Utf8) + pl.lit(" of ") + pl.len().cast(pl.Utf8))
                  .alias("straggler"))
             .sort("rank", "pid", "device_id").with_columns(pl.lit("mean").alias("step")))
    if "straggler" not in shown.columns:
        means = means.drop("straggler")
    more = len(steps) - min(len(steps), top)
    notes = [f"{_plural(more, 'more step')}; the means are over all of them"] if more else []
    return pl.concat([shown, means.select(shown.columns)]), notes


def detail_sections(export: Queries, top: int = 10) -> list[Section]:
    """The capture-wide tables behind `summarize --full`: ranges, kernels, launch overhead, copies, gaps, steps,
    layers and NVTX coverage, each over the whole capture (warm-up and start-up included)."""
    sections: list[Section] = []
    if export.has("kernel"):
        util = export.run("analysis.gpu_utilization")
        sections.append(Section("GPU busy time vs wall time (capture-wide)", util,
                                "busy = union of kernel, memcpy and memset intervals; span = first op start to last "
                                "op end", key="gpu_utilization", query="analysis.gpu_utilization",
                                optional=("first_op_ns", "last_op_ns", "idle_ns")))
    if export.has("nvtx_range") and export.has("runtime"):
        by_range = export.gpu_time_by_range().filter(~pl.col("is_op_marker"))  # op markers: see top operators
        cols = ["range_name", "instances", "projected_ns", "inclusive_busy_ns", "exclusive_busy_ns", "kernels"]
        sections.append(Section(f"Top {top} NVTX ranges by GPU busy time (capture-wide)",
                                by_range.head(top).select(cols), key="ranges", query="analysis.gpu_time_by_range",
                                optional=("projected_ns", "exclusive_busy_ns")))
    if export.has("kernel"):
        kern = export.report("cuda_gpu_kern_sum").head(top)
        sections.append(Section(f"Top {top} kernels (capture-wide)", kern, key="kernels", query="reports.cuda_gpu_kern_sum",
                                optional=("Med (ns)", "Min (ns)", "Max (ns)", "StdDev (ns)")))
    if export.has("kernel") and export.has("runtime"):
        sections.append(_launch_overhead(export))
    if export.has("memcpy") or export.has("memset"):
        sections.append(Section("Memory copies and sets (capture-wide)", export.memcpy(),
                                "synchronous = the launching call blocked until the copy ended "
                                "(`nsysql memcpy --by range|stream` for where)", key="memory", query="analysis.memcpy",
                                optional=("src_kind", "dst_kind", "avg_bytes", "sync_api_ns", "gb_per_s")))
    if export.has("kernel") or export.has("memcpy") or export.has("memset"):
        sections.append(_gaps(export, top))
    if export.has("nvtx_range"):
        steps = export.steps()
        if steps.height:
            columns = [c for c in STEP_COLUMNS if c != "comm_ns" or (steps["comm_ns"] > 0).any()]  # comm: NCCL's, if any
            sections.append(Section("Steps", steps.select(columns).head(top),
                                    "GPU work launched by any thread of the process while the step runs (the autograd "
                                    "thread's backward included); fprop/bprop/optim/comm from kernel attribution; "
                                    "`nsysql steps`", key="steps", query="analysis.steps",
                                    optional=("pid", "kernels", "off_thread_ops", "optim_ns", "comm_ns")))
    if export.has("kernel") and export.has("nvtx_range"):  # layers and coverage are of NVTX ranges
        sections.append(_layers(export, top))
        cov = export.run("analysis.range_coverage")
        total = int(cov["kernel_ns"].sum() or 0)  # sums of BIGINT ns
        user = int(cov["in_user_range_ns"].sum() or 0)
        none = int(cov["in_no_range_ns"].sum() or 0)
        note = (f"{_pct(total - user, total)} of kernel time is outside every user NVTX range on its launching "
                f"thread ({_pct(none, total)} outside every range, op markers included): what `nsys stats` "
                "projections miss.")
        if cov["thread_name"].str.starts_with("pt_autograd_").any():  # a PyTorch program's autograd thread
            note += (" Backward kernels run on PyTorch's autograd thread; the layers table above charges them to "
                     "their forward layer.")
        sections.append(Section("NVTX coverage of kernel time", cov, note, key="coverage", query="analysis.range_coverage"))
    return sections


STEP_COLUMNS = ["step", "pid", "name", "wall_ns", "gpu_busy_ns", "gpu_busy_pct", "fprop_ns", "bprop_ns", "optim_ns",
                "comm_ns", "kernels", "off_thread_ops"]
LAUNCH_COLUMNS = ["pid", "tid", "thread_name", "launches", "cpu_ns", "gpu_busy_ns", "launch_span_ns", "gpu_idle_ns",
                  "median_api_ns", "p95_api_ns", "median_queue_ns", "p95_queue_ns", "shorter_than_launch", "launch_bound"]
GAP_COLUMNS = ["device_id", "gap_ns", "before_op", "after_op", "tid", "thread_name", "launch_api", "launch_offset_ns",
               "range_path"]
SUMMARY_MIN_GAP_US = 100


def _layers(export: Queries, top: int) -> Section:
    """Kernel time per layer (two path levels, numbered layers merged), largest first, with attribution coverage."""
    from nsysql.answers.attribution import coverage_line
    layers = export.layers(depth=2, merge_repeats=True, analysed=True).sort("total_ns", descending=True).head(top)
    for quiet in ("comm_ns", "recompute_ns"):  # no NCCL kernel, no re-run among them: the column only where there is
        if not (layers[quiet] > 0).any():
            layers = layers.drop(quiet)
    note = (coverage_line(export.attribution_coverage()) +
            ". `nsysql layers --depth N`, `nsysql kernels` for every kernel")
    return Section(f"Top {top} layers by kernel time in the analysed steps (forward, backward, optimizer)", layers, note,
                   key="layers", query="analysis.layers", optional=("kernels", "bprop_ratio", "optim_ns", "comm_ns"))


def _launch_overhead(export: Queries) -> Section:
    """Launch overhead per launching thread (the per-range view is its own command: it costs more)."""
    note = ("cpu = time in launching calls; queue = kernel start - launch call end (>= 0); launch_bound = GPU idle "
            "more than half of the thread's first-to-last launch span" +
            ("; `nsysql overhead --by range` says which NVTX ranges are launch-bound" if export.has("nvtx_range")
             else ""))
    return Section("Launch overhead by launching thread (capture-wide)",
                   export.overhead(by="thread", every=True).select(LAUNCH_COLUMNS), note, key="launch_overhead", query="analysis.overhead_by_thread",
                   optional=("pid", "launch_span_ns", "median_queue_ns", "p95_queue_ns", "p95_api_ns", "cpu_ns"))


def _gaps(export: Queries, top: int) -> Section:
    """The longest GPU idle gaps and what the launching thread was doing, with the total they add up to."""
    gaps = export.gaps(min_gap_us=SUMMARY_MIN_GAP_US, calls=False, every=True)  # calls: a pass over every call
    totals = export.run("analysis.export_totals").row(0, named=True)
    busy = {"busy": totals["gpu_busy_ns"], "span": totals["gpu_span_ns"]}
    idle = int(gaps["gap_ns"].sum() or 0) if gaps.height else 0
    note = (f"{gaps.height} gaps of {SUMMARY_MIN_GAP_US} µs or more, {idle / 1e6:.1f} ms in all "
            f"({_pct(idle, busy['span'])} of the GPUs' active span, busy {_pct(busy['busy'], busy['span'])}); "
            "launch_offset = launch call start - gap start (> 0: the CPU issued the work late); "
            "`nsysql gaps` lists them with the CUDA and OS calls the thread was in, `--threads` for every thread, "
            "`nsysql utilization` busy share over time")
    frame = gaps.select(GAP_COLUMNS).head(top) if gaps.height else pl.DataFrame({c: [] for c in GAP_COLUMNS})
    return Section(f"Top {top} GPU idle gaps (capture-wide)", frame, note, key="gaps", query="analysis.gaps", optional=("before_op", "after_op", "tid", "launch_api"))


def _pct(part: float, whole: float) -> str:
    return f"{100.0 * part / whole:.1f}%" if whole else "n/a"


def render_sections(title: str, sections: list[Section], fmt: Format, *, color: bool = False,
                    width: int | None = None) -> str:
    """Sections of tables (several exports side by side) as json, markdown or text."""
    if fmt is Format.json:
        doc: dict = {"exports": title}
        for s in sections:
            rows = []
            for row in s.frame.iter_rows(named=True):
                rows.append({k: (float(cell_text(v, s.decimals[k])) if isinstance(v, float) and k in s.decimals else v)
                             for k, v in row.items()})
            doc[s.key or s.title] = {"title": s.title, "rows": rows, **({"note": s.note} if s.note else {})}
        return json.dumps(doc, indent=1, default=str) + "\n"
    parts = []
    if fmt is Format.markdown:
        parts.append(f"# nsysql summary: {title}\n")
        for s in sections:
            parts.append(f"## {s.title}\n\n{to_markdown(s.frame, s.decimals, columns=s.columns)}")
            if s.note:
                parts.append(f"_{s.note}_\n")
        return "\n".join(parts)
    parts.append(f"nsysql summary: {title}\n")
    for s in sections:
        parts.append(to_table(s.frame, s.decimals, s.title, color=color, width=width, columns=s.columns,
                              optional=s.optional))
        if s.note:
            parts.append(textwrap.fill(s.note, width=(width or table_width()) - 1, initial_indent="  ",
                                       subsequent_indent="  ", break_on_hyphens=False) + "\n")
    return "\n".join(parts)


# -- the summary for people ---------------------------------------------------------------------------------
def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def _process_steps_text(rows: list[dict]) -> str:
    """Step numbers of rows with `pid` and `step`: '1-3, 7'; with several processes (each numbers its own steps)
    'pid 100: 1-3; pid 200: 1-2'."""
    by_pid: dict = {}
    for r in rows:
        by_pid.setdefault(r["pid"], []).append(r["step"])
    if len(by_pid) == 1:
        return _steps_text(next(iter(by_pid.values())))
    return "; ".join(f"pid {pid}: {_steps_text(sorted(steps))}" for pid, steps in sorted(by_pid.items()))


def _steps_text(numbers: list[int]) -> str:
    """[1, 2, 3, 7] -> '1-3, 7'."""
    runs, start = [], None
    for i, n in enumerate(numbers):
        if start is None:
            start = n
        if i + 1 == len(numbers) or numbers[i + 1] != n + 1:
            runs.append(f"{start}-{n}" if n != start else f"{n}")
            start = None
    return ", ".join(runs)


def _wrap(text: str, width: int, indent: str = "") -> list[str]:
    return textwrap.wrap(text, width=max(width, 20), initial_indent=indent, subsequent_indent=indent + "  ",
                         break_on_hyphens=False) or [indent]


def _header_lines(summary: Summary, width: int) -> list[str]:
    c, ov = summary.capture, summary.overview
    what = summary.title or str(summary.export.path)
    lines = [f"nsysql summary: {middle(printable(what), max(width - 16, 10))}"]
    gpus = [f"GPU {g['device_id']}: {g['gpu_name']}, {g['sm_count']} SMs, {g['memory_bytes'] / 1e9:.0f} GB"
            for g in ov.gpus.iter_rows(named=True)] or ([f"GPUs: {c['gpus']}"] if c.get("gpus") else ["no GPU activity"])
    lines += _wrap("; ".join(gpus), width)
    busy = ""
    if c.get("capture_gpu_busy_pct") is not None and c.get("gpu_busy_ns"):
        share = c["capture_gpu_busy_pct"]
        busy = f", GPU busy {share:.{1 if share >= 0.1 else 3}f}% of it (start-up and warm-up included)"
    processes = f"{c['processes']:,} process{'' if c['processes'] == 1 else 'es'}"
    lines += _wrap(f"Capture {units.duration(c['duration_ns'])}{busy}; {processes}, {_plural(c['threads'], 'thread')}, "
                   f"{_plural(c['kernels'], 'kernel')}; nsys {c['nsys_version'] or '?'}", width)
    return lines


def _scope_lines(ov: Overview, width: int) -> list[str]:
    st = ov.stats
    if ov.has_steps and st["analysed_steps"]:
        analysed = [r for r in ov.windows.iter_rows(named=True) if r["analysed"]]
        names = sorted({r["name"] for r in analysed})
        excluded = [r for r in ov.windows.iter_rows(named=True) if not r["analysed"]]
        if st["processes"] > 1:  # each process numbers its own steps
            text = (f"Analysed: {len(analysed):,} of {_plural(ov.windows.height, 'step')} in {st['processes']} "
                    f"processes ({', '.join(names[:3])}; {_process_steps_text(analysed)}), "
                    f"{units.duration(st['total_ns'])} in all; ")
        else:
            text = (f"Analysed: {_plural(len(analysed), 'step')} ({_process_steps_text(analysed)} of "
                    f"{ov.windows.height}; {', '.join(names[:3])}), {units.duration(st['total_ns'])} in all; ")
        if excluded:
            why = {"warmup_range": "inside a warm-up range", "slow_leading_step": "slow leading steps",
                   "slow_leading_request": "a slow leading request"}
            reasons = sorted({why.get(r["excluded_because"], r["excluded_because"]) for r in excluded})
            text += (f"{_plural(len(excluded), 'step')} ({_process_steps_text(excluded)}) left out as "
                     f"warm-up ({', '.join(reasons)}).")
        else:
            text += "no step left out as warm-up."
    elif ov.windows.height:
        w = ov.windows.row(0, named=True)
        text = (f"Analysed: no step ranges found, so the span from the first to the last GPU op "
                f"({units.duration(w['wall_ns'])}) stands for one step.")
    else:
        text = "Analysed: nothing (no step ranges and no GPU activity)."
    return _wrap(text, width)


def _step_time_line(ov: Overview, width: int, bound: dict | None = None) -> list[str]:
    """The step time line, and after it in the same paragraph what bounds the steps (bound_section)."""
    text = _step_time_text(ov)
    if bound:
        text = f"{text} {bound['line']}" if text else bound["line"]
    return _wrap(text, width) if text else []


def _step_time_text(ov: Overview) -> str:
    st = ov.stats
    if not st["analysed_steps"] or not ov.has_steps:
        return ""
    outliers = st["outlier_steps"] or []
    if st["analysed_steps"] == 1:
        return f"Step time: {units.duration(st['max_ns'])} (one step)."
    several = st["processes"] > 1  # each process numbers its own steps: say whose
    slowest = f"step {st['slowest_step']}" + (f" of pid {st['slowest_pid']}" if several else "")
    text = (f"Step time: mean {units.duration(st['mean_ns'])}, median {units.duration(st['median_ns'])}, "
            f"max {units.duration(st['max_ns'])} ({slowest}); ")
    judged = "its process's median" if several else "median"
    listed = _process_steps_text([{"pid": p, "step": s} for p, s in zip(st["outlier_pids"] or [], outliers)])
    text += (f"outlier steps (> 1.5 x {judged}): {listed}." if outliers
             else "no outlier step." if st["analysed_steps"] >= 3 else "too few steps to judge outliers.")
    return text


def _breakdown_frame(ov: Overview, top: int) -> tuple[pl.DataFrame, int]:
    """Per analysed step (the first `top`) and the mean over all of them, in ns; with several processes the step
    reads `3 (pid 100)`, as each process numbers its own steps."""
    ranks = ov.ranks or {}
    ordered = (ov.breakdown.with_columns(pl.col("pid").replace_strict(ranks, default=None).alias("_rank"))
               .sort("step", "_rank", "pid", nulls_last=True).drop("_rank") if ranks else ov.breakdown)
    rows = ordered.head(top)
    several = ov.breakdown["pid"].n_unique() > 1
    labels = [(f"{s} r{ranks[p]}" if p in ranks else f"{s} (pid {p})") if several else str(s)
              for s, p in zip(rows["step"].to_list(), rows["pid"].to_list())]
    frame = pl.DataFrame({"step": labels,
                          **{k: rows[k].cast(pl.Float64).to_list() for k in ("wall_ns",) + BREAKDOWN_KEYS}},
                         schema={"step": pl.Utf8, **{k: pl.Float64 for k in ("wall_ns",) + BREAKDOWN_KEYS}})
    if ov.breakdown.height > 1:
        mean = ov.mean_breakdown()
        frame = pl.concat([frame, pl.DataFrame({"step": ["mean"], **{k: [mean[k]] for k in ("wall_ns",) + BREAKDOWN_KEYS}},
                                               schema=frame.schema)])
    return frame, ov.breakdown.height - rows.height


BREAKDOWN_META = {k: catalog.Column(k, "BIGINT", "ns", 2) for k in ("wall_ns",) + BREAKDOWN_KEYS}
_SHORT = {"wall_ns": "wall", "kernel_ns": "kernel", "comm_transfer_ns": "transfer", "comm_wait_ns": "wait",
          "memcpy_ns": "memcpy", "memset_ns": "memset",
          "runtime_ns": "runtime", "dataloader_ns": "data", "cpu_exec_ns": "cpu_exec", "other_ns": "other"}


def _breakdown_lines(ov: Overview, width: int, top: int, color: bool) -> list[str]:
    if not ov.breakdown.height:
        return []
    frame, more = _breakdown_frame(ov, top)
    unused = _unused_comm(ov)  # a job without communication reads as before: no empty comm columns
    frame = frame.drop(unused).rename(_SHORT, strict=False)
    meta = {_SHORT[k]: catalog.Column(_SHORT[k], "BIGINT", "ns", 2) for k in BREAKDOWN_META if k not in unused}
    notes = ([f"{_plural(more, 'more step')}; the mean is over all of them; `nsysql overview -f csv` lists every step"]
             if more else [])
    table = to_table(frame, title="Step time breakdown (each instant in one category, priority left to right)",
                     columns=meta, width=width, color=color, notes=notes,
                     optional=("other", "memset") if not unused else ()).rstrip("\n").split("\n")
    mean = ov.mean_breakdown()
    shares = [f"{label} {100.0 * mean[key] / mean['wall_ns']:.1f}%" for key, label in BREAKDOWN
              if mean["wall_ns"] and key not in unused]
    return table + _wrap("Share of step time: " + ", ".join(shares), width)


def _unused_comm(ov: Overview) -> list[str]:
    """The communication categories no analysed step has (every export without NCCL)."""
    return [k for k in ("comm_transfer_ns", "comm_wait_ns") if not ov.breakdown[k].sum()]


def _gpu_lines(ov: Overview, width: int) -> list[str]:
    lines = []
    for g in ov.gpus.iter_rows(named=True):
        def pct(v):
            return "n/a" if v is None else f"{v:.1f}%"
        wait = (f", waiting for other ranks {pct(g['comm_wait_pct'])}" if (g.get("comm_wait_pct") or 0) >= 0.05 else "")
        # graph-level replays have no grids: the estimates cover the other kernels, and say how much they miss
        blind = g.get("efficiency_unknown_pct") or 0
        covered = (f" (kernels with grid sizes only: {pct(blind)} of kernel time is graph replays without them)"
                   if blind >= 0.05 else "")
        unknown = g.get("tensor_core_unknown_pct") or 0
        precision = f" ({pct(unknown)} of unknown precision)" if unknown >= 0.05 else ""
        lines += _wrap(f"GPU {g['device_id']} in the analysed steps: utilization {pct(g['utilization_pct'])}{wait}, "
                       f"est. SM efficiency {pct(g['sm_efficiency_pct'])}, est. achieved occupancy "
                       f"{pct(g['achieved_occupancy_pct'])}{covered}, tensor cores {pct(g['tensor_core_pct'])} of "
                       f"kernel time{precision}", width)
    if ov.idle_gpus:
        lines += _wrap(f"{_plural(ov.idle_gpus, 'other GPU')} of the capture ran nothing in the analysed steps.", width)
    return lines


def _top_tables(ov: Overview, width: int, top: int, color: bool, wide: bool) -> list[str]:
    out: list[str] = []
    ops = ov.top_ops.head(top)
    if ops.height:
        is_op = ops["kind"][0] == "op"
        cols = (["name", "calls", "device_self_ns", "device_total_ns", "host_self_ns", "host_total_ns", "shapes"]
                if is_op else ["name", "calls", "device_self_ns", "host_total_ns"])
        title = ("Top operators by GPU self time (PyTorch op markers)" if is_op
                 else "Top innermost NVTX ranges by GPU time (no op markers in the steps)")
        out += to_table(ops.select(cols), title=title, columns="analysis.top_ops", width=width, color=color,
                        wide=wide, optional=("shapes", "host_total_ns", "device_total_ns"),
                        text_min={"name": 26}).rstrip("\n").split("\n")
    kern = ov.top_kernels.head(top)
    if kern.height:
        out += [""] * bool(out) + to_table(kern.select("short_name", "calls", "total_ns", "avg_ns", "pct"),
                               title="Top kernels by GPU time", columns="analysis.top_kernels", width=width,
                               color=color, wide=wide, optional=("avg_ns",)).rstrip("\n").split("\n")
        if ov.comm_wait_ns:  # NCCL kernels spin while they wait for a late rank: their time is not all work
            out += _wrap(f"NCCL kernels' time includes {units.duration(ov.comm_wait_ns)} of waiting for other ranks.",
                         width, "  ")
    api = ov.top_api.head(top)
    if api.height:
        out += [""] * bool(out)
        shown = api.select("api_name", "calls", "total_ns", "max_ns", "pct",
                           pl.when(pl.col("synchronizing")).then(pl.lit("sync")).otherwise(pl.lit(""))
                           .alias("blocks"))
        out += to_table(shown, title="Top CUDA API calls (sync = the CPU waits for the GPU)",
                               columns="analysis.top_api", width=width, color=color, wide=wide,
                               optional=("max_ns",)).rstrip("\n").split("\n")
    return out


def _findings_lines(findings: pl.DataFrame | None, width: int, top: int) -> list[str]:
    if findings is None:
        return []
    from nsysql.answers.findings import render_text
    if not findings.height:
        header = "Findings"
    elif findings.height > top:
        header = (f"Findings, largest recoverable time first (top {top} of {findings.height}; "
                  f"`nsysql findings` lists all)")
    else:
        header = "Findings, largest recoverable time first"
    return render_text(findings.head(top), width=width, header=header).rstrip("\n").split("\n")


def render_text(summary: Summary, *, width: int, color: bool = False, top: int = 5, wide: bool = False) -> str:
    ov = summary.overview
    notes = [line for note in ov.notes for line in _wrap(note, width)]
    shape = structure_text(summary.structure)
    blocks = [_header_lines(summary, width) + [""] + _scope_lines(ov, width) + (_wrap(shape, width) if shape else [])
              + _step_time_line(ov, width, _shown_bound(summary)) + notes]
    leads = (summary.comm is not None  # a job of several ranks: who waits for whom
             and summary.comm.frame.select("rank", "pid").unique().height > 1)
    if leads:
        blocks.append(_section_lines(summary.comm, summary, width, color, wide, max(top, 3)))  # type: ignore[arg-type]
    if summary.requests is not None:  # an inference capture: per request first
        blocks.append(_section_lines(summary.requests, summary, width, color, wide, max(top, 3)))
    blocks += [_breakdown_lines(ov, width, max(top, 3), color), _gpu_lines(ov, width),
               _top_tables(ov, width, top, color, wide)]
    for s in ([summary.comm] if summary.comm and not leads else []) + summary.details:
        blocks.append(_section_lines(s, summary, width, color, wide, max(top, 3)))
    blocks.append(_findings_lines(summary.findings, width, SUMMARY_TOP_FINDINGS))
    return "\n\n".join("\n".join(b) for b in blocks if b) + "\n"


def _section_lines(s: Section, summary: Summary, width: int, color: bool, wide: bool, top: int = 3) -> list[str]:
    frame, notes = _ranks_shown(s, top) if s.key == "communication" else (s.frame, [])
    table = to_table(frame, s.decimals, s.title, color=color, width=width, columns=s.query, notes=notes,
                     optional=s.optional, wide=wide, origin=summary.origin).rstrip("\n").split("\n")
    return table + (_wrap(s.note, width, "  ") if s.note else [])


def render_markdown(summary: Summary, top: int = 5) -> str:
    ov = summary.overview
    parts = [f"# nsysql summary: {summary.title or summary.export.path.name}", "",
             " ".join(_scope_lines(ov, 10_000) + ([structure_text(summary.structure)] if summary.structure else [])
                      + _step_time_line(ov, 10_000, _shown_bound(summary))), ""]
    if ov.breakdown.height:
        frame, _ = _breakdown_frame(ov, top)
        unused = _unused_comm(ov)
        parts += ["## Step time breakdown", "", to_markdown(frame.drop(unused).rename(_SHORT, strict=False), columns={
            _SHORT[k]: catalog.Column(_SHORT[k], "BIGINT", "ns", 2) for k in BREAKDOWN_META if k not in unused})]
    if ov.gpus.height:
        parts += ["## GPUs", "", to_markdown(ov.gpus, columns="analysis.overview_gpus")]
    for title, frame, query in (("Top operators", ov.top_ops.head(top), "analysis.top_ops"),
                                ("Top kernels", ov.top_kernels.head(top), "analysis.top_kernels"),
                                ("Top CUDA API calls", ov.top_api.head(top), "analysis.top_api")):
        if frame.height:
            parts += [f"## {title}", "", to_markdown(frame, columns=query)]
    for s in ([summary.comm] if summary.comm else []) + ([summary.requests] if summary.requests else []) + summary.details:
        parts += [f"## {s.title}", "", to_markdown(s.frame, s.decimals, columns=s.query, origin=summary.origin)]
        if s.note:
            parts += [f"_{s.note}_", ""]
    if summary.findings is not None:
        parts += ["## Findings", ""]
        for i, f in enumerate(summary.findings.head(SUMMARY_TOP_FINDINGS).iter_rows(named=True), 1):
            parts += [f"{i}. **{f['title']}** (up to {units.duration(f['recoverable_ns'])} recoverable"
                      f"{findings_replay(f)}): {f['evidence']}; "
                      f"where: {f['where']}; do: {f['action']}"]
        if not summary.findings.height:
            parts.append("No rule fired.")
    return "\n".join(parts) + "\n"


def to_json(summary: Summary, top: int = 5) -> dict:
    """`summarize --format json`: stable snake_case keys; numbers are JSON numbers, durations exact ns."""
    doc: dict = {"export": summary.title or str(summary.export.path), "capture": summary.capture,
                 "overview": summary.overview.to_json(top)}
    for s in ([summary.comm] if summary.comm else []) + ([summary.requests] if summary.requests else []) + summary.details:
        doc[s.key] = {"rows": _json_rows(s), **({"note": s.note} if s.note else {})}
    if summary.structure:
        doc["structure"] = {**summary.structure[0], "processes": summary.structure}
    if summary.bound:
        doc["critical_path"] = summary.bound
    from nsysql.answers.findings import to_records
    doc["findings"] = to_records(summary.findings) if summary.findings is not None else []
    return doc


def _json_rows(s: Section) -> list[dict]:
    return [{k: (float(cell_text(v, s.decimals[k])) if isinstance(v, float) and k in s.decimals else v)
             for k, v in row.items()} for row in s.frame.iter_rows(named=True)]


def render_summary(summary: Summary, fmt: Format, *, width: int, color: bool = False, top: int = 5,
                   wide: bool = False) -> str:
    if fmt is Format.json:
        return json.dumps(to_json(summary, top), indent=1, default=str) + "\n"
    if fmt is Format.markdown:
        return render_markdown(summary, top)
    return render_text(summary, width=width, color=color, top=top, wide=wide)
