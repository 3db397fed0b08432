"""The critical path of each step (docs/critical-path.md): walked back from the step's end to its start through the
graph of nsysql/answers/cp_graph.py, its composition by kind and its items in time order."""
from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from nsysql.answers import cp_graph
from nsysql.answers.cp_graph import CALL, COMM, COPY, OP, OS_WAIT, PIECE, Graph
from nsysql.core import progress

KINDS = ("cpu", "launch", "gpu_compute", "copy", "sync_wait", "comm_transfer", "comm_wait")
COLUMNS = tuple(f"{k}_ns" for k in KINDS)
_OP_KIND = {cp_graph.KERNEL: "gpu_compute", COPY: "copy", COMM: "comm_transfer"}


@dataclass
class Item:
    kind: str
    node: int
    start: int
    end: int


SUMMARY_BUDGET = 200_000  # CUDA calls and GPU ops summarize's bound line walks at most (past it: the last steps)
GAINS_BUDGET = 50_000  # CUDA calls and GPU ops the findings' replays (one per cause) run over at most


def graph(ex, window: tuple[int, int] | None = None) -> Graph:
    """The export's graph (of what overlaps `window`), built once per open export, window and inputs (a job's
    linking gives the export other collectives' matches: nsysql/answers/job.py)."""
    cached = getattr(ex, "_cp_graphs", None)
    if cached is None:
        cached = ex._cp_graphs = {}
    key = (window, getattr(ex, "inputs_version", 0))
    if key not in cached:
        cached[key] = cp_graph.build(ex, window)
    return cached[key]


def steps(ex, step: int | None = None, pid: int | None = None, budget: int | None = None) -> pl.DataFrame:
    """The steps to walk: the analysed ones, or step `step` (of process `pid`) whatever its state. With `budget`,
    only the last analysed steps (by step number, every process's) whose span holds at most `budget` CUDA calls
    and GPU ops, at least one step: a sample that keeps summarize and findings fast on long captures."""
    df = ex.run("analysis._cp_steps")
    if step is not None:
        df = df.filter(pl.col("step") == step)
        return df.filter(pl.col("pid") == pid) if pid is not None else df
    df = df.filter(pl.col("analysed"))
    if budget is None or df.height == 0:
        return df
    kept: list[int] = []
    for number, held in ex.run("analysis._cp_sample_load").iter_rows():  # the last step first
        if kept and held > budget:
            break
        kept.append(number)
    return df.filter(pl.col("step").is_in(kept))


def span(steps_df: pl.DataFrame) -> tuple[int, int]:
    """The window the graph of these steps needs: from one step's length before the first to the last end (the
    work queued before a step that runs into it)."""
    lo = int(steps_df["start_ns"].min())  # type: ignore[arg-type]
    return lo - int(steps_df["wall_ns"].max()), int(steps_df["end_ns"].max())  # type: ignore[arg-type]


def window_of(ex, steps_df: pl.DataFrame) -> tuple[int, int] | None:
    """The graph window for a sample of the analysed steps; None (the whole graph) when they are all of them."""
    if steps_df.height == ex.run("analysis._cp_steps").filter(pl.col("analysed")).height:
        return None
    return span(steps_df)


def walk(g: Graph, start: int, end: int, tid: int | None, ops=None) -> list[Item]:
    """The path of the window [start, end] ending on thread `tid` (None: on the GPU op ending last, of `ops` when
    given), in time order."""
    items: list[Item] = []

    def add(kind: str, node: int, a: int, b: int) -> None:
        a = max(a, start)
        if b <= a:
            return
        if items and items[-1].node == node and items[-1].kind == kind and items[-1].start == b:
            items[-1].start = a  # consecutive intervals of one node are one item
        else:
            items.append(Item(kind, node, a, b))

    n = g.before(tid, end) if tid is not None else _last_op(g, end, g.op_class if ops is None else ops)
    c = end
    for _ in range(4 * len(g) + 10):  # every turn moves back in time or to an earlier node
        if c <= start:
            break
        if n < 0:
            add("cpu", -1, start, c)
            break
        kind, s, e = g.kind[n], g.start[n], g.end[n]
        if kind == PIECE:
            add("cpu", n, s, c)
            c, n = min(c, s), g.prev[n]
        elif kind == CALL:
            q = g.waited.get(n, -1)
            if q >= 0 and c == e and s < g.end[q] <= c:
                add("sync_wait", n, g.end[q], c)
                c, n = g.end[q], q
            else:
                add("launch", n, s, c)
                c, n = min(c, s), g.prev[n]
        elif kind == OS_WAIT:
            w = g.waker.get(n)
            if w is not None and c == e and s < w[1] <= c and g.before(w[0], w[1]) >= 0:
                add("sync_wait", n, w[1], c)
                c, n = w[1], g.before(w[0], w[1])
            else:
                add("cpu", n, s, c)
                c, n = min(c, s), g.prev[n]
        else:
            n, c = _op_step(g, n, c, add)
    return sorted(items, key=lambda it: (it.start, it.end))


def _op_step(g: Graph, n: int, c: int, add) -> tuple[int, int]:
    """Walk through GPU op `n` from cursor `c`; returns the next node and cursor."""
    s = g.start[n]
    cls = g.op_class[n]
    if n in g.collective:
        last_start, _ = g.collective[n]
        if last_start > s:
            add("comm_transfer", n, max(s, last_start), c)
            c = min(c, last_start)
            other = g.last_arrival.get(n, -1)
            if other >= 0 and other != n:
                return other, c  # the path goes on through the last rank's instance
            add("comm_wait", n, s, c)
            c = min(c, s)
    add(_OP_KIND[cls], n, s, c)
    c = min(c, s)
    pred, ready, via_launch = binding(g, n)
    if pred < 0:
        add("launch", n, -(1 << 62), c)  # nothing recorded launched it: the rest is unexplained latency
        return -1, -(1 << 62)
    if ready < c:  # the op waited after its last predecessor was ready: launch and scheduling latency
        add("launch", pred if via_launch else n, ready, c)
    return pred, min(c, ready)


def binding(g: Graph, n: int) -> tuple[int, int, bool]:
    """The predecessor that became ready last before op `n` started: (node, ready time, is it the launch call).
    Ties go to the stream, then a cross-stream wait, then the launch."""
    best, ready, via_launch = -1, -(1 << 62), False
    p = g.prev[n]
    if p >= 0:
        best, ready = p, g.end[p]
    for w in g.sources.get(n, ()):
        if g.end[w] > ready:
            best, ready = w, g.end[w]
    call = g.launch.get(n, -1)
    if call >= 0 and launch_ready(g, call, n) > ready:
        best, ready, via_launch = call, launch_ready(g, call, n), True
    return best, ready, via_launch


def launch_ready(g: Graph, call: int, n: int) -> int:
    """When op `n`'s launching call had issued it: its end, or, for a call that then waited for the GPU (a blocking
    copy, a launch into a full queue), its start: its end waited for the GPU and cannot bind the op."""
    return g.start[call] if call in g.waited else g.end[call]


def _last_op(g: Graph, end: int, ops) -> int:
    best = -1
    for n in ops:
        if g.end[n] <= end and (best < 0 or g.end[n] > g.end[best]):
            best = n
    return best


def planned(ex, step: int | None = None, pid: int | None = None,
            budget: int | None = None) -> tuple[pl.DataFrame, Graph]:
    """The steps to walk (see `steps`) and the graph to walk them on: of their span only when they are some of the
    analysed steps (`step`, or a sample with `budget`; on the bench export, one step's graph is built in a second
    instead of a minute), else the whole export's."""
    todo = steps(ex, step, pid, budget)
    some = budget is not None or step is not None
    return todo, graph(ex, window_of(ex, todo) if some and todo.height else None)


def paths(ex, step: int | None = None, pid: int | None = None,
          budget: int | None = None) -> list[tuple[dict, list[Item]]]:
    """(step row, its path) for each step to walk (see `steps` for `budget`)."""
    todo, g = planned(ex, step, pid, budget)
    with progress.stage("critical_path.walk (Python)"):
        return [(row, walk(g, row["start_ns"], row["end_ns"], row["global_tid"]))
                for row in todo.iter_rows(named=True)]


def composition(ex, step: int | None = None, pid: int | None = None, budget: int | None = None) -> pl.DataFrame:
    """One row per step: step, [pid], wall_ns, path_ns and the path's time per kind (adding up to path_ns). Kept
    with the export's answers (nsysql/answers/critical_path_kept.py)."""
    from nsysql.answers.critical_path_kept import kept
    return kept(ex, "composition", {"step": step, "pid": pid, "budget": budget},
                lambda: composition_of(paths(ex, step, pid, budget), ex))


def composition_of(walked: list[tuple[dict, list[Item]]], ex) -> pl.DataFrame:
    """composition's frame of these (step row, path) pairs of export `ex`."""
    rows = []
    for row, items in walked:
        out = {"step": row["step"], "pid": row["pid"], "wall_ns": row["wall_ns"]}
        totals = dict.fromkeys(COLUMNS, 0)
        for it in items:
            totals[f"{it.kind}_ns"] += it.end - it.start
        out["path_ns"] = sum(totals.values())
        out.update(totals)
        rows.append(out)
    schema = {"step": pl.Int64, "pid": pl.Int64, "wall_ns": pl.Int64, "path_ns": pl.Int64,
              **dict.fromkeys(COLUMNS, pl.Int64)}
    return pid_if_several(pl.DataFrame(rows, schema=schema, orient="row"), ex)


def item_rows(ex, step: int | None = None, pid: int | None = None, budget: int | None = None) -> pl.DataFrame:
    """The items of each step's path in time order: step, [pid, on_pid], kind, name, layer, start_ns, end_ns. Kept
    with the export's answers (nsysql/answers/critical_path_kept.py)."""
    from nsysql.answers.critical_path_kept import kept

    def compute() -> pl.DataFrame:
        g = planned(ex, step, pid, budget)[1]
        rows = [item_row(g, row, it) for row, items in paths(ex, step, pid, budget) for it in items]
        return pid_if_several(pl.DataFrame(rows, schema=ITEM_SCHEMA, orient="row"), ex)
    return kept(ex, "items", {"step": step, "pid": pid, "budget": budget}, compute)


ITEM_SCHEMA = {"step": pl.Int64, "pid": pl.Int64, "on_pid": pl.Int64, "kind": pl.Utf8, "name": pl.Utf8,
                "layer": pl.Utf8, "start_ns": pl.Int64, "end_ns": pl.Int64}


def item_row(g: Graph, row: dict, it: Item) -> dict:
    n = it.node
    return {"step": row["step"], "pid": row["pid"], "on_pid": g.pid[n] if n >= 0 else row["pid"],
            "kind": it.kind, "name": _item_name(g, n, it.kind),
            "layer": g.layer[n] if n >= 0 else None, "start_ns": it.start, "end_ns": it.end}


def item_tracks(ex, step: int | None = None, pid: int | None = None) -> pl.DataFrame:
    """item_rows' rows (with `pid` and `on_pid` always) and the track each item ran on, for drawing the path over a
    timeline (nsysql plot, the HTML report): `tid` (the thread's OS id) and `thread_name` for CPU work, CUDA calls
    and waits, `device_id` and `stream_id` for GPU ops; all NULL for the time before a thread's first event. These
    columns are not item_rows' (its columns are the command's contract)."""
    g = planned(ex, step, pid)[1]
    thread_of = {n: tid for tid, (_, nodes) in g.threads.items() for n in nodes}
    stream_of: dict[int, tuple[int, int]] = {}
    op_node = getattr(g, "op_node", {})
    for r in ex.run("analysis._cp_ops", **cp_graph.bounds(g.window)).select("op_kind", "op_id", "device_id", "stream_id").iter_rows():
        n = op_node.get((r[0], r[1]))
        if n is not None:
            stream_of[n] = (r[2], r[3])
    names = dict(ex.run("analysis._cp_threads").iter_rows())
    rows = []
    for row, items in paths(ex, step, pid):
        for it in items:
            out = item_row(g, row, it)
            gtid = thread_of.get(it.node)
            out["tid"] = gtid & 0xFFFFFF if gtid is not None else None  # the export's global id packs pid and tid
            out["thread_name"] = names.get(gtid) if gtid is not None else None
            out["device_id"], out["stream_id"] = stream_of.get(it.node, (None, None))
            rows.append(out)
    schema = {**ITEM_SCHEMA, "tid": pl.Int64, "thread_name": pl.Utf8, "device_id": pl.Int64, "stream_id": pl.Int64}
    return pl.DataFrame(rows, schema=schema, orient="row")


def of_exports(exports: list, labels: list[str], answer) -> pl.DataFrame:
    """`answer(export)` of each export of a job, with an `export` column first (one export: as it is)."""
    if len(exports) == 1:
        return answer(exports[0])
    frames = [answer(ex).with_columns(pl.lit(label).alias("export")) for ex, label in zip(exports, labels)]
    df = pl.concat(frames, how="diagonal_relaxed")
    return df.select("export", *[c for c in df.columns if c != "export"])


def _item_name(g: Graph, n: int, kind: str) -> str:
    if n < 0:
        return "(before the thread's first event)"
    if g.kind[n] == OP and kind == "launch":  # the wait of an op after its last predecessor was ready
        return f"(latency) {g.name[n]}"
    return g.name[n]


def pid_if_several(df: pl.DataFrame, ex) -> pl.DataFrame:
    """`pid` (and `on_pid`) only when several processes have steps."""
    several = ex.run("analysis._cp_steps")["pid"].n_unique() > 1
    return df if several else df.drop([c for c in ("pid", "on_pid") if c in df.columns])


def bound_line(comp: pl.DataFrame, items: pl.DataFrame) -> str | None:
    """"the step is bound by: CPU 62% (dataloader 51%), GPU 30%, ..." over the rows of `comp` (and their items)."""
    total = comp["path_ns"].sum() if comp.height else 0
    if not total:
        return None
    groups = [("CPU", ("cpu_ns", "launch_ns"), ("cpu", "launch")), ("GPU", ("gpu_compute_ns",), ("gpu_compute",)),
              ("copies", ("copy_ns",), ("copy",)), ("sync waits", ("sync_wait_ns",), ("sync_wait",)),
              ("communication", ("comm_transfer_ns", "comm_wait_ns"), ("comm_transfer", "comm_wait"))]
    parts = []
    for label, cols, kinds in groups:
        ns = sum(int(comp[c].sum()) for c in cols)
        pct = 100 * ns / total
        if pct < 1:
            continue
        text = f"{label} {pct:.0f}%"
        top = _top_name(items, kinds)
        if top is not None and 100 * top[1] / total >= 1 and label in ("CPU", "GPU"):
            text += f" ({top[0]} {100 * top[1] / total:.0f}%)"
        parts.append((ns, text))
    return "the step is bound by: " + ", ".join(t for _, t in sorted(parts, key=lambda x: -x[0]))


def _top_name(items: pl.DataFrame, kinds: tuple[str, ...]) -> tuple[str, int] | None:
    """The range (CPU) or layer (GPU) holding the most time of these kinds on the path."""
    sub = items.filter(pl.col("kind").is_in(kinds))
    if sub.height == 0:
        return None
    key = pl.when(pl.col("kind") == "gpu_compute").then(pl.col("layer").fill_null("?")).otherwise(pl.col("name"))
    top = (sub.with_columns(key.alias("_k"), (pl.col("end_ns") - pl.col("start_ns")).alias("_ns"))
              .group_by("_k").agg(pl.col("_ns").sum()).sort(["_ns", "_k"], descending=[True, False]).row(0))
    return top[0], top[1]
