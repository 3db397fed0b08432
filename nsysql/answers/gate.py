"""The diff gate (`nsysql diff BASE NEW --fail-above 5%`, docs/ci.md): is NEW slower than BASE by more than a
threshold, judged on the spread of the steps, not on one number?

A metric gives each analysed step (analysis.steady_steps) one value: its wall time (`step`, the default), or the
kernel time in it of the kernels or layers a glob matches (`kernel:GLOB`, `layer:GLOB`). The change is
100 * (mean(NEW) - mean(BASE)) / mean(BASE); its 95 % interval is Welch's t-interval for the difference of the two
means (nsysql/core/stats.py), divided by BASE's mean. The verdict:

- regression (exit 3): the whole interval lies above the threshold;
- pass: the whole interval lies at or below it;
- inconclusive (exit 0): the interval holds the threshold (the steps vary too much to tell), or a side has fewer
  than 2 steps (no spread to judge by).

`finding:RULE` is the rule's recoverable time per analysed step (the rule run with its firing thresholds at 0, so
that a bound under the threshold still counts): one total over the steps, no per-step values, so no interval: the
verdict compares the change itself with the threshold, and says so.
"""
from __future__ import annotations

import fnmatch
import math
import re
import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nsysql.core import units
from nsysql.core.stats import welch
from nsysql.errors import NsysqlError

if TYPE_CHECKING:
    from nsysql.query.queries import Queries

LEVEL = 0.95
REGRESSION_EXIT = 3  # the exit status of `nsysql diff --fail-above` on a regression; 0 on pass and inconclusive
VERDICTS = ("regression", "pass", "inconclusive")
# what `--metric` takes: KIND or KIND:PATTERN (the order of the help and the error that lists them)
METRICS = {
    "step": "the steps' wall time (as summarize's mean step time)",
    "kernel:GLOB": "kernel time per step of the kernels whose full name matches GLOB",
    "layer:GLOB": "kernel time per step of the layers whose path matches GLOB",
    "finding:RULE": "the finding's recoverable time per step (no interval)",
}
SIDE_QUERIES = {"kernel": "analysis._gate_kernels", "layer": "analysis._gate_layers"}
_LISTED_BY = {"kernel": "`nsysql kernels`", "layer": "`nsysql layers`"}
_THRESHOLD = re.compile(r"^\s*(?P<value>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*%?\s*$")


@dataclass(frozen=True)
class Metric:
    kind: str  # step, kernel, layer or finding
    pattern: str | None = None  # the glob (kernel, layer) or the rule's name (finding)

    def __str__(self) -> str:
        return self.kind if self.pattern is None else f"{self.kind}:{self.pattern}"

    @property
    def label(self) -> str:
        """How the verdict line names it: `step time`, `kernel time of *gemm*`."""
        if self.kind == "step":
            return "step time"
        if self.kind == "finding":
            return f"{self.pattern} recoverable time"
        return f"{self.kind} time of {self.pattern}"

    @property
    def has_interval(self) -> bool:
        return self.kind != "finding"


def parse_metric(text: str) -> Metric:
    """`step`, `kernel:GLOB`, `layer:GLOB` or `finding:RULE`; an error names what is wrong."""
    kind, sep, pattern = text.strip().partition(":")
    usage = "; write step, kernel:GLOB, layer:GLOB or finding:RULE"
    if kind == "step" and not sep:
        return Metric("step")
    if kind not in ("kernel", "layer", "finding"):
        raise NsysqlError(f"`metric=` {text!r} is no metric{usage}")
    if not pattern.strip():
        raise NsysqlError(f"`metric=` {text!r} names no {'rule' if kind == 'finding' else 'pattern'}{usage}")
    if kind == "finding":
        from nsysql.answers.findings import rules
        names = [q.name for q in rules()]
        if pattern not in names:
            raise NsysqlError(f"`metric=` {text!r}: no finding rule named {pattern!r}; the rules: {', '.join(names)}")
    return Metric(kind, pattern)


def parse_threshold(value: str | float | int) -> float:
    """A percentage: `5%`, `5`, `2.5%` (or a number) -> 5.0; 0 or more."""
    if isinstance(value, bool):
        raise NsysqlError(f"`fail_above=` {value!r} is not a percentage; write one such as 5%")
    if isinstance(value, (int, float)):
        number = float(value)
    else:
        m = _THRESHOLD.match(value)
        if not m:
            raise NsysqlError(f"`fail_above=` {value!r} is not a percentage; write one such as 5% (0 or more)")
        number = float(m["value"])
    if not math.isfinite(number) or number < 0:
        raise NsysqlError(f"`fail_above=` {value!r} is not a percentage of 0 or more; write one such as 5%")
    return number


@dataclass(frozen=True)
class Side:
    """One export's values of a metric: per analysed step (None for a finding: one total), their count and mean."""
    values: list[float] | None
    steps: int
    mean_ns: float

    @property
    def stdev_ns(self) -> float | None:
        return statistics.stdev(self.values) if self.values is not None and len(self.values) >= 2 else None


def _steps(export: Queries) -> list[tuple[int, int, int]]:
    """(pid, step, wall_ns) of the analysed steps; an export without steps is an error (nothing to compare)."""
    windows = export.run("analysis.steady_steps")
    if not windows.height or windows["source"][0] == "gpu_span":
        raise NsysqlError(f"{export.path.name} has no steps, which the gate compares (docs/steps.md: NVTX step "
                          "ranges, or a repeating kernel sequence)")
    rows = windows.filter(windows["analysed"])
    return list(zip(rows["pid"].to_list(), rows["step"].to_list(), rows["wall_ns"].to_list()))


def side_values(export: Queries, metric: Metric) -> tuple[Side, set[str]]:
    """`export`'s values of `metric`, and the names the glob matched (kernel, layer; else empty)."""
    steps = _steps(export)
    if metric.kind == "step":
        values = [float(w) for _, _, w in steps]
        return Side(values, len(values), statistics.fmean(values)), set()
    if metric.kind == "finding":
        total = _finding_total(export, str(metric.pattern))
        return Side(None, len(steps), total / len(steps)), set()
    frame = export.run(SIDE_QUERIES[metric.kind])
    per_step = {(pid, step): 0.0 for pid, step, _ in steps}
    matched: set[str] = set()
    for pid, step, name, ns in frame.select("pid", "step", "name", "total_ns").iter_rows():
        if name is not None and fnmatch.fnmatchcase(name, str(metric.pattern)) and (pid, step) in per_step:
            per_step[(pid, step)] += ns
            matched.add(name)
    values = list(per_step.values())
    return Side(values, len(values), statistics.fmean(values)), matched


def _finding_total(export: Queries, rule: str) -> float:
    """The rule's recoverable_ns over the analysed steps, summed over its rows, with its firing thresholds (the
    params whose header meaning starts `fires when` or `and`) at 0: the bound whether or not the rule fires."""
    from nsysql.answers.findings import rule_params, rules
    q = next(q for q in rules() if q.name == rule)
    firing = {p.name: 0 for p in q.params if p.help.startswith(("fires when", "and "))}
    df = export.run(q.id, **rule_params(q, firing))
    return float(df["recoverable_ns"].sum() or 0) if df.height else 0.0


def gate(base: Queries, new: Queries, metric: str = "step", fail_above: str | float = 5.0) -> dict:
    """The verdict of NEW against BASE (a dict: the `-f json` keys of docs/ci.md)."""
    threshold = parse_threshold(fail_above)
    m = parse_metric(metric)
    b, b_names = side_values(base, m)
    n, n_names = side_values(new, m)
    if m.kind in SIDE_QUERIES and not (b_names or n_names):
        raise NsysqlError(f"`metric=` {str(m)!r}: no {m.kind} in either export matches {m.pattern!r} (a glob, matched "
                          f"case-sensitively; {_LISTED_BY[m.kind]} lists the names)")
    return judge(m, b, n, threshold, base=str(base.path), new=str(new.path))


def judge(m: Metric, b: Side, n: Side, threshold: float, *, base: str = "", new: str = "") -> dict:
    """The verdict from both sides' values (see the module's docstring for the rules)."""
    change: float | None
    interval = None
    if b.mean_ns == 0:
        change = 0.0 if n.mean_ns == 0 else None
        verdict = "pass" if n.mean_ns == 0 else "regression"
        reason = ("0 in both exports" if n.mean_ns == 0
                  else f"none in the baseline, {units.duration(n.mean_ns)} a step in the new export")
    else:
        change = 100.0 * (n.mean_ns - b.mean_ns) / b.mean_ns
        if not m.has_interval:
            verdict = "regression" if change > threshold else "pass"
            reason = (f"no interval (a finding's bound is one total over the steps): the change is "
                      f"{'above' if change > threshold else 'at or below'} the {threshold:+g} % threshold")
        elif b.values is None or n.values is None or min(len(b.values), len(n.values)) < 2:
            verdict = "inconclusive"
            reason = f"an interval needs 2 or more steps on each side ({b.steps} vs {n.steps})"
        else:
            w = welch(b.values, n.values, LEVEL)
            low, high = 100.0 * w.low / b.mean_ns, 100.0 * w.high / b.mean_ns
            interval = {"level": LEVEL, "low_pct": low, "high_pct": high, "method": "welch_t", "df": w.df}
            if low > threshold:
                verdict, where = "regression", "lies above"
            elif high <= threshold:
                verdict, where = "pass", "lies at or below"
            else:
                verdict, where = "inconclusive", "holds"
            reason = f"the {LEVEL * 100:.0f} % interval {where} the {threshold:+g} % threshold"
    result = {
        "verdict": verdict,
        "reason": reason,
        "metric": str(m),
        "label": m.label,
        "threshold_pct": threshold,
        "change_pct": change,
        "interval": interval,
        "n_base": b.steps,
        "n_new": n.steps,
        "base_mean_ns": b.mean_ns,
        "new_mean_ns": n.mean_ns,
        "base_stdev_ns": b.stdev_ns,
        "new_stdev_ns": n.stdev_ns,
        "base": base,
        "new": new,
        "exit_code": REGRESSION_EXIT if verdict == "regression" else 0,
    }
    result["line"] = verdict_line(result)
    return result


def _pct(value: float) -> str:
    """`+7.2`, `-0.4`; a change that rounds to 0 is `+0.0`, never `-0.0`."""
    return f"{round(value, 1) + 0.0:+.1f}"


def verdict_line(r: dict) -> str:
    """`step time +7.2 % (95 % interval +5.1 to +9.3 %, 8 vs 8 steps): regression`."""
    counts = f"{r['n_base']} vs {r['n_new']} steps"
    if r["change_pct"] is None:
        head = f"{r['label']} from none to {units.duration(r['new_mean_ns'])} a step"
    else:
        head = f"{r['label']} {_pct(r['change_pct'])} %"
    if r["interval"] is not None:
        i = r["interval"]
        what = f"{i['level'] * 100:.0f} % interval {_pct(i['low_pct'])} to {_pct(i['high_pct'])} %, {counts}"
    elif r["metric"].startswith("finding:"):
        what = f"no interval, {counts}"
    else:
        what = counts
    return f"{head} ({what}): {r['verdict']}"


def detail_line(r: dict) -> str:
    """The line under the verdict: both means and the reason."""
    return (f"baseline {units.duration(r['base_mean_ns'])} a step, new {units.duration(r['new_mean_ns'])}; "
            f"{r['reason']}")
