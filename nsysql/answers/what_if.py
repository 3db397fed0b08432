"""What-if (docs/critical-path.md): the graph of nsysql/answers/cp_graph.py replayed with some durations scaled, and
each step's predicted time against the measured one; the findings' predicted gains."""
from __future__ import annotations

import fnmatch
import re
import statistics
import sys
from dataclasses import dataclass

import polars as pl

from nsysql.answers import critical_path
from nsysql.answers.cp_graph import CALL, COMM, OP, OS_WAIT, PIECE, Graph, thread_key
from nsysql.errors import NsysqlError

TARGETS = {
    "kernel": "kernels by name (NCCL's excluded: comm)",
    "layer": "GPU ops by layer path",
    "copy": "copies and sets by name",
    "comm": "the transfer part of NCCL kernels, by operation",
    "wait": "the cross-rank wait of collectives, by operation",
    "range": "CPU work and CUDA calls inside a user range of that name (any depth)",
    "cpu": "all CPU work and CUDA calls, by the innermost range's name ((no range) outside every range)",
    "api": "CUDA calls by API name (their own time, not their waits)",
    "sync": "the wait of waiting calls by API name (0: the call no longer waits for the GPU)",
}
_SPEC = re.compile(r"^(?P<target>[a-z]+):(?P<pattern>.+)=(?P<factor>[^=]+)$")


@dataclass(frozen=True)
class Scale:
    target: str
    pattern: str  # a glob
    factor: float
    names: frozenset[str] | None = None  # exact names instead of the pattern (a finding's own kernels or ranges)

    def matches(self, text: str | None) -> bool:
        if text is None:
            return False
        if self.names is not None:
            return text in self.names
        return fnmatch.fnmatchcase(text, self.pattern)

    def __str__(self) -> str:
        return f"{self.target}:{self.pattern}={self.factor:g}"


def parse(spec: str) -> Scale:
    """`TARGET:PATTERN=FACTOR`, e.g. `kernel:sm80_xmma*=0.5`; an error names what is wrong."""
    m = _SPEC.match(spec.strip())
    if not m:
        raise NsysqlError(f"scale {spec!r}: write TARGET:PATTERN=FACTOR, e.g. 'kernel:*gemm*=0.5' or "
                          "'range:dataloader=0'")
    target, pattern, factor = m["target"], m["pattern"], m["factor"]
    if target not in TARGETS:
        raise NsysqlError(f"scale {spec!r}: unknown target {target!r}; use one of {', '.join(TARGETS)}")
    try:
        value = float(factor)
    except ValueError:
        raise NsysqlError(f"scale {spec!r}: the factor {factor!r} is not a number") from None
    if not value >= 0 or value == float("inf"):
        raise NsysqlError(f"scale {spec!r}: the factor must be a finite number of 0 or more")
    return Scale(target, pattern, value)


def _factors(g: Graph, scales: list[Scale]) -> tuple[list[float], dict[int, float], dict[int, float]]:
    """Per node its duration factor; per waiting call its wait factor (sync); per comm op its wait factor (wait)."""
    f = [1.0] * len(g)
    sync: dict[int, float] = {}
    wait: dict[int, float] = {}
    if not scales:
        return f, sync, wait
    for n in range(len(g)):
        kind = g.kind[n]
        for sc in scales:
            t = sc.target
            if kind == OP:
                cls = g.op_class[n]
                if t == "kernel" and cls == "kernel" and sc.matches(g.name[n]) \
                        or t == "copy" and cls == "copy" and sc.matches(g.name[n]) \
                        or t == "layer" and sc.matches(g.layer[n]) \
                        or t == "comm" and cls == COMM and sc.matches(g.operation.get(n)):
                    f[n] *= sc.factor
                elif t == "wait" and cls == COMM and sc.matches(g.operation.get(n)):
                    wait[n] = wait.get(n, 1.0) * sc.factor
            else:
                if t == "range" and any(sc.matches(r) for r in g.stack[n]) \
                        or t == "cpu" and sc.matches(g.stack[n][-1] if g.stack[n] else "(no range)") \
                        or t == "api" and kind == CALL and sc.matches(g.name[n]):
                    f[n] *= sc.factor
                elif t == "sync" and kind == CALL and n in g.waited and sc.matches(g.name[n]):
                    sync[n] = sync.get(n, 1.0) * sc.factor
    return f, sync, wait


class Replay:
    """New start and end of every node under `scales`; nodes ending before `frozen_before` keep their times."""

    def __init__(self, g: Graph, scales: list[Scale], frozen_before: int | None = None):
        self.g = g
        self.f, self.sync, self.wait = _factors(g, scales)
        self.S: list[int | None] = [None] * len(g)
        self.E: list[int | None] = [None] * len(g)
        self.busy: set[tuple[int, int]] = set()
        self.pre = _pre_wait(g)
        if frozen_before is not None:
            for n in range(len(g)):
                if g.end[n] < frozen_before:
                    self.S[n], self.E[n] = g.start[n], g.end[n]
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, 50000))
        try:
            events = sorted([(g.end[n], 0, n) for n in range(len(g)) if self.E[n] is None]
                            + [(g.start[n], 1, n) for n in range(len(g)) if self.S[n] is None])
            for _, phase, n in events:
                self.end(n) if phase == 0 else self.start(n)
        finally:
            sys.setrecursionlimit(limit)

    def start(self, n: int) -> int:
        v = self.S[n]
        if v is not None:
            return v
        if (n, 0) in self.busy:  # a cycle of inconsistent records: keep the measured time
            return self.g.start[n]
        self.busy.add((n, 0))
        g = self.g
        if g.kind[n] != OP:
            p = g.prev[n]
            v = self.end(p) + (g.start[n] - g.end[p]) if p >= 0 else g.start[n]
        else:
            pred, _, via_launch = critical_path.binding(g, n)
            cands = []
            call = g.launch.get(n, -1)
            if call >= 0:
                lag = g.start[n] - g.start[call]
                if pred != call:  # at most the time the call took to issue it
                    lag = min(lag, critical_path.launch_ready(g, call, n) - g.start[call])
                cands.append(self.start(call) + lag)
            for p in ([g.prev[n]] if g.prev[n] >= 0 else []) + list(g.sources.get(n, ())):
                gap = g.start[n] - g.end[p]
                cands.append(self.end(p) + (gap if p == pred else min(gap, 0)))
            v = max(cands) if cands else g.start[n]
        self.busy.discard((n, 0))
        self.S[n] = v
        return v

    def end(self, n: int) -> int:
        v = self.E[n]
        if v is not None:
            return v
        if (n, 1) in self.busy:
            return self.g.end[n]
        self.busy.add((n, 1))
        g = self.g
        s = self.start(n)
        d = g.end[n] - g.start[n]
        kind = g.kind[n]
        if kind == CALL and n in g.waited:
            q = g.waited[n]
            wake = g.end[n] - g.end[q]
            pre = min(d, self.pre.get(g.name[n], 0))
            waited = self.end(q) + wake - s
            v = s + max(round(pre * self.f[n]), round(waited * self.sync.get(n, 1.0)))
        elif kind == OS_WAIT and n in g.waker:
            tid, t = g.waker[n]
            v = max(s, self.point(tid, t) + g.end[n] - t)
        elif kind == OP and n in g.collective:
            last, members = g.collective[n]
            arrival = max(self.start(m) for m in members)
            if g.last_arrival.get(n, -1) < 0:  # the last rank is in another export: it arrives as measured
                arrival = max(arrival, last)
            own = s
            arrive = own + round(max(arrival - own, 0) * self.wait.get(n, 1.0))
            v = arrive + round((g.end[n] - last) * self.f[n])
        else:
            v = s + round(d * self.f[n])
        self.busy.discard((n, 1))
        self.E[n] = v
        return v

    def point(self, tid: int, t: int) -> int:
        """The new time of instant `t` of thread `tid`."""
        g = self.g
        m = g.before(tid, t)
        if m < 0:
            m = g.before(tid, t + 1)
            if m < 0:
                return t
        if t == g.end[m]:
            return self.end(m)
        if g.kind[m] in (PIECE, CALL):
            return self.start(m) + round((t - g.start[m]) * self.f[m])
        return self.start(m) + (t - g.start[m])


def _pre_wait(g: Graph) -> dict[str, int]:
    """Per API, the median time of its calls that did not wait: a waiting call's own time once its wait is gone."""
    own: dict[str, list[int]] = {}
    for n in range(len(g)):
        if g.kind[n] == CALL and n not in g.waited:
            own.setdefault(g.name[n], []).append(g.end[n] - g.start[n])
    return {api: int(statistics.median(v)) for api, v in own.items()}


def step_times(ex, scales: list[Scale], step: int | None = None, pid: int | None = None,
               budget: int | None = None) -> pl.DataFrame:
    """step, [pid], measured_ns, predicted_ns for each step to walk (the analysed ones, or `step`; a sample of the
    last analysed steps with `budget`, see critical_path.steps)."""
    steps, g = critical_path.planned(ex, step, pid, budget)
    first = int(steps["start_ns"].min()) if steps.height else None  # type: ignore[arg-type]
    r = Replay(g, scales, frozen_before=first)
    rows = []
    for row in steps.iter_rows(named=True):
        tid = row["global_tid"]
        if tid is None:
            a, b = _gpu_span(g, r, row["start_ns"], row["end_ns"])
        else:
            a, b = r.point(tid, row["start_ns"]), r.point(tid, row["end_ns"])
        rows.append({"step": row["step"], "pid": row["pid"], "measured_ns": row["wall_ns"], "predicted_ns": b - a})
    df = pl.DataFrame(rows, schema={"step": pl.Int64, "pid": pl.Int64, "measured_ns": pl.Int64,
                                    "predicted_ns": pl.Int64}, orient="row")
    return critical_path.pid_if_several(df, ex)


def job_step_times(exports: list, labels: list[str], scales: list[Scale], step: int | None = None,
                   pid: int | None = None, budget: int | None = None) -> pl.DataFrame:
    """step_times of a job's exports (one per rank) replayed together on the merged graph (nsysql/answers/
    critical_path_job.py): a change on one rank reaches the others through their collectives. An `export` column
    first."""
    from nsysql.answers import critical_path_job
    todo, windows = critical_path_job.plan(exports, step, pid, budget)
    g, offsets = critical_path_job.graph(exports, windows)
    shifts = [critical_path_job.shift(ex) for ex in exports]
    starts = [int(t["start_ns"].min()) + sh for t, sh in zip(todo, shifts) if t.height]  # type: ignore[arg-type]
    r = Replay(g, scales, frozen_before=min(starts) if starts else None)
    frames = []
    for part, (ex, steps, sh) in enumerate(zip(exports, todo, shifts)):
        ops = critical_path_job.ops_of(g, offsets, part)
        rows = []
        for row in steps.iter_rows(named=True):
            lo, hi = row["start_ns"] + sh, row["end_ns"] + sh
            if row["global_tid"] is None:
                a, b = _gpu_span(g, r, lo, hi, ops)
            else:
                tid = thread_key(part, row["global_tid"])
                a, b = r.point(tid, lo), r.point(tid, hi)
            rows.append({"step": row["step"], "pid": row["pid"], "measured_ns": row["wall_ns"],
                         "predicted_ns": b - a})
        df = pl.DataFrame(rows, schema={"step": pl.Int64, "pid": pl.Int64, "measured_ns": pl.Int64,
                                        "predicted_ns": pl.Int64}, orient="row")
        frames.append(critical_path.pid_if_several(df, ex).with_columns(pl.lit(labels[part]).alias("export")))
    df = pl.concat(frames, how="diagonal_relaxed")
    return df.select("export", *[c for c in df.columns if c != "export"])


def _gpu_span(g: Graph, r: Replay, start: int, end: int, ops=None) -> tuple[int, int]:
    ops = [n for n in (g.op_class if ops is None else ops) if g.start[n] >= start and g.end[n] <= end]
    if not ops:
        return start, end
    return min(r.start(n) for n in ops), max(r.end(n) for n in ops)


GAINS_VERSION = 2  # raise when predicted_gains or the model changes: gains kept with an export's answers are keyed by it
# the cause of each finding, as scales: what the replay removes to predict the finding's gain (None: no model)
FINDING_SCALES: dict[str, list[Scale] | None] = {
    "dataloader_wait": None,  # set per export from the rule's ranges (macros.is_data_loading)
    "sync_in_step": [Scale("sync", "*", 0.0)],
    "pageable_copy": [Scale("sync", "cu*Memcpy*", 0.0)],
    "gpu_idle_in_step": [Scale("cpu", "*", 0.0)],
    "launch_bound": [Scale("api", "*", 0.0)],
    "exposed_comm": [Scale("comm", "*", 0.0)],
    "straggler": [Scale("wait", "*", 0.0)],
    "fp32_gemm": None,  # set per export from the rule's kernels and speedup (predicted_gains)
    "outlier_step": None,
    "short_kernels": None,
}


def predicted_gains(ex, findings: pl.DataFrame, speedup: float | None = None,
                    budget: int | None = critical_path.SUMMARY_BUDGET) -> list[int | None]:
    """Per finding row, the analysed steps' time the replay saves with the finding's cause removed: per step the
    job's time (its slowest process) measured minus predicted, summed, never below 0; None where no replay models
    the cause. The straggler's cause is the late rank's extra work: with no rank waiting for another, the job's
    step would take what its fastest rank takes (the ranks doing alike work). On a long capture (`budget`, see
    critical_path.steps) the replay runs over the last analysed steps and the gain is scaled to all of them by
    their wall time."""
    return _gains([ex], findings, speedup, budget, lambda scales: step_times(ex, scales, budget=budget))


def job_predicted_gains(exports: list, labels: list[str], findings: pl.DataFrame, speedup: float | None = None,
                        budget: int | None = critical_path.SUMMARY_BUDGET) -> list[int | None]:
    """predicted_gains of a job's findings, its ranks replayed together (job_step_times), each cause removed on
    every rank."""
    return _gains(exports, findings, speedup, budget,
                  lambda scales: job_step_times(exports, labels, scales, budget=budget))


def _gains(exports: list, findings: pl.DataFrame, speedup: float | None, budget: int | None,
           replay) -> list[int | None]:
    everything = sum(int(critical_path.steps(ex)["wall_ns"].sum()) for ex in exports)
    sample = sum(int(critical_path.steps(ex, budget=budget)["wall_ns"].sum()) for ex in exports)
    scale_up = everything / max(sample, 1)
    out: list[int | None] = []
    for rule in findings["rule"]:
        scales = _finding_scales(exports, rule, speedup)
        gain = saved_ns(replay(scales), fastest=rule == "straggler") if scales else None
        out.append(round(gain * scale_up) if gain is not None else None)
    return out


def within_bounds(gains: list[int | None], findings: pl.DataFrame) -> pl.Series:
    """predicted_gain_ns: each gain at most its finding's recoverable_ns. A cause removed wholesale (all CPU work,
    for GPU idle) can save more than the finding's own bound: the gain says how much of that bound the path gives
    back, never more."""
    capped = [min(g, c) if g is not None and c is not None else g for g, c in zip(gains, findings["recoverable_ns"])]
    return pl.Series("predicted_gain_ns", capped, dtype=pl.Int64)


def _finding_scales(exports: list, rule: str, speedup: float | None) -> list[Scale] | None:
    """What the replay removes for a finding of `rule`: FINDING_SCALES, or the rule's own kernels or ranges."""
    if rule == "fp32_gemm" and speedup:  # the rule's own kernels (macros.is_fp32_gemm), its speedup
        names = frozenset(n for ex in exports for n in ex.run("analysis._cp_fp32_kernels")["kernel_name"])
        return [Scale("kernel", "(fp32 GEMMs)", 1 / speedup, names=names)]
    if rule == "dataloader_wait":  # the rule's own ranges (macros.is_data_loading)
        names = frozenset(t for ex in exports for t in ex.run("analysis._cp_data_ranges")["text"])
        return [Scale("range", "(data loading)", 0.0, names=names)]
    return FINDING_SCALES.get(rule)


def saved_ns(df: pl.DataFrame, fastest: bool = False) -> int | None:
    """The step time a replay saves over `df`'s steps (step_times' rows, of one export or of a job's exports): per
    step the job's measured time (its slowest process) minus its predicted one (its slowest process; its fastest
    with `fastest`, the straggler's case), summed, never below 0; None without steps."""
    if df.height == 0:
        return None
    if df.height > df["step"].n_unique():  # several processes or exports: per step, as one job
        df = df.group_by("step").agg(pl.col("measured_ns").max(),
                                     pl.col("predicted_ns").min() if fastest else pl.col("predicted_ns").max())
    return max(int((df["measured_ns"] - df["predicted_ns"]).sum()), 0)
