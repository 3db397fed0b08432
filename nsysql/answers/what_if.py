"""What-if (docs/critical-path.md): the graph of nsysql/answers/cp_graph.py replayed with some durations scaled, and
each step's predicted time against the measured one; the findings' predicted gains."""
from __future__ import annotations

import bisect
import fnmatch
import re
import statistics
import sys
from dataclasses import dataclass, replace

import polars as pl

from nsysql.answers import critical_path
from nsysql.answers.cp_graph import CALL, COMM, NO_RANGE, OP, OS_WAIT, PIECE, Graph, thread_key
from nsysql.core import progress
from nsysql.errors import NsysqlError

TARGETS = {
    "kernel": "kernels by name (NCCL's excluded: comm)",
    "layer": "GPU ops by layer path",
    "copy": "copies and sets by name",
    "comm": "the transfer part of NCCL kernels, by operation or kernel name",
    "wait": "the cross-rank wait of collectives, by operation or kernel name",
    "range": "CPU work and CUDA calls inside a user range of that name (any depth)",
    "cpu": "all CPU work and CUDA calls, by the innermost range's name (`thread NAME` outside every range)",
    "api": "CUDA calls by API name (their own time, not their waits)",
    "sync": "the wait of waiting calls by API name (0: the call no longer waits for the GPU)",
}
# the kinds of a critical path's items (critical_path.KINDS) and the target that scales an item of that kind by its
# name: a name `critical-path` prints is a target a user can paste
PATH_KINDS = {"cpu": "cpu", "launch": "api", "gpu_compute": "kernel", "copy": "copy", "sync_wait": "sync",
              "comm_transfer": "comm", "comm_wait": "wait"}
# what one matched item of each target is, singular and plural (the matched lines and the docs)
ITEMS = {"kernel": ("kernel", "kernels"), "layer": ("GPU op", "GPU ops"), "copy": ("copy", "copies"),
         "comm": ("NCCL kernel", "NCCL kernels"), "wait": ("NCCL kernel", "NCCL kernels"),
         "range": ("span", "spans"), "cpu": ("span", "spans"), "api": ("call", "calls"),
         "sync": ("waiting call", "waiting calls")}
_SPEC = re.compile(r"^(?P<target>[a-z_]+):(?P<pattern>.+)=(?P<factor>[^=]+)$")
_SPACED = re.compile(r"^(?P<target>[a-z_]+) (?P<pattern>.+)=(?P<factor>[^=]+)$")  # `cpu thread X=0`, as a path line


@dataclass(frozen=True)
class Scale:
    target: str
    pattern: str  # a glob, or a name exactly (names with `[`, `*`: `[CUDA memcpy Host-to-Device]`)
    factor: float
    names: frozenset[str] | None = None  # exact names instead of the pattern (a finding's own kernels or ranges)
    threads: frozenset[int] | None = None  # only the work of these OS threads (a finding's own thread): CPU
    # pieces, calls and waits on them and the GPU ops they launched

    def matches(self, text: str | None) -> bool:
        if text is None:
            return False
        if self.names is not None:
            return text in self.names
        return text == self.pattern or fnmatch.fnmatchcase(text, self.pattern)

    def __str__(self) -> str:
        on = f" on thread {', '.join(map(str, sorted(self.threads)))}" if self.threads is not None else ""
        return f"{self.target}:{self.pattern}={self.factor:g}{on}"


def parse(spec: str) -> Scale:
    """`TARGET:PATTERN=FACTOR`, e.g. `kernel:sm80_xmma*=0.5`; an error names what is wrong."""
    text = spec.strip()
    m = _SPEC.match(text)
    if not m:
        spaced = _SPACED.match(text)
        if spaced and (spaced["target"] in TARGETS or spaced["target"] in PATH_KINDS):
            target = PATH_KINDS.get(spaced["target"], spaced["target"])
            raise NsysqlError(f"scale {spec!r}: write TARGET:PATTERN=FACTOR, here "
                              f"'{target}:{spaced['pattern']}={spaced['factor']}'")
        raise NsysqlError(f"scale {spec!r}: write TARGET:PATTERN=FACTOR, e.g. 'kernel:*gemm*=0.5' or "
                          "'range:dataloader=0'")
    target, pattern, factor = m["target"], m["pattern"], m["factor"]
    if target not in TARGETS:
        if target in PATH_KINDS:  # a path item's kind: the target that scales it
            raise NsysqlError(f"scale {spec!r}: the critical path's {target} items are scaled as "
                              f"'{PATH_KINDS[target]}:{pattern}={factor}'")
        raise NsysqlError(f"scale {spec!r}: unknown target {target!r}; use one of {', '.join(TARGETS)}")
    try:
        value = float(factor)
    except ValueError:
        raise NsysqlError(f"scale {spec!r}: the factor {factor!r} is not a number") from None
    if not value >= 0 or value == float("inf"):
        raise NsysqlError(f"scale {spec!r}: the factor must be a finite number of 0 or more")
    return Scale(target, pattern, value)


def _texts(g: Graph, n: int, target: str) -> tuple[str | None, ...]:
    """The names node `n` answers to under `target` (none: the target never scales it)."""
    kind = g.kind[n]
    if kind == OP:
        cls = g.op_class[n]
        if target == "kernel" and cls == "kernel" or target == "copy" and cls == "copy":
            return (g.name[n],)
        if target == "layer":
            return (g.layer[n],)
        if target in ("comm", "wait") and cls == COMM:
            return g.operation.get(n), g.name[n]
        return ()
    if target == "range":
        return g.stack[n]
    if target == "cpu":
        if g.stack[n]:
            return (g.stack[n][-1],)
        return (g.outside.get(g.owners()[n], NO_RANGE),)
    if target == "api" and kind == CALL or target == "sync" and kind == CALL and n in g.waited:
        return (g.name[n],)
    return ()


def matches(g: Graph, scales: list[Scale]) -> list[list[int]]:
    """Per scale, the nodes it scales, in node order."""
    hits: list[list[int]] = [[] for _ in scales]
    if not scales:
        return hits
    owners = g.owners() if any(sc.threads is not None for sc in scales) else []
    for n in range(len(g)):
        for i, sc in enumerate(scales):
            if any(sc.matches(t) for t in _texts(g, n, sc.target)) \
                    and (sc.threads is None or owners[n] >= 0 and owners[n] & 0xFFFFFF in sc.threads):
                hits[i].append(n)
    return hits


def _factors(g: Graph, scales: list[Scale],
             hits: list[list[int]] | None = None) -> tuple[list[float], dict[int, float], dict[int, float]]:
    """Per node its duration factor; per waiting call its wait factor (sync); per comm op its wait factor (wait)."""
    f = [1.0] * len(g)
    sync: dict[int, float] = {}
    wait: dict[int, float] = {}
    for sc, nodes in zip(scales, matches(g, scales) if hits is None else hits):
        for n in nodes:
            if sc.target == "sync":
                sync[n] = sync.get(n, 1.0) * sc.factor
            elif sc.target == "wait":
                wait[n] = wait.get(n, 1.0) * sc.factor
            else:
                f[n] *= sc.factor
    return f, sync, wait


class Replay:
    """New start and end of every node under `scales`; nodes ending before `frozen_before` keep their times."""

    def __init__(self, g: Graph, scales: list[Scale], frozen_before: int | None = None,
                 hits: list[list[int]] | None = None):
        self.g = g
        self.f, self.sync, self.wait = _factors(g, scales, hits)
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


def matched_per_step(g: Graph, scales: list[Scale], hits: list[list[int]],
                     windows: list[tuple[int, int, int]]) -> list[list[tuple[int, int]]]:
    """Per step window (pid, start, end on the graph's clock), per scale: (items, ns), the items it matched in the
    step and the time they hold in it that the factor applies to (a waiting call's wait for `sync`, a collective's
    wait for `wait`, its transfer for `comm`; none of a blocking OS wait that ends when another thread wakes it).
    An item is a node that begins in the step; for `range` and `cpu` it is a span, consecutive matched pieces, calls
    and waits of one thread (one range instance), counted in every step it overlaps."""
    by_pid: dict[int, list[tuple[int, int, int]]] = {}
    for i, (pid, lo, hi) in enumerate(windows):
        by_pid.setdefault(pid, []).append((lo, hi, i))
    for ws in by_pid.values():
        ws.sort()
    starts = {pid: [w[0] for w in ws] for pid, ws in by_pid.items()}
    out = [[(0, 0) for _ in scales] for _ in windows]
    pre = _pre_wait(g) if any(sc.target == "sync" for sc in scales) else {}

    def overlapping(pid: int, a: int, b: int):
        own = by_pid.get(pid, [])
        j = max(bisect.bisect_right(starts.get(pid, []), a) - 1, 0)
        while j < len(own) and own[j][0] <= b:
            yield own[j]
            j += 1

    for k, (sc, nodes) in enumerate(zip(scales, hits)):
        counts: dict[int, list[int]] = {}
        for n in nodes:
            a, b = _scaled_part(g, n, sc.target, pre)
            for lo, hi, i in overlapping(g.pid[n], min(a, g.start[n]), max(b, g.start[n])):
                got = counts.setdefault(i, [0, 0])
                got[1] += max(0, min(b, hi) - max(a, lo))
                if sc.target not in ("range", "cpu") and lo <= g.start[n] < hi:
                    got[0] += 1
        if sc.target in ("range", "cpu"):
            for pid, lo_span, hi_span in _spans(g, nodes):
                for lo, hi, i in overlapping(pid, lo_span, hi_span):
                    if min(hi, hi_span) > max(lo, lo_span) or lo <= lo_span < hi:
                        counts.setdefault(i, [0, 0])[0] += 1
        for i, (items, ns) in counts.items():
            out[i][k] = (items, ns)
    return out


def _spans(g: Graph, nodes: list[int]) -> list[tuple[int, int, int]]:
    """(pid, start, end) of each run of consecutive nodes of one thread among `nodes` (in node order)."""
    hit = set(nodes)
    runs: dict[int, list[int]] = {}  # the first node of a run -> [start, end]
    head: dict[int, int] = {}
    for n in nodes:
        p = g.prev[n]
        first = head[p] if p in hit and p in head else n
        head[n] = first
        run = runs.setdefault(first, [g.start[n], g.end[n]])
        run[1] = max(run[1], g.end[n])
    return [(g.pid[first], a, b) for first, (a, b) in runs.items()]


def _scaled_part(g: Graph, n: int, target: str, pre: dict[str, int]) -> tuple[int, int]:
    """The interval of node `n` that a scale of `target` applies to."""
    s, e = g.start[n], g.end[n]
    if g.kind[n] == OS_WAIT and n in g.waker:  # it ends when its waker does: no factor shortens it
        return s, s
    if target == "sync":
        return min(s + pre.get(g.name[n], 0), e), e
    if target in ("wait", "comm") and n in g.collective:
        last = min(max(g.collective[n][0], s), e)
        return (s, last) if target == "wait" else (last, e)
    return s, e


def check_matched(g: Graph, scales: list[Scale], hits: list[list[int]], where: str) -> None:
    """An error naming the closest targets for the first scale that matches nothing in the graph."""
    for sc, nodes in zip(scales, hits):
        if not nodes:
            near = closest(g, sc)
            hint = f"; closest: {', '.join(near)}" if near else ""
            raise NsysqlError(f"scale '{sc}' matches nothing in {where}{hint}")


def vocabulary(g: Graph, target: str) -> dict[str, set[str]]:
    """The names the graph's nodes answer to, per target: every range name (`range:`), the names outside every
    range (`cpu:thread NAME`), kernel names, and those of `target` itself."""
    wanted = {"range", "kernel", "cpu", target}
    names: dict[str, set[str]] = {t: set() for t in wanted}
    for n in range(len(g)):
        for t in wanted:
            for text in _texts(g, n, t):
                if text is not None and (t != "cpu" or target == "cpu" or not g.stack[n]):
                    names[t].add(text)
    return names


def closest(g: Graph, sc: Scale, count: int = 3) -> list[str]:
    """The `count` targets whose names are most like the scale's pattern (difflib's ratio, its glob characters left
    out, case ignored; a name holding the pattern ranks first), the scale's own target first among equals; each
    written as it would be given (a long name cut to a glob)."""
    import difflib
    query = re.sub(r"[*?\[\]]", "", sc.pattern).lower()
    if not query:
        return []
    scored = []
    for target, names in vocabulary(g, sc.target).items():
        for name in names:
            low = name.lower()
            score = difflib.SequenceMatcher(None, query, low).ratio()
            if query in low:
                score = max(score, 0.6 + 0.4 * len(query) / len(low))
            if score > 0:
                scored.append((-(score + (0.05 if target == sc.target else 0)), target, name))
    out: list[str] = []
    glob = f"*{sc.pattern}*"
    if not re.search(r"[*?\[]", sc.pattern) and sum(fnmatch.fnmatchcase(name, glob)
                                                   for name in vocabulary(g, sc.target)[sc.target]) > 1:
        out.append(f"'{sc.target}:{glob}'")  # the pattern is part of several names: the glob that holds them
    for _, target, name in sorted(scored):
        shown = name if len(name) <= 40 else re.sub(r"[*?\[]", "?", name[:39]) + "*"
        text = f"'{target}:{shown}'"
        if text not in out:
            out.append(text)
        if len(out) == count:
            break
    return out


def step_times(ex, scales: list[Scale], step: int | None = None, pid: int | None = None,
               budget: int | None = None, check: bool = False, matched: bool = False) -> pl.DataFrame:
    """step, [pid], measured_ns, predicted_ns for each step to walk (the analysed ones, or `step`; a sample of the
    last analysed steps with `budget`, see critical_path.steps). `check`: a scale that matches nothing is an error
    naming the closest targets; `matched`: a `matched` column, per step the list of each scale's items and ns
    (matched_per_step)."""
    from nsysql.answers.critical_path_kept import kept

    def compute() -> pl.DataFrame:
        steps, g = critical_path.planned(ex, step, pid, budget)
        hits = matches(g, scales)
        if check:
            check_matched(g, scales, hits, f"step {step} of this export" if step is not None else "this export")
        first = int(steps["start_ns"].min()) if steps.height else None  # type: ignore[arg-type]
        with progress.stage("what_if.replay (Python)"):
            r = Replay(g, scales, frozen_before=first, hits=hits)
            rows = [dict(row, shift=0, part=None) for row in steps.iter_rows(named=True)]
            return critical_path.pid_if_several(_predicted(g, r, rows, scales, hits, matched), ex)
    # kept with the export's answers (a scale that matched nothing raised: nothing kept, checked again next time)
    return kept(ex, "what_if", {"scales": [_key(sc) for sc in scales], "step": step, "pid": pid, "budget": budget,
                                "matched": matched, "check": check}, compute)


def _key(sc: Scale) -> list:
    """A scale as a kept answer's key: all of it, in a stable order."""
    return [sc.target, sc.pattern, sc.factor, sorted(sc.names) if sc.names is not None else None,
            sorted(sc.threads) if sc.threads is not None else None]


def job_step_times(exports: list, labels: list[str], scales: list[Scale], step: int | None = None,
                   pid: int | None = None, budget: int | None = None, check: bool = False,
                   matched: bool = False) -> pl.DataFrame:
    """step_times of a job's exports (one per rank) replayed together on the merged graph (nsysql/answers/
    critical_path_job.py): a change on one rank reaches the others through their collectives. An `export` column
    first."""
    from nsysql.answers import critical_path_job
    todo, windows = critical_path_job.plan(exports, step, pid, budget)
    g, offsets = critical_path_job.graph(exports, windows)
    hits = matches(g, scales)
    if check:
        check_matched(g, scales, hits, f"step {step} of these exports" if step is not None else "these exports")
    shifts = [critical_path_job.shift(ex) for ex in exports]
    starts = [int(t["start_ns"].min()) + sh for t, sh in zip(todo, shifts) if t.height]  # type: ignore[arg-type]
    r = Replay(g, scales, frozen_before=min(starts) if starts else None, hits=hits)
    rows = [dict(row, shift=sh, part=part) for part, (steps, sh) in enumerate(zip(todo, shifts))
            for row in steps.iter_rows(named=True)]
    df = _predicted(g, r, rows, scales, hits, matched, offsets)
    frames = []
    for part, ex in enumerate(exports):
        own = df.filter(pl.col("_part") == part).drop("_part")
        frames.append(critical_path.pid_if_several(own, ex).with_columns(pl.lit(labels[part]).alias("export")))
    out = pl.concat(frames, how="diagonal_relaxed")
    return out.select("export", *[c for c in out.columns if c != "export"])


MATCHED = pl.List(pl.Struct({"scale": pl.Utf8, "items": pl.Int64, "ns": pl.Int64}))


def _predicted(g: Graph, r: Replay, rows: list[dict], scales: list[Scale], hits: list[list[int]], matched: bool,
               offsets: list[int] | None = None) -> pl.DataFrame:
    """The frame of step_times from the step rows (each with its clock `shift` and, in a job's merged graph, its
    export's `part`): step, pid, measured_ns, predicted_ns[, matched][, _part]."""
    from nsysql.answers import critical_path_job
    spans = []
    ops_of: dict[int | None, list[int] | None] = {}
    for row in rows:
        lo, hi, part = row["start_ns"] + row["shift"], row["end_ns"] + row["shift"], row["part"]
        if row["global_tid"] is None:  # a step with no thread ends on its own GPU
            if part not in ops_of:
                ops_of[part] = critical_path_job.ops_of(g, offsets, part) if offsets is not None else None
            spans.append(_gpu_span(g, r, lo, hi, ops_of[part]))
        else:
            tid = thread_key(part, row["global_tid"]) if part is not None else row["global_tid"]
            spans.append((r.point(tid, lo), r.point(tid, hi)))
    if all(sc.factor <= 1 for sc in scales):
        spans = never_slower(rows, spans)
    out = {"step": [row["step"] for row in rows], "pid": [row["pid"] for row in rows],
           "measured_ns": [row["wall_ns"] for row in rows], "predicted_ns": [b - a for a, b in spans]}
    schema: dict = {"step": pl.Int64, "pid": pl.Int64, "measured_ns": pl.Int64, "predicted_ns": pl.Int64}
    if matched:
        windows = [(row["pid"], row["start_ns"] + row["shift"], row["end_ns"] + row["shift"]) for row in rows]
        per_step = matched_per_step(g, scales, hits, windows)
        out["matched"] = [[{"scale": str(sc), "items": items, "ns": ns} for sc, (items, ns) in zip(scales, got)]
                          for got in per_step]
        schema["matched"] = MATCHED
    if offsets is not None:
        out["_part"] = [row["part"] for row in rows]
        schema["_part"] = pl.Int64
    return pl.DataFrame(out, schema=schema)


def never_slower(rows: list[dict], spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The replayed (start, end) of each step row, its boundaries taken as late as the steps after it allow, so that
    with work only removed or shrunk no step (nor the time between two steps) comes out longer than measured.

    The replay moves no node later than measured (factors of at most 1), but a step's start can move earlier by
    more than its end: the step before it saved time that this step then spends waiting for work whose time did
    not change (a late rank's collective, the GPU's queue). That saving is not kept: the time the job needs still
    ends where it did. So, per thread (or GPU) of steps in time order, walking back from the last boundary, each
    boundary is moved to the latest of its replayed time and the next boundary less the measured interval between
    them: the saving counts for the step whose end keeps it, and the span from the first step's start to the last
    step's end is the replay's."""
    out = list(spans)
    seqs: dict[tuple, list[int]] = {}
    for i, row in enumerate(rows):
        key = (row["part"], row["global_tid"]) if row["global_tid"] is not None else (row["part"], None, row["pid"])
        seqs.setdefault(key, []).append(i)
    for idx in seqs.values():
        idx.sort(key=lambda i: rows[i]["start_ns"])
        measured = [t for i in idx for t in (rows[i]["start_ns"], rows[i]["end_ns"])]
        if any(b < a for a, b in zip(measured, measured[1:])):  # steps that overlap: no order to keep
            continue
        moved = [t for i in idx for t in out[i]]
        for k in range(len(moved) - 2, -1, -1):
            moved[k] = max(moved[k], moved[k + 1] - (measured[k + 1] - measured[k]))
        for j, i in enumerate(idx):
            out[i] = (moved[2 * j], moved[2 * j + 1])
    return out


def _gpu_span(g: Graph, r: Replay, start: int, end: int, ops=None) -> tuple[int, int]:
    ops = [n for n in (g.op_class if ops is None else ops) if g.start[n] >= start and g.end[n] <= end]
    if not ops:
        return start, end
    return min(r.start(n) for n in ops), max(r.end(n) for n in ops)


GAINS_VERSION = 3  # raise when predicted_gains or the model changes: gains kept with an export's answers are keyed by it
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
    "recompute": None,
}
# rules whose cause is one thread's own work (its launches, its waits, its data loading): their scales apply to the
# threads the finding names only (`thread NAME (TID)` in its `where`; a job's finding: the threads of every rank it
# fired on). GPU idle is every thread's CPU work, by design: whatever the GPU waited for.
PER_THREAD = ("launch_bound", "sync_in_step", "pageable_copy", "dataloader_wait")
_THREADS = re.compile(r"\bthreads? ")
_LABEL = re.compile(r"^.* \((\d+)\)$")


def cause_threads(rule: str, where: str | None) -> list[int]:
    """The OS thread ids whose work a finding of `rule` is about (PER_THREAD; [] for the others): those its
    `where` names, as the rules write them (`thread python3 (583)`, `threads pt_autograd_0 (2001), python3
    (1970)`: macros.thread_label, macros.thread_list)."""
    if rule not in PER_THREAD or not where:
        return []
    found: set[int] = set()
    for m in _THREADS.finditer(where):
        for part in where[m.end():].split(", "):
            label = _LABEL.match(part)
            if not label:
                break
            found.add(int(label.group(1)))
    return sorted(found)


def predicted_gains(ex, findings: pl.DataFrame, speedup: float | None = None,
                    budget: int | None = critical_path.GAINS_BUDGET) -> list[int | None]:
    """Per finding row, the analysed steps' time the replay saves with the finding's cause removed: per step the
    job's time (its slowest process) measured minus predicted, summed, never below 0; None where no replay models
    the cause. The straggler's cause is the late rank's extra work: with no rank waiting for another, the job's
    step would take what its fastest rank takes (the ranks doing alike work). A per-thread cause (PER_THREAD) is
    removed on the finding's threads only (its `_threads` column, else those its `where` names). On a long capture
    (`budget`, see critical_path.steps) the replay runs over the last analysed steps and the gain is scaled to all
    of them by their wall time."""
    return _gains([ex], findings, speedup, budget, lambda scales: step_times(ex, scales, budget=budget))


def job_predicted_gains(exports: list, labels: list[str], findings: pl.DataFrame, speedup: float | None = None,
                        budget: int | None = critical_path.GAINS_BUDGET) -> list[int | None]:
    """predicted_gains of a job's findings, its ranks replayed together (job_step_times), each cause removed on
    every rank it fired on."""
    return _gains(exports, findings, speedup, budget,
                  lambda scales: job_step_times(exports, labels, scales, budget=budget))


def _gains(exports: list, findings: pl.DataFrame, speedup: float | None, budget: int | None,
           replay) -> list[int | None]:
    everything = sum(int(critical_path.steps(ex)["wall_ns"].sum()) for ex in exports)
    sample = sum(int(critical_path.steps(ex, budget=budget)["wall_ns"].sum()) for ex in exports)
    scale_up = everything / max(sample, 1)
    replayed: dict[tuple, int | None] = {}  # one replay per distinct cause: findings share one only when equal
    out: list[int | None] = []
    for row, scales in zip(findings.iter_rows(named=True), finding_scales(exports, findings, speedup)):
        if not scales:
            out.append(None)
            continue
        key = (row["rule"] == "straggler", *scales)
        if key not in replayed:
            replayed[key] = saved_ns(replay(scales), fastest=row["rule"] == "straggler")
        gain = replayed[key]
        out.append(round(gain * scale_up) if gain is not None else None)
    return out


def finding_scales(exports: list, findings: pl.DataFrame, speedup: float | None) -> list[list[Scale] | None]:
    """Per finding row, what the replay removes to predict its gain (_finding_scales), a per-thread cause on its
    threads only."""
    threads = findings["_threads"].to_list() if "_threads" in findings.columns else \
        [cause_threads(rule, where) for rule, where in zip(findings["rule"], findings["where"])]
    out: list[list[Scale] | None] = []
    for rule, tids in zip(findings["rule"], threads):
        scales = _finding_scales(exports, rule, speedup)
        if scales and rule in PER_THREAD and tids:
            scales = [replace(sc, threads=frozenset(tids)) for sc in scales]
        out.append(scales)
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
