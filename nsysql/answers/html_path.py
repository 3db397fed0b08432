"""The HTML report's "What bounds the step" (nsysql/answers/html_report.py): each analysed step's critical path by
kind (nsysql/answers/critical_path.py's composition, as `nsysql critical-path -f json` gives it) and, for each step
the page draws, the path's items over its timeline: rows of their own at the top, and a mark on the thread or
stream row each item ran on."""
from __future__ import annotations

from nsysql.answers import critical_path, critical_path_job
from nsysql.answers.multi import labels
from nsysql.errors import MissingDataError


def section(exports: list) -> dict | None:
    """{"kinds", "steps": the composition rows, "analysed": how many analysed steps there are (by number),
    "budget"}, for one
    export or the exports of a job (an `export` column, the ranks' graphs merged:
    nsysql/answers/critical_path_job.py) with a graph to walk; None otherwise. On a long capture the rows are a
    sample, the last steps, as summarize's bound line walks them (critical_path.SUMMARY_BUDGET): the whole graph
    of 660 steps took minutes and gigabytes to build for a page."""
    budget = critical_path.SUMMARY_BUDGET
    try:
        if len(exports) == 1:
            comp = critical_path.composition(exports[0], budget=budget)
        else:
            comp = critical_path_job.composition(exports, labels([ex.path for ex in exports]), budget=budget)
        analysed = max(critical_path.steps(ex)["step"].n_unique() for ex in exports)
    except MissingDataError:
        return None
    if comp.is_empty():
        return None
    return {"kinds": list(critical_path.KINDS), "steps": comp.to_dicts(), "analysed": analysed, "budget": budget}


def overlay(ex, number: int, lo: int, rows: list[dict]) -> dict | None:
    """The path of step `number` (of each process that has it) on the step's timeline: `rows` (labels of the path
    rows, one per process), `bars` (row index into those, start from `lo`, duration, kind, name) and `marks` (the
    label of the timeline row the item ran on, start, duration, kind). None when the step has no path."""
    try:
        items = critical_path.item_tracks(ex, number)
    except MissingDataError:
        return None
    if items.is_empty():
        return None
    pids = sorted(set(items["pid"].to_list()))
    several = len(pids) > 1 or set(items["on_pid"].to_list()) != set(pids)
    labels = [f"critical path (pid {p})" if several else "critical path" for p in pids]
    where = _track_rows(rows)
    bars: dict[str, list] = {k: [] for k in ("row", "s", "d", "kind", "name")}
    marks: dict[str, list] = {k: [] for k in ("row", "s", "d", "kind")}
    for r in items.sort("pid", "start_ns").iter_rows(named=True):
        bars["row"].append(pids.index(r["pid"]))
        bars["s"].append(r["start_ns"] - lo)
        bars["d"].append(r["end_ns"] - r["start_ns"])
        bars["kind"].append(r["kind"])
        bars["name"].append(r["name"])
        key = ("thread", r["on_pid"], r["tid"]) if r["tid"] is not None else \
            ("gpu", r["device_id"], r["stream_id"]) if r["device_id"] is not None else None
        row = where.get(key) if key else None
        if row is not None:
            marks["row"].append(row)
            marks["s"].append(r["start_ns"] - lo)
            marks["d"].append(r["end_ns"] - r["start_ns"])
            marks["kind"].append(r["kind"])
    return {"rows": labels, "bars": bars, "marks": marks}


def _track_rows(rows: list[dict]) -> dict[tuple, int]:
    """(thread, pid, tid) -> the thread's CUDA API row (else its last NVTX row); (gpu, device, stream) -> its row."""
    out: dict[tuple, int] = {}
    for i, r in enumerate(rows):
        track = r.get("track")
        if track is None:
            continue
        key = tuple(track)
        if key[0] == "gpu" or r["kind"] == "api" or out.get(key) is None or rows[out[key]]["kind"] != "api":
            out[key] = i
    return out
