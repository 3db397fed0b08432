"""Findings: what to fix first, each with the wall time it could give back at most.

Every rule is one SQL file under queries/findings/ (catalog group `findings`); its header states the
thresholds (as `$params` with defaults) and the exact recoverable-time formula. Each returns zero or more rows
with the same columns (FINDING_COLUMNS). Rules look only at the analysed steady-state steps
(analysis.steady_steps); recoverable_ns is an upper bound of wall time, from interval unions inside those steps,
summed over them. Findings overlap (a GPU idle gap can be a sync, a launch gap and a data-loading wait at once):
their recoverable times are separate ceilings, not parts of a total.
"""
from __future__ import annotations

import re

import polars as pl

from nsysql.core import units
from nsysql.errors import MissingDataError
from nsysql.sql import catalog

FINDING_COLUMNS = {
    "rule": pl.Utf8,
    "title": pl.Utf8,
    "where": pl.Utf8,
    "evidence": pl.Utf8,
    "action": pl.Utf8,
    "recoverable_ns": pl.Int64,
    "recoverable_pct": pl.Float64,
    "predicted_gain_ns": pl.Int64,
}


def rules() -> list[catalog.Query]:
    """The finding rules of the catalog (queries/findings/*.sql), in name order."""
    return catalog.group("findings")


def rule_params(query: catalog.Query, overrides: dict | None = None) -> dict:
    """The rule's $params at their header defaults, with `overrides` (by name) applied where the rule uses them."""
    values = dict(query.defaults())
    for name, value in (overrides or {}).items():
        if name in values:
            values[name] = value
    return values


def empty() -> pl.DataFrame:
    return pl.DataFrame(schema=FINDING_COLUMNS)


def run_findings(export, top: int | None = None, gains: bool = True, causes: bool = False,
                 **params) -> pl.DataFrame:
    """Every rule's findings on `export`, largest recoverable_ns first (then by rule); `top` keeps the first N.

    A rule whose data the export lacks (e.g. no kernels, no NVTX ranges) is skipped. `params` override a rule's
    thresholds by name (`min_idle_pct=20`). `gains=False` leaves predicted_gain_ns empty (a job replays its ranks
    together: nsysql/answers/job_views.py), `causes=True` keeps the `_threads` column (with_causes) for it."""
    frames = []
    ranks = _ranks(export)
    for q in rules():
        if q.name == "straggler" and not ranks:  # one rank waits for nobody (and its inputs cost a sweep of every op)
            continue
        try:
            df = export.run(q.id, **rule_params(q, params))
        except MissingDataError:
            continue
        df = df.with_columns(pl.lit(None, pl.Int64).alias("predicted_gain_ns"))
        frames.append(df.cast(FINDING_COLUMNS) if df.height else empty())
    out = with_causes(pl.concat(frames) if frames else empty())
    out = per_job(out, ranks)
    out = with_predicted_gains(export, out, params) if gains else out
    out = out if causes else out.drop("_threads")
    return out.head(top) if top is not None else out


def with_causes(findings: pl.DataFrame) -> pl.DataFrame:
    """A `_threads` column: the OS threads each finding's cause is the work of (what_if.cause_threads; empty for a
    cause that is no one thread's), carried through per_job (a job's finding: every rank's threads) to the replay
    of its gain, then dropped."""
    from nsysql.answers.what_if import cause_threads
    threads = [cause_threads(rule, where) for rule, where in zip(findings["rule"], findings["where"])]
    return findings.with_columns(pl.Series("_threads", threads, dtype=pl.List(pl.Int64)))


def with_predicted_gains(export, findings: pl.DataFrame, params: dict | None = None) -> pl.DataFrame:
    """predicted_gain_ns: the analysed steps' time the critical-path replay saves with each finding's cause removed
    (nsysql/answers/what_if.py FINDING_SCALES; None where no replay models the cause, or without CUDA calls)."""
    if not findings.height:
        return findings
    import hashlib
    import json

    from nsysql.answers import what_if
    from nsysql.answers.critical_path_kept import code_key
    speedup = rule_params(catalog.get("findings.fp32_gemm"), params).get("speedup")

    def compute() -> list[int | None] | None:
        try:
            return what_if.predicted_gains(export, findings, speedup)
        except MissingDataError:
            return None
    # kept with the export's answers: the replays cost seconds on a long capture, once
    causes = findings["_threads"].to_list() if "_threads" in findings.columns else None  # a cause's own threads
    key = json.dumps([what_if.GAINS_VERSION, code_key(), findings["rule"].to_list(), causes, speedup],
                     separators=(",", ":"))
    gains = export.store.fact(f"predicted_gains {hashlib.sha256(key.encode()).hexdigest()[:24]}", compute)
    if gains is None:
        return findings
    return findings.with_columns(what_if.within_bounds(gains, findings))


def _ranks(export) -> dict:
    """{'pid': {pid: rank}, 'device': {device: rank}} of a job of several ranks (analysis.comm_instances), else {}."""
    from nsysql.answers.overview import rank_maps, ranks_of
    try:
        several = ranks_of(export)
    except MissingDataError:
        return {}
    return rank_maps(export.run("analysis.comm_instances")) if several else {}


_PID = re.compile(r"\((\d+)\)|\bpid (\d+)")
_DEVICE = re.compile(r"\bGPU (\d+)")


def _rank_of_where(where: str, ranks: dict) -> int | None:
    """The rank a finding's `where` names: by the pid of its thread (`thread python3 (1071)`), else by its GPU."""
    for m in _PID.finditer(where or ""):
        pid = int(m.group(1) or m.group(2))
        if pid in ranks["pid"]:
            return ranks["pid"][pid]
    device = _DEVICE.search(where or "")
    return ranks["device"].get(int(device.group(1))) if device else None


def per_job(findings: pl.DataFrame, ranks: dict) -> pl.DataFrame:
    """The findings of a job, largest first. With several ranks (`ranks`: see _ranks), a rule that fired on several
    ranks is one finding: the largest one's text, `where` naming the ranks, the others' titles in its evidence, and
    the largest recoverable time (the ranks run in lockstep: fixing it everywhere saves the most one rank saves, not
    the sum); the straggler finding comes first, since every rank's step waits for the late one, and findings on
    the late rank say so."""
    ordered = findings.sort(["recoverable_ns", "rule"], descending=[True, False], nulls_last=True)
    if not ranks or not findings.height:
        return ordered
    late = None
    for row in ordered.filter(pl.col("rule") == "straggler").iter_rows(named=True):
        late = _rank_of_where(row["where"], ranks)
    rows: list[dict] = []
    for rule in dict.fromkeys(ordered["rule"].to_list()):
        same = ordered.filter(pl.col("rule") == rule).to_dicts()
        first = dict(same[0])
        found = [_rank_of_where(r["where"], ranks) for r in same]
        if len(same) > 1 and rule != "straggler":
            if "_threads" in first:  # the cause is every rank's
                first["_threads"] = sorted({t for r in same for t in (r["_threads"] or [])})
            named = sorted({r for r in found if r is not None})
            first["where"] = f"ranks {', '.join(map(str, named))}: {first['where']}" if named else first["where"]
            first["evidence"] = (first["evidence"] or "") + " Also: " + "; ".join(
                (f"rank {r}: " if r is not None else "") + (o["title"] or "") for r, o in zip(found[1:], same[1:])) + "."
        elif found[0] is not None and rule != "straggler":
            first["where"] = f"rank {found[0]}" + (", the late rank" if found[0] == late else "") + f": {first['where']}"
        rows.append(first)
    out = pl.DataFrame(rows, schema=findings.schema)
    return out.sort([pl.col("rule") != "straggler", "recoverable_ns", "rule"], descending=[False, True, False],
                    nulls_last=True)


def to_records(findings: pl.DataFrame) -> list[dict]:
    """The findings as JSON-ready dicts (`findings --format json`, summarize's `findings`): floats rounded to the
    decimals of the rules' headers, integers exact."""
    decimals = catalog.decimals(rules()[0].id) if rules() else {}
    return [{k: (round(v, decimals[k]) if isinstance(v, float) and k in decimals else v) for k, v in row.items()}
            for row in findings.iter_rows(named=True)]


def analysed_steps(export) -> pl.DataFrame:
    """The step windows of analysis.steady_steps (analysed and excluded), for saying what the findings cover."""
    try:
        return export.run("analysis.steady_steps")
    except MissingDataError:
        return pl.DataFrame()


def describe_steps(steps: pl.DataFrame) -> str:
    """One line: which steps the findings were computed over (`steps 3-10 analysed, 1-2 left out as warm-up`)."""
    if steps.height == 0:
        return "No steps and no GPU activity: nothing to analyse."
    analysed = steps.filter(pl.col("analysed"))
    if analysed.height and analysed["step"].max() == 0:
        return "No step ranges: the whole GPU activity is analysed as one window."
    wall = int(analysed["wall_ns"].sum() or 0)
    line = f"Analysed {_process_step_list(analysed)} ({analysed.height} of {steps.height}, {units.duration(wall)} wall)"
    left = steps.filter(~pl.col("analysed"))
    if left.height:
        reasons = sorted(set(left["excluded_because"].drop_nulls().to_list()))
        why = {"warmup_range": "inside a warm-up range", "slow_leading_step": "slow leading steps",
                   "slow_leading_request": "a slow leading request"}
        line += f"; left out as warm-up: {_process_step_list(left)} ({', '.join(why.get(r, r) for r in reasons)})"
    return line + "."


def _process_step_list(steps: pl.DataFrame) -> str:
    """`steps 1-8`; with several processes, each numbering its own steps: `pid 100: steps 1-8; pid 200: steps 1-8`."""
    pids = sorted(steps["pid"].unique().to_list())
    if len(pids) == 1:
        return _step_list(steps["step"].to_list())
    return "; ".join(f"pid {pid}: {_step_list(steps.filter(pl.col('pid') == pid)['step'].to_list())}" for pid in pids)


def _step_list(steps: list[int]) -> str:
    steps = sorted(steps)
    runs: list[list[int]] = []
    for s in steps:
        if runs and s == runs[-1][1] + 1:
            runs[-1][1] = s
        else:
            runs.append([s, s])
    text = ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)
    return ("step " if len(steps) == 1 else "steps ") + text


# -- text output (the CLI's table and markdown formats, and summarize's findings section) -------------------------
def render_text(findings: pl.DataFrame, width: int = 100, header: str | None = None) -> str:
    """The findings as a numbered list that fits `width` columns:

     1. GPU idle inside steps: 24.1 ms of 31.6 ms per step (76%)        up to 72.3 ms
        where: steps 1-3, thread python3 (528)
        evidence: ...
        do: ...
    """
    import textwrap

    width = max(width, 40)
    lines = textwrap.wrap(header, width) + [""] if header else []
    if findings.height == 0:
        lines.append("No findings: no rule fired on the analysed steps.")
        return "\n".join(lines) + "\n"
    number_width = len(str(findings.height))
    indent = " " * (number_width + 2)
    for i, row in enumerate(findings.iter_rows(named=True), 1):
        prefix = f"{i:>{number_width}}. "
        bound = f"up to {units.duration(row['recoverable_ns'])}" + replay_text(row)
        title = textwrap.wrap(row["title"] or row["rule"], max(width - len(prefix) - len(bound) - 2, 20))
        first = prefix + title[0]
        lines.append(first + " " * max(width - len(first) - len(bound), 2) + bound)
        lines += [indent + t for t in title[1:]]
        for label, key in (("where", "where"), ("evidence", "evidence"), ("do", "action")):
            if row.get(key):
                lines += textwrap.wrap(row[key], width, initial_indent=f"{indent}{label}: ",
                                       subsequent_indent=indent + "  ", break_on_hyphens=False)
        lines.append("")
    return "\n".join(lines)


def replay_text(row: dict) -> str:
    """`, what-if 38.9 ms`: the step time the critical-path replay saves with the cause removed (predicted_gain_ns),
    after the bound; empty where no replay models the cause."""
    gain = row.get("predicted_gain_ns")
    return "" if gain is None else f", what-if {units.duration(gain)}"


def render_markdown(findings: pl.DataFrame, header: str | None = None) -> str:
    """The findings as a Markdown numbered list (one item per finding, where/evidence/do as sub-items)."""
    lines = [header, ""] if header else []
    if findings.height == 0:
        return "\n".join(lines + ["No findings: no rule fired on the analysed steps."]) + "\n"
    for i, row in enumerate(findings.iter_rows(named=True), 1):
        lines.append(f"{i}. **{_md(row['title'])}** (`{row['rule']}`): up to {units.duration(row['recoverable_ns'])}"
                     + replay_text(row))
        for label, key in (("where", "where"), ("evidence", "evidence"), ("do", "action")):
            if row.get(key):
                lines.append(f"   - {label}: {_md(row[key])}")
    return "\n".join(lines) + "\n"


def _md(text: str) -> str:
    return (text or "").replace("\\", "\\\\").replace("*", "\\*").replace("_", "\\_").replace("`", "\\`")
