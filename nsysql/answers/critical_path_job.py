"""The critical path of a job's exports (one per rank, nsysql/answers/job.py): every rank's graph merged onto the
job's clock (nsysql/answers/cp_graph.py merge), so a rank that waited in a collective for a late rank goes on
through the late rank's work, as in one export of several ranks. Times in the answers are on the walking rank's
own clock, as that export's other answers give them."""
from __future__ import annotations

import bisect

import polars as pl

from nsysql.answers import critical_path
from nsysql.answers.cp_graph import Graph, merge, thread_key
from nsysql.answers.critical_path import Item
from nsysql.answers.job import each


def shift(ex) -> int:
    """What puts the export's times on the job's clock (nsysql/answers/job.py link)."""
    return int(getattr(ex, "clock_shift_ns", 0))


def graph(exports: list, windows: list | None = None) -> tuple[Graph, list[int]]:
    """The merged graph of the job (of each export's window, own clock, when given) and the first node of each
    export's part, built once per opened job and windows."""
    first = exports[0]
    key = (tuple((id(ex), getattr(ex, "inputs_version", 0)) for ex in exports), tuple(windows) if windows else None)
    cached = getattr(first, "_cp_job_graph", None)
    if cached is None or cached[0] != key:
        ws = dict(zip(map(id, exports), windows or [None] * len(exports)))
        parts = each(exports, lambda ex: critical_path.graph(ex, ws[id(ex)]))
        cached = first._cp_job_graph = (key, merge(parts, [shift(ex) for ex in exports]))
    return cached[1]


def plan(exports: list, step: int | None = None, pid: int | None = None,
         budget: int | None = None) -> tuple[list[pl.DataFrame], list | None]:
    """Per export, its steps to walk (critical_path.steps; with `budget`, each export's sample), and the windows to
    build the graphs of (each export's clock): the job-clock span of every export's steps when they are some of the
    analysed ones (`step`, or a sample); None: whole graphs."""
    todo = each(exports, lambda ex: critical_path.steps(ex, step, pid, budget))
    cut = [(ex, critical_path.window_of(ex, t)) for ex, t in zip(exports, todo) if t.height]
    if budget is None and step is None or not any(w for _, w in cut):
        return todo, None
    spans = [(ex, w or _whole(ex)) for ex, w in cut]
    lo = min(w[0] + shift(ex) for ex, w in spans)
    hi = max(w[1] + shift(ex) for ex, w in spans)
    return todo, [(lo - shift(ex), hi - shift(ex)) for ex in exports]


def paths(exports: list, step: int | None = None, pid: int | None = None,
          budget: int | None = None) -> tuple[Graph, list[int], list[list[tuple[dict, list[Item]]]]]:
    """The merged graph, its parts' first nodes and, per export, (step row, its path) for each of its steps to walk
    (`plan`), the items' times on the job's clock."""
    todo, windows = plan(exports, step, pid, budget)
    g, offsets = graph(exports, windows)
    out = []
    for part, ex in enumerate(exports):
        sh = shift(ex)
        ops = ops_of(g, offsets, part)  # a step with no thread ends on its own GPU
        walked = []
        for row in todo[part].iter_rows(named=True):
            tid = thread_key(part, row["global_tid"]) if row["global_tid"] is not None else None
            walked.append((row, critical_path.walk(g, row["start_ns"] + sh, row["end_ns"] + sh, tid, ops)))
        out.append(walked)
    return g, offsets, out


def _whole(ex) -> tuple[int, int]:
    """The span critical_path.window_of would give for all of the export's analysed steps."""
    return critical_path.span(critical_path.steps(ex))


def _part(offsets: list[int], n: int) -> int:
    return bisect.bisect_right(offsets, n) - 1


def ops_of(g: Graph, offsets: list[int], part: int) -> list[int]:
    """The GPU ops of one export's part of the merged graph."""
    return [n for n in g.op_class if _part(offsets, n) == part]


def composition(exports: list, labels: list[str], step: int | None = None, pid: int | None = None,
                budget: int | None = None) -> pl.DataFrame:
    """critical_path.composition of each rank, the paths crossing ranks, an `export` column first."""
    walked = paths(exports, step, pid, budget)[2]
    frames = [critical_path.composition_of(w, ex).with_columns(pl.lit(label).alias("export"))
              for w, ex, label in zip(walked, exports, labels)]
    df = pl.concat(frames, how="diagonal_relaxed")
    return df.select("export", *[c for c in df.columns if c != "export"])


def item_rows(exports: list, labels: list[str], step: int | None = None, pid: int | None = None,
              budget: int | None = None) -> pl.DataFrame:
    """critical_path.item_rows of each rank, an `export` column first and `on_export` after `on_pid`: the export
    (rank) whose thread or stream ran the item. start_ns and end_ns are on the walking export's clock."""
    g, offsets, walked = paths(exports, step, pid, budget)
    frames = []
    for part, ex in enumerate(exports):
        sh = shift(ex)
        rows = []
        for row, items in walked[part]:
            for it in items:
                out = critical_path.item_row(g, row, it)
                out["on_export"] = labels[_part(offsets, it.node)] if it.node >= 0 else labels[part]
                out["start_ns"] -= sh
                out["end_ns"] -= sh
                rows.append(out)
        schema = {**critical_path.ITEM_SCHEMA, "on_export": pl.Utf8}
        df = critical_path.pid_if_several(pl.DataFrame(rows, schema=schema, orient="row"), ex)
        frames.append(df.with_columns(pl.lit(labels[part]).alias("export")))
    df = pl.concat(frames, how="diagonal_relaxed")
    order = ["export"] + [c for c in df.columns if c not in ("export", "on_export", "kind")]
    at = order.index("on_pid") + 1 if "on_pid" in order else order.index("step") + 1
    order[at:at] = ["on_export", "kind"]
    return df.select(order)
