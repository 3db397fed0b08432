"""The dependency graph of docs/critical-path.md, built from the export's `analysis._cp_*` queries: CPU pieces, CUDA
calls and blocking OS waits per thread in program order, GPU ops with their launch, stream and cross-stream edges,
waiting calls with the op they waited for, OS waits with their waker, collectives with their last arrival.

Nodes are integers into parallel lists (a few per CUDA call: the walk and the replay touch each once, so plain lists
beat a frame library's per-row access here)."""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field

import polars as pl

from nsysql.core import progress

PIECE, CALL, OS_WAIT, OP = 0, 1, 2, 3  # node kinds
KERNEL, COPY, COMM = "kernel", "copy", "comm"  # classes of GPU ops
NO_RANGE = "(no range)"


@dataclass
class Graph:
    kind: list[int] = field(default_factory=list)
    start: list[int] = field(default_factory=list)
    end: list[int] = field(default_factory=list)
    pid: list[int] = field(default_factory=list)
    name: list[str] = field(default_factory=list)  # range text, API name or op name
    layer: list[str | None] = field(default_factory=list)  # range path (CPU) or layer path (GPU op)
    stack: list[tuple[str, ...]] = field(default_factory=list)  # the user ranges open around a CPU node, outermost first
    prev: list[int] = field(default_factory=list)  # previous node on the thread, or on the stream for an op; -1
    op_class: dict[int, str] = field(default_factory=dict)  # op -> kernel, copy or comm
    launch: dict[int, int] = field(default_factory=dict)  # op -> the call that launched it
    sources: dict[int, list[int]] = field(default_factory=dict)  # op -> ops it waits for across streams
    waited: dict[int, int] = field(default_factory=dict)  # waiting call -> the op it waited for
    waker: dict[int, tuple[int, int]] = field(default_factory=dict)  # OS wait -> (waker thread, time)
    collective: dict[int, tuple[int, list[int]]] = field(default_factory=dict)  # op -> (last arrival L, instances)
    operation: dict[int, str] = field(default_factory=dict)  # comm op -> its operation
    last_arrival: dict[int, int] = field(default_factory=dict)  # comm op -> the instance that arrived last
    collective_key: dict[int, str] = field(default_factory=dict)  # comm op -> analysis.comm_waits' matching key
    threads: dict[int, tuple[list[int], list[int]]] = field(default_factory=dict)  # tid -> (node ends, nodes)
    outside: dict[int, str] = field(default_factory=dict)  # tid -> the name of its CPU work outside every range
    missing: list[str] = field(default_factory=list)  # edges the export cannot give, one line each
    window: tuple[int, int] | None = None  # (lo, hi): the graph holds what overlaps it; None: the whole export
    owner_of: list[int] = field(default_factory=list, repr=False)  # owners(), once built

    def add(self, kind: int, start: int, end: int, pid: int, name: str, layer: str | None,
            stack: tuple[str, ...] = (), prev: int = -1) -> int:
        self.kind.append(kind)
        self.start.append(start)
        self.end.append(end)
        self.pid.append(pid)
        self.name.append(name)
        self.layer.append(layer)
        self.stack.append(stack)
        self.prev.append(prev)
        return len(self.kind) - 1

    def __len__(self) -> int:
        return len(self.kind)

    def before(self, tid: int, t: int) -> int:
        """The node of thread `tid` holding the instant just before `t` (start < t <= end), else -1."""
        ends, nodes = self.threads.get(tid, ((), ()))
        i = bisect.bisect_left(ends, t)
        if i < len(nodes) and self.start[nodes[i]] < t:
            return nodes[i]
        return -1

    def owners(self) -> list[int]:
        """Per node the thread it ran on (its key in `threads`): a GPU op's is its launching call's; -1 for an op
        nothing recorded launched. Built once."""
        got = self.owner_of
        if len(got) != len(self):
            got = [-1] * len(self)
            for tid, (_, nodes) in self.threads.items():
                for n in nodes:
                    got[n] = tid
            for n, call in self.launch.items():
                got[n] = got[call]
            self.owner_of = got
        return got


def build(ex, window: tuple[int, int] | None = None) -> Graph:
    """The graph of every process of `ex` with steps; with `window` (lo, hi), of what overlaps it only. Tables an
    export lacks drop their edges, each said in `missing`; without CUDA runtime calls there is no graph to walk
    (MissingDataError)."""
    g = Graph(window=window)
    ex.require(["runtime"], "the critical path")
    limits = bounds(window)  # the queries read the window only (a job's rows, put in whole, are cut here by _in)
    ranges = _in(_optional(ex, "analysis._cp_ranges", ("nvtx_range",), **limits), window)
    calls = _in(ex.run("analysis._cp_calls", **limits), window)
    waits = _in(_optional(ex, "analysis._cp_os_waits", ("osrt",), **limits), window)
    steps = _in(ex.run("analysis._cp_steps"), window)
    ops = _in(ex.run("analysis._cp_ops", **limits), window)
    names = {r["global_tid"]: r["thread_name"] for r in ex.run("analysis._cp_threads").iter_rows(named=True)}
    events = _optional(ex, "analysis._cp_event_waits", ("sync", "cuda_event"))
    with progress.stage("critical_path.graph (Python)") as shown:  # bench/bench_stages.py: apart from the queries
        call_node = _threads(g, calls, waits, ranges, steps, names, window[0] if window else None)
        _ops(g, ops, calls, call_node)
        if events is not None:
            _event_edges(g, events)
        if shown is not None:
            shown.rows = len(g)
    g.missing = missing_edges(ex)
    return g


def missing_edges(ex) -> list[str]:
    """The edges the export cannot give (tables it lacks), one line each, without building a graph."""
    out = []
    if not (ex.has("sync") and ex.has("cuda_event")):
        out.append("cross-stream waits: the export has no CUDA event records or stream waits "
                   "(CUPTI_ACTIVITY_KIND_CUDA_EVENT, _SYNCHRONIZATION)")
    if not ex.has("osrt"):
        out.append("thread wake-ups: the export has no OS runtime calls (nsys profile -t osrt)")
    return out


def bounds(window: tuple[int, int] | None) -> dict[str, int]:
    """The `analysis._cp_*` parameters that read `window` only (none: the whole export)."""
    return {} if window is None else {"lo_ns": window[0], "hi_ns": window[1]}


def _in(df, window: tuple[int, int] | None):
    """The rows of `df` overlapping `window` (all of them without one)."""
    if df is None or window is None:
        return df
    return df.filter((pl.col("end_ns") >= window[0]) & (pl.col("start_ns") <= window[1]))


def _optional(ex, query: str, tables: tuple[str, ...], **params):
    """The query's rows, or None when the export lacks one of `tables`."""
    return ex.run(query, **params) if all(ex.has(t) for t in tables) else None


def _threads(g: Graph, calls, waits, ranges, steps, names: dict[int, str], since: int | None) -> dict[int, int]:
    """Cut every thread of interest into pieces, calls and waits (from `since` on, the window's start: the CPU work
    before a thread's first event in the window is its own, as in the whole graph); returns runtime_id -> its
    node."""
    by_thread: dict[int, list[tuple]] = {}  # tid -> [(start, end, kind, payload)]
    for r in calls.iter_rows(named=True):
        by_thread.setdefault(r["global_tid"], []).append((r["start_ns"], r["end_ns"], CALL, r))
    wait_rows = list(waits.iter_rows(named=True)) if waits is not None else []
    for r in wait_rows:
        by_thread.setdefault(r["global_tid"], []).append((r["start_ns"], r["end_ns"], OS_WAIT, r))
    cuts: dict[int, set[int]] = {}
    range_rows: dict[int, list[tuple]] = {}
    for r in (ranges.iter_rows(named=True) if ranges is not None else ()):
        range_rows.setdefault(r["global_tid"], []).append((r["start_ns"], r["end_ns"], r["user_depth"], r["text"],
                                                           r["layer"]))
    for r in steps.iter_rows(named=True):
        if r["global_tid"] is not None:
            cuts.setdefault(r["global_tid"], set()).update((r["start_ns"], r["end_ns"]))
            by_thread.setdefault(r["global_tid"], [])
    for r in wait_rows:
        if r["waker_global_tid"] is not None:
            cuts.setdefault(r["waker_global_tid"], set()).add(r["waker_end_ns"])
            by_thread.setdefault(r["waker_global_tid"], [])
    pid_of = {r["global_tid"]: r["pid"] for r in steps.iter_rows(named=True) if r["global_tid"] is not None}
    pid_of.update({r["global_tid"]: r["pid"] for r in calls.iter_rows(named=True)})
    pid_of.update({r["global_tid"]: r["pid"] for r in wait_rows})
    call_node: dict[int, int] = {}
    os_nodes: list[tuple[int, dict]] = []
    for tid, segments in by_thread.items():
        tranges = sorted(range_rows.get(tid, []), key=lambda x: (x[0], x[2]))
        points = set(cuts.get(tid, ()))
        if since is not None:
            points.add(since)
        for s, e, *_ in tranges:
            points.update((s, e))
        outside = g.outside[tid] = f"thread {names[tid]}" if names.get(tid) else NO_RANGE
        _one_thread(g, tid, pid_of.get(tid, (tid >> 24) & 0xFFFFFF), sorted(segments, key=lambda x: (x[0], -x[1])),
                    _Labels(tranges, outside), sorted(points), call_node, os_nodes)
    for node, r in os_nodes:
        if r["waker_global_tid"] is not None and r["waker_global_tid"] in g.threads:
            g.waker[node] = (r["waker_global_tid"], r["waker_end_ns"])
    return call_node


def _one_thread(g: Graph, tid: int, pid: int, segments: list[tuple], labels: "_Labels", points: list[int],
                call_node: dict[int, int], os_nodes: list) -> None:
    kept: list[tuple] = []
    outer: list[tuple[int, int]] = []  # (runtime_id of a nested call, runtime_id of the call around it)
    for seg in segments:  # a call inside another (a driver call under a runtime call) is part of the outer one
        if kept and seg[0] < kept[-1][1]:
            if seg[2] == CALL and kept[-1][2] == CALL:
                outer.append((seg[3]["runtime_id"], kept[-1][3]["runtime_id"]))
            continue
        kept.append(seg)
    times = [t for seg in kept for t in seg[:2]] + points
    if not times:
        return
    first, last = min(times), max(times)
    ends: list[int] = []
    nodes: list[int] = []
    prev = -1
    p = 0  # next cut point

    def piece(a: int, b: int) -> None:
        nonlocal prev, p
        while a < b:
            while p < len(points) and points[p] <= a:
                p += 1
            cut = min(b, points[p]) if p < len(points) else b
            text, layer, stack = labels.at(a)
            prev = g.add(PIECE, a, cut, pid, text, layer, stack, prev)
            ends.append(cut)
            nodes.append(prev)
            a = cut

    t = first
    for s, e, kind, row in kept:
        piece(t, s)
        text, layer, stack = labels.at(s)
        prev = g.add(kind, s, e, pid, row["api"], layer, stack, prev)
        ends.append(e)
        nodes.append(prev)
        if kind == CALL:
            call_node[row["runtime_id"]] = prev
            if row["wait_kind"] is not None:
                g.waited[prev] = -1 - len(g.waited)  # resolved to the op's node once ops exist (_ops)
        else:
            os_nodes.append((prev, row))
        t = max(t, e)
    piece(t, last)
    for inner, around in outer:
        call_node[inner] = call_node.get(around, -1)
    g.threads[tid] = (ends, nodes)


class _Labels:
    """The innermost user range open at a time on one thread, for times in increasing order (ranges nest)."""

    def __init__(self, ranges: list[tuple], outside: str = NO_RANGE):
        self.ranges = ranges
        self.outside = outside  # the name of CPU work outside every range
        self.i = 0
        self.open: list[tuple] = []
        self.stack: tuple[str, ...] = ()

    def at(self, t: int) -> tuple[str, str | None, tuple[str, ...]]:
        changed = False
        while self.i < len(self.ranges) and self.ranges[self.i][0] <= t:
            r = self.ranges[self.i]
            while self.open and self.open[-1][1] <= r[0]:
                self.open.pop()
            self.open.append(r)
            self.i += 1
            changed = True
        while self.open and self.open[-1][1] <= t:
            self.open.pop()
            changed = True
        if changed:
            self.stack = tuple(r[3] for r in self.open)
        if not self.open:
            return self.outside, None, self.stack
        top = self.open[-1]
        return top[3], top[4], self.stack


def _ops(g: Graph, ops, calls, call_node: dict[int, int]) -> None:
    op_node: dict[tuple[str, int], int] = {}
    stream_last: dict[tuple[int, int, int], int] = {}
    kernel_node: dict[tuple[int, int], int] = {}
    pending: list[tuple[int, dict]] = []
    for r in ops.iter_rows(named=True):  # in (pid, device, stream, start) order
        key = (r["pid"], r["device_id"], r["stream_id"])
        n = g.add(OP, r["start_ns"], r["end_ns"], r["pid"], r["op_name"], r["layer"], (), stream_last.get(key, -1))
        stream_last[key] = n
        op_node[(r["op_kind"], r["op_id"])] = n
        g.op_class[n] = COMM if r["is_comm"] else COPY if r["op_kind"] in ("memcpy", "memset") else KERNEL
        if r["op_kind"] == "kernel":
            kernel_node[(r["pid"], r["op_id"])] = n
        if r["runtime_id"] is not None and call_node.get(r["runtime_id"], -1) >= 0:
            g.launch[n] = call_node[r["runtime_id"]]
        if r["is_comm"]:
            g.operation[n] = r["operation"] or r["op_name"]
            if r["last_start_ns"] is not None:
                pending.append((n, r))
    members: dict[str, list[int]] = {}
    for n, r in pending:  # the last instance may be another export's (a job's): then no node of this graph
        g.last_arrival[n] = kernel_node.get((r["last_pid"], r["last_kernel_id"]), -1)
        members.setdefault(r["collective"], []).append(n)
    for n, r in pending:
        g.collective[n] = (r["last_start_ns"], members[r["collective"]])
        g.collective_key[n] = r["collective"]
    for r in calls.filter(calls["wait_kind"].is_not_null()).iter_rows(named=True):
        node = call_node.get(r["runtime_id"], -1)
        if node >= 0 and node in g.waited:
            g.waited[node] = op_node.get((r["waited_kind"], r["waited_id"]), -1)
    for node in [n for n, q in g.waited.items() if q < 0]:
        del g.waited[node]
    g.op_node = op_node  # type: ignore[attr-defined]  # for the event edges


def _event_edges(g: Graph, waits) -> None:
    op_node = g.op_node  # type: ignore[attr-defined]
    for r in waits.iter_rows(named=True):
        target = op_node.get((r["op_kind"], r["op_id"]))
        source = op_node.get((r["source_kind"], r["source_id"]))
        if target is not None and source is not None and source != target:
            g.sources.setdefault(target, []).append(source)


def thread_key(part: int, tid: int) -> int:
    """A thread's key in a job's merged graph: its global id, made unique across exports (ids may repeat on
    several hosts)."""
    return tid + (part << 64)


def merge(graphs: list[Graph], shifts: list[int]) -> tuple[Graph, list[int]]:
    """The graphs of a job's exports (one per rank) as one graph on the job's clock (each export's times plus its
    shift, nsysql/answers/job.py), and the first node of each export's part. A collective's instances on every rank
    become one collective, and an instance whose last arrival was another export's now leads to it: a rank's path
    runs on through the late rank, as in one export of several ranks."""
    m = Graph()
    offsets: list[int] = []
    by_key: dict[str, list[int]] = {}
    for part, (g, sh) in enumerate(zip(graphs, shifts)):
        off = len(m)
        offsets.append(off)
        m.kind += g.kind
        m.start += [t + sh for t in g.start]
        m.end += [t + sh for t in g.end]
        m.pid += g.pid
        m.name += g.name
        m.layer += g.layer
        m.stack += g.stack
        m.prev += [p + off if p >= 0 else -1 for p in g.prev]
        m.op_class.update({n + off: c for n, c in g.op_class.items()})
        m.launch.update({n + off: c + off for n, c in g.launch.items()})
        m.sources.update({n + off: [w + off for w in ws] for n, ws in g.sources.items()})
        m.waited.update({n + off: q + off for n, q in g.waited.items()})
        m.waker.update({n + off: (thread_key(part, tid), t + sh) for n, (tid, t) in g.waker.items()})
        m.operation.update({n + off: o for n, o in g.operation.items()})
        m.collective.update({n + off: (last + sh, []) for n, (last, _) in g.collective.items()})
        m.last_arrival.update({n + off: a + off if a >= 0 else -1 for n, a in g.last_arrival.items()})
        m.collective_key.update({n + off: k for n, k in g.collective_key.items()})
        for n, k in g.collective_key.items():
            by_key.setdefault(k, []).append(n + off)
        m.threads.update({thread_key(part, tid): ([t + sh for t in ends], [n + off for n in nodes])
                          for tid, (ends, nodes) in g.threads.items()})
        m.outside.update({thread_key(part, tid): label for tid, label in g.outside.items()})
        m.missing += [line for line in g.missing if line not in m.missing]
    for members in by_key.values():
        last = max(members, key=lambda n: (m.start[n], -n))  # the instance that started last, on the job's clock
        for n in members:
            m.collective[n] = (m.collective[n][0], members)
            if m.last_arrival[n] < 0 and m.start[last] >= m.collective[n][0]:  # (else a rank not given was last)
                m.last_arrival[n] = last
    return m, offsets
