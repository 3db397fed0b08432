"""The steady-state overview (TensorBoard's Overview page, from an nsys export): step time and its breakdown,
per-GPU utilization, SM efficiency, occupancy and tensor-core share, top operators, kernels and CUDA calls.

Every figure comes from a catalog query over the analysed steps (`analysis.steady_steps`); this module only
gathers them. Rendering is in nsysql/answers/summary.py.
"""
from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from nsysql.query.queries import Queries

# Step time breakdown categories, in the priority order of analysis.step_breakdown (JSON keys, and the
# labels TensorBoard's users know).
BREAKDOWN = (
    ("kernel_ns", "Kernel"),
    ("comm_transfer_ns", "Comm transfer"),
    ("comm_wait_ns", "Comm wait"),
    ("memcpy_ns", "Memcpy"),
    ("memset_ns", "Memset"),
    ("runtime_ns", "CUDA Runtime"),
    ("dataloader_ns", "DataLoader"),
    ("cpu_exec_ns", "CPU Exec"),
    ("other_ns", "Other"),
)
BREAKDOWN_KEYS = tuple(key for key, _ in BREAKDOWN)
GPU_KEYS = ("device_id", "utilization_pct", "sm_efficiency_pct", "achieved_occupancy_pct", "tensor_core_pct")


@dataclass
class Overview:
    windows: pl.DataFrame  # analysis.steady_steps: every step, analysed or excluded as warm-up
    stats: dict  # analysis.step_stats
    breakdown: pl.DataFrame  # analysis.step_breakdown: one row per analysed step
    gpus: pl.DataFrame  # analysis.overview_gpus
    top_ops: pl.DataFrame
    top_kernels: pl.DataFrame
    top_api: pl.DataFrame
    notes: tuple[str, ...] = ()  # what could not be computed from this export, and why
    idle_gpus: int = 0  # GPUs of the capture with no op in the analysed steps (not listed in gpus)
    ranks: dict | None = None  # pid -> rank, for a job of several ranks (analysis.comm_instances)
    comm_wait_ns: int = 0  # of the communication kernels' time in the analysed steps, the part spent waiting

    @property
    def has_steps(self) -> bool:
        return bool(self.windows.height) and self.windows["source"][0] != "gpu_span"

    def mean_breakdown(self) -> dict[str, float]:
        """Mean per analysed step of each category (ns)."""
        if not self.breakdown.height:
            return {key: 0.0 for key in ("wall_ns",) + BREAKDOWN_KEYS}
        return {key: float(self.breakdown[key].mean() or 0) for key in ("wall_ns",) + BREAKDOWN_KEYS}  # type: ignore[arg-type]

    def to_json(self, top: int) -> dict:
        """The `overview` object of `summarize --format json` (keys are a contract: see README)."""
        names = {(r["pid"], r["step"]): r["name"] for r in self.windows.iter_rows(named=True)}  # steps: per process
        steps = [{"step": row["step"], "pid": row["pid"], "name": names.get((row["pid"], row["step"])),
                  "wall_ns": row["wall_ns"], "breakdown": {key: row[key] for key in BREAKDOWN_KEYS}}
                 for row in self.breakdown.iter_rows(named=True)]
        excluded = [{"step": r["step"], "pid": r["pid"], "name": r["name"], "wall_ns": r["wall_ns"],
                     "reason": r["excluded_because"]}
                    for r in self.windows.iter_rows(named=True) if not r["analysed"]]
        mean = self.mean_breakdown()
        return {
            "scope": "steps" if self.has_steps else ("gpu_span" if self.windows.height else "none"),
            "step_time": {**self.stats, "excluded": excluded},
            "steps": steps,
            "mean_breakdown": {key: mean[key] for key in BREAKDOWN_KEYS},
            "gpus": _rows(self.gpus),
            "idle_gpus": self.idle_gpus,
            "top_ops": _rows(self.top_ops.head(top)),
            "top_kernels": _rows(self.top_kernels.head(top)),
            "top_api": _rows(self.top_api.head(top)),
            "notes": list(self.notes),
        }


def build(export: Queries) -> Overview:
    """Run the overview's queries; an export without steps or GPU work gets empty frames, never an error."""
    windows = export.run("analysis.steady_steps")
    stats = export.run("analysis.step_stats").row(0, named=True)
    has_gpu = export.has("kernel") or export.has("memcpy") or export.has("memset")
    breakdown = export.run("analysis.step_breakdown")
    gpus = export.run("analysis.overview_gpus") if has_gpu else _empty("analysis.overview_gpus")
    notes = []
    if has_gpu and not export.has("runtime"):  # nothing ties a GPU op to the range or thread that launched it
        notes.append("No CUDA API calls in this export (CUPTI_ACTIVITY_KIND_RUNTIME; capture with --trace=cuda): GPU "
                     "work cannot be tied to the ranges that launched it, so operator GPU times and CUDA API calls "
                     "are left out.")
    if export.has("graph_trace"):
        notes.append(graph_trace_note(export))
    top_ops = (export.run("analysis.top_ops") if export.has("nvtx_range") and (export.has("runtime") or not has_gpu)
               else _empty("analysis.top_ops"))
    top_kernels = export.run("analysis.top_kernels") if export.has("kernel") else _empty("analysis.top_kernels")
    top_api = export.run("analysis.top_api") if export.has("runtime") else _empty("analysis.top_api")
    idle = len(capture_gpus(export)) - gpus.height if has_gpu else 0
    ranks = ranks_of(export)
    return Overview(windows, stats, breakdown, gpus, top_ops, top_kernels, top_api, tuple(notes), idle, ranks,
                    comm_wait(export) if ranks else 0)


def comm_wait(export: Queries) -> int:
    """The communication kernels' wait (analysis.comm_waits) launched in the analysed steps, summed."""
    waits = export.run("analysis.comm_waits").filter(pl.col("analysed"))
    return int(waits["wait_ns"].sum() or 0)


def capture_gpus(export: Queries) -> set[int]:
    """The device ids of every GPU the capture saw (analysis.capture_facts' `gpus`: `0: name; 1: name`)."""
    text = export.run("analysis.capture_facts")["gpus"][0] or ""
    return {int(part.split(":", 1)[0]) for part in text.split("; ") if part.split(":", 1)[0].strip().isdigit()}


def rank_maps(instances: pl.DataFrame) -> dict:
    """{'pid': {pid: rank}, 'device': {device: rank}} from analysis.comm_instances' rows (of one export or of every
    export of a job), as the findings name the ranks."""
    return {"pid": dict(instances.select("pid", "rank").unique().iter_rows()),
            "device": dict(instances.select("device_id", "rank").unique().iter_rows())}


def ranks_of(export: Queries) -> dict | None:
    """pid -> rank of the processes that ran communication kernels, when there are several; else None."""
    if not (export.has("kernel") and export.has("runtime")) or not export.run("analysis._comm_present")["present"][0]:
        return None
    rows = export.run("analysis.comm_instances").select("pid", "rank").unique()
    return dict(rows.iter_rows()) if rows.height > 1 else None


def graph_trace_note(export: Queries) -> str:
    """What an export with CUDA graphs traced at graph level (nsys's default) shows of them, and what it cannot."""
    from nsysql.core import units
    launches, graphs, ns, gap_median, gap_sum = export.run("analysis.graph_launches").row(0)
    bubble = (f"; between consecutive replays the GPU idles a median {units.duration(gap_median)} "
              f"({units.duration(gap_sum)} in all)" if gap_median is not None else "")
    return (f"CUDA graphs traced at graph level: {launches:,} graph launch{'es' * (launches != 1)} of {graphs:,} "
            f"graph{'s' * (graphs != 1)}, {ns / 1e6:,.3f} ms on the GPU{bubble}, each counted as one GPU op (busy "
            "time, steps, gaps, utilization, layers); the kernels inside are not in the export, so kernel tables "
            "leave them out. Per-kernel detail inside graphs needs `nsys profile --cuda-graph-trace=node`.")


def _empty(query_id: str) -> pl.DataFrame:
    from nsysql.sql import catalog
    return pl.DataFrame({c.name: [] for c in catalog.get(query_id).columns})


def _rows(frame: pl.DataFrame) -> list[dict]:
    return [dict(row) for row in frame.iter_rows(named=True)]
