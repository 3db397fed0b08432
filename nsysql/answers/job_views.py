"""The answer for a job given as one export per rank, as one export of the whole job (one nsys over torchrun) gives
it: the overview, the findings and the summary of every rank together.

Each export's own analyses already read the job's matched collectives (nsysql/answers/job.py links them); what spans the
ranks is computed here by the same SQL over the ranks' rows put together (step statistics, the straggler finding),
or by adding up per-name totals (top kernels, CUDA calls, ranges). Processes of one host have different pids, so
(pid, step) still names a step; exports from several hosts whose pids collide are refused.
"""
from __future__ import annotations

import polars as pl

from nsysql.answers.findings import empty, per_job, rule_params, run_findings, with_causes
from nsysql.answers.job import each, restraggle, run_over
from nsysql.answers.overview import Overview, capture_gpus, rank_maps
from nsysql.answers.overview import build as build_overview
from nsysql.errors import NsysqlError
from nsysql.sql import catalog


def check_pids(exports: list) -> None:
    """Refuse exports whose processes share a pid (one job over several hosts): steps are named by (pid, step)."""
    seen: dict[int, str] = {}
    pids = each(exports, lambda ex: ex.run("analysis.steady_steps")["pid"].drop_nulls().unique().to_list())
    for ex, found in zip(exports, pids):
        for pid in found:
            if pid in seen:
                raise NsysqlError(f"{seen[pid]} and {ex.path.name} both have a process {pid} (several hosts?): "
                                  "give them one at a time, or `nsysql comm`, which tells ranks by export")
            seen[pid] = ex.path.name


def _concat(exports: list, query_id: str) -> pl.DataFrame:
    return pl.concat(each(exports, lambda ex: ex.run(query_id)), how="diagonal_relaxed")


def ranks(exports: list) -> dict:
    """The job's {'pid': {pid: rank}, 'device': {device: rank}} (as nsysql.answers.findings reads them)."""
    return rank_maps(_concat(exports, "analysis.comm_instances"))


def comm(exports: list) -> pl.DataFrame:
    """analysis.comm of every rank, the straggler decided over all of them."""
    return restraggle(_concat(exports, "analysis.comm")).sort("step", "rank", "pid", "device_id")


def findings(exports: list, **params) -> pl.DataFrame:
    """Each rank's findings, the straggler finding over the whole job, then one finding per rule (nsysql.answers.findings
    .per_job), each with the gain of its cause removed on every rank, the ranks replayed together."""
    frames = each(exports, lambda ex: run_findings(ex, gains=False, causes=True, **params)
                  .filter(pl.col("rule") != "straggler"))
    late = straggler_finding(exports, **params)
    out = pl.concat([*frames, with_causes(late.cast(empty().schema))]) if frames else with_causes(empty())
    return _with_gains(exports, per_job(out, ranks(exports)), params).drop("_threads")


def straggler_finding(exports: list, **params) -> pl.DataFrame:
    """findings.straggler over the rows of every rank of the job (no predicted gain: nsysql/answers/what_if.py)."""
    q = catalog.get("findings.straggler")
    names = ("analysis.comm", "analysis.comm_waits", "analysis.step_breakdown")
    # the three of an export on one connection: their shared inputs (steps, ...) are made once per export
    rows = each(exports, lambda ex: [ex.run(n) for n in names])
    comm_rows, waits, breakdown = (pl.concat(col, how="diagonal_relaxed") for col in zip(*rows))
    late = run_over(q.id, {"comm": restraggle(comm_rows).sort("step", "rank", "pid", "device_id"),
                           "comm_waits": waits, "step_breakdown": breakdown},
                    **rule_params(q, params))
    return late.with_columns(pl.lit(None, pl.Int64).alias("predicted_gain_ns"))


def _with_gains(exports: list, found: pl.DataFrame, params: dict) -> pl.DataFrame:
    """predicted_gain_ns of a job's findings (nsysql/answers/what_if.py job_predicted_gains)."""
    from nsysql.answers.multi import labels
    from nsysql.answers.what_if import job_predicted_gains, within_bounds
    from nsysql.errors import MissingDataError
    if not found.height:
        return found
    speedup = rule_params(catalog.get("findings.fp32_gemm"), params).get("speedup")
    try:
        gains = job_predicted_gains(exports, labels([ex.path for ex in exports]), found, speedup)
    except MissingDataError:
        return found
    return found.with_columns(within_bounds(gains, found))


def _added_up(frame: pl.DataFrame, keys: list[str], sums: list[str], maxes: tuple[str, ...] = ()) -> pl.DataFrame:
    firsts = [c for c in frame.columns if c not in keys + sums + list(maxes)]
    return (frame.group_by(keys, maintain_order=True)
            .agg(*[pl.col(c).sum() for c in sums], *[pl.col(c).max() for c in maxes], *[pl.col(c).first() for c in firsts]))


def overview(exports: list) -> Overview:
    """The overview of the job: every rank's steps, breakdown and GPUs; step statistics over all of them; top
    kernels, CUDA calls and ranges added up by name."""
    parts = each(exports, build_overview)
    windows = pl.concat([p.windows for p in parts], how="diagonal_relaxed")
    stats = run_over("analysis.step_stats", {"steady_steps": windows}).row(0, named=True)
    kernels = _added_up(pl.concat([p.top_kernels for p in parts]), ["short_name"], ["calls", "total_ns"])
    kernels = kernels.with_columns((pl.col("total_ns") / pl.col("calls")).alias("avg_ns"),
                                   (100.0 * pl.col("total_ns") / pl.col("total_ns").sum()).alias("pct"))
    api = _added_up(pl.concat([p.top_api for p in parts]), ["api_name", "synchronizing"], ["calls", "total_ns"],
                    ("max_ns",))
    api = api.with_columns((pl.col("total_ns") / pl.col("calls")).alias("avg_ns"),
                           (100.0 * pl.col("total_ns") / pl.col("total_ns").sum()).alias("pct"))
    ops = pl.concat([p.top_ops for p in parts]).sort("device_self_ns", descending=True)
    ops = _added_up(ops, ["kind", "name"], ["calls", "device_self_ns", "device_total_ns", "host_self_ns",
                                            "host_total_ns"])
    order = {"top_kernels": parts[0].top_kernels.columns, "top_api": parts[0].top_api.columns,
             "top_ops": parts[0].top_ops.columns}
    notes = tuple(dict.fromkeys(n for p in parts for n in p.notes))
    joined = {pid: rank for p in parts for pid, rank in (p.ranks or {}).items()}
    joined.update(ranks(exports)["pid"])
    return Overview(windows, stats, pl.concat([p.breakdown for p in parts]).sort("step", "pid"),
                    pl.concat([p.gpus for p in parts]).sort("device_id"),
                    ops.sort(["device_self_ns", "name"], descending=[True, False]).select(order["top_ops"]),
                    kernels.sort(["total_ns", "short_name"], descending=[True, False]).select(order["top_kernels"]),
                    api.sort(["total_ns", "api_name"], descending=[True, False]).select(order["top_api"]),
                    notes, _idle_gpus(exports, parts), joined, sum(p.comm_wait_ns for p in parts))


def _idle_gpus(exports: list, parts: list[Overview]) -> int:
    """GPUs some export saw that no rank used in its analysed steps (one host's GPUs are seen by every export)."""
    seen = {d for ex in exports for d in capture_gpus(ex)}
    used = {d for p in parts for d in p.gpus["device_id"].to_list()}
    return len(seen - used)


def capture(exports: list) -> dict:
    """analysis.capture_facts of the job: the longest capture, processes, threads and kernels added up."""
    rows = each(exports, lambda ex: ex.run("analysis.capture_facts").row(0, named=True))
    totals = each(exports, lambda ex: ex.run("analysis.export_totals").row(0, named=True))
    out = dict(rows[0])
    for key in ("processes", "threads", "kernels", "api_calls", "nvtx_ranges", "memcpys", "memsets"):
        out[key] = sum(r[key] or 0 for r in rows)
    out["duration_ns"] = max(r["duration_ns"] or 0 for r in rows)
    busy, span = sum(t["gpu_busy_ns"] or 0 for t in totals), sum(t["duration_ns"] or 0 for t in totals)
    out.update(gpu_busy_ns=busy, gpu_span_ns=max(t["gpu_span_ns"] or 0 for t in totals),
               capture_gpu_busy_pct=100.0 * busy / span if span else None)
    return out


def summary(exports: list, title: str):
    """The summary of the job (nsysql.answers.summary.Summary), the ranks first."""
    from nsysql.answers.summary import Summary, ranks_section
    check_pids(exports)
    return Summary(exports[0], capture(exports), overview(exports), findings(exports), comm=ranks_section(comm(exports)),
                   title=title, bound=bound(exports))


def bound(exports: list) -> dict | None:
    """What bounds the job's analysed steps on their critical path, the ranks' graphs merged (as summarize says it
    for one export; nsysql/answers/critical_path_job.py); None without a graph to walk."""
    from nsysql.answers import critical_path, critical_path_job
    from nsysql.answers.multi import labels
    from nsysql.answers.summary import bound_of
    from nsysql.errors import MissingDataError
    names, budget = labels([ex.path for ex in exports]), critical_path.SUMMARY_BUDGET
    try:
        comp = critical_path_job.composition(exports, names, budget=budget)
        items = critical_path_job.item_rows(exports, names, budget=budget)
    except MissingDataError:
        return None
    return bound_of(comp, items, len({n for ex in exports for n in critical_path.steps(ex)["step"].to_list()}))
