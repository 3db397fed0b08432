"""The findings' recoverable-time bounds recomputed plainly from the raw rows (sqlite3 and Python loops).

Written from the formulas in the headers of queries/findings/*.sql and analysis.steady_steps; it shares no code
or SQL with nsysql (only tests/plainwalk.py's brute-force reading of the export). Interval unions by sorting,
intersections by walking two sorted lists.
"""
from __future__ import annotations

import math
import re
import statistics
from collections import defaultdict

from plainwalk import Plain, PlainAttribution, PlainTimeline, merge, plain_steps, read_export, short_api
from plainwalk_overview import tensor_core_class


def clip(intervals, start, end):
    return [(max(s, start), min(e, end)) for s, e in intervals if s < end and e > start and min(e, end) > max(s, start)]


def length(merged) -> int:
    return sum(e - s for s, e in merged)


def intersection(a, b) -> int:
    """|A ∩ B| for two merged (sorted, disjoint) interval lists."""
    i = j = total = 0
    while i < len(a) and j < len(b):
        s, e = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if e > s:
            total += e - s
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def idle_within(busy, intervals) -> int:
    """|union(intervals) - busy|: the time inside `intervals` with nothing of `busy` running."""
    m = merge(intervals)
    return length(m) - intersection(m, busy)


SYNC_API = re.compile(r"^cu(da)?(Device|Stream|Event|Ctx|Thread)Synchronize")
GEMM = re.compile(r"gemm|xmma|cutlass|convolve|conv([^e]|$)|winograd|fft2d|fprop|dgrad|wgrad", re.I)
NOT_GEMM = re.compile(r"gemv|splitkreduce", re.I)  # matrix-vector products, cuBLASLt's split-K reduction
FP32 = re.compile(r"f32f32|sgemm|ffma|float|_s1688|fp32", re.I)
NOT_FP32 = re.compile(r"bf16|bfloat16|f16|fp16|half|tf32|double|dgemm|int8|i8", re.I)
DATA_LOADING = re.compile(r"dataloader|data[ _-]?load|load[ _-]?(batch|data)|(next|get|fetch)[ _-]?batch|^data$|^batch$"
                          r"|input[ _-]?pipeline", re.I)
WARMUP = re.compile(r"warm[ _-]?up", re.I)


def is_fp32_gemm(name: str) -> bool:
    cuda_cores = tensor_core_class(name) == "no"  # TF32, nvjet and unknown-precision GEMMs are not fp32 GEMMs
    return (bool(GEMM.search(name)) and not NOT_GEMM.search(name) and cuda_cores and bool(FP32.search(name))
            and not NOT_FP32.search(name))


class PlainFindings:
    def __init__(self, path):
        self.path = path
        self.pa = PlainAttribution(path)
        self.tl = PlainTimeline(path)
        db, _, strings = read_export(path)
        last = db.execute("SELECT MAX(MAX(start, COALESCE(end, start))) FROM NVTX_EVENTS "
                          "WHERE eventType IN (59, 60, 70, 71)").fetchone()[0]
        self.nvtx = []  # every range, markers included: (gtid, text, start, end)
        for s, e, gtid, text, text_id in db.execute(
                "SELECT start, end, globalTid, text, textId FROM NVTX_EVENTS "
                "WHERE eventType IN (59, 60, 70, 71) AND endGlobalTid IS NULL"):
            self.nvtx.append((gtid, (text if text is not None else strings.get(text_id)) or "", s,
                              e if e is not None else last))
        self.windows = self._windows()
        self.pids = {w["pid"] for w in self.windows}
        # busy: the devices a process ran GPU work on, busy while any op of any process runs there
        devices = defaultdict(set)
        for o in self.tl.ops:
            devices[o["pid"]].add(o["device"])
        self.busy = {pid: merge([(o["start"], o["end"]) for o in self.tl.ops if o["device"] in devices[pid]])
                     for pid in self.pids}

    # -- the analysed steps (analysis.steady_steps) ---------------------------------------------------------
    def _windows(self):
        steps = plain_steps(self.pa)  # each process numbers its own steps: (pid, step) names one
        for s in steps:
            s["tid"] = s["gtid"] & 0xFFFFFF
        warm = [r for r in self.pa.ranges if r["user"] and WARMUP.search(r["text"])]
        in_warm = {(s["pid"], s["step"]): any(w["pid"] == s["pid"] and w["start"] <= s["start"] < w["end"]
                                              for w in warm) for s in steps}
        all_warm = bool(steps) and all(in_warm.values())
        slow_leading = set()
        by_pid = defaultdict(list)
        for s in steps:
            by_pid[s["pid"]].append(s)
        for rows in by_pid.values():
            for k, s in enumerate(rows):
                later = [r["end"] - r["start"] for r in rows[k + 1:]]
                if later and s["end"] - s["start"] > 1.5 * statistics.median(later):
                    slow_leading.add((s["pid"], s["step"]))
                else:
                    break
        return [s for s in steps if not (in_warm[(s["pid"], s["step"])] and not all_warm)
                and (s["pid"], s["step"]) not in slow_leading]

    def window_of(self, pid, t):
        """The analysed step of process pid in which time t falls (start <= t < end), or None."""
        for w in self.windows:
            if w["pid"] == pid and w["start"] <= t < w["end"]:
                return w
        return None

    def wall(self, pid) -> int:
        return sum(w["end"] - w["start"] for w in self.windows if w["pid"] == pid)

    def steps(self, pid) -> int:
        return sum(1 for w in self.windows if w["pid"] == pid)

    # -- the rules' bounds, per process (or thread / stream / device) -------------------------------------------
    def gpu_idle_in_step(self):
        return {pid: sum(idle_within(self.busy[pid], [(w["start"], w["end"])])
                         for w in self.windows if w["pid"] == pid) for pid in self.pids}

    def sync_in_step(self):
        blocking = {}
        for call in self.tl.calls.values():
            if call["pid"] in self.pids and SYNC_API.match(short_api(call["name"])):
                blocking[id(call)] = call
        for o in self.tl.ops:
            if o["kind"] in ("memcpy", "memset") and o["pid"] in self.pids and self.tl.is_sync(o):
                blocking[id(o["call"])] = o["call"]
        per_step = defaultdict(list)
        for c in blocking.values():
            w = self.window_of(c["pid"], c["start"])
            if w is None:
                continue
            busy = self.busy[c["pid"]]
            if any(s <= c["end"] < e for s, e in busy):
                resume = c["end"]
            else:
                resume = min((s for s, _ in busy if s > c["end"]), default=w["end"])
            per_step[(c["pid"], w["step"])].append((c["start"], max(min(resume, w["end"]), c["start"])))
        out = defaultdict(int)
        for (pid, _), intervals in per_step.items():
            out[pid] += idle_within(self.busy[pid], intervals)
        return dict(out)

    def pageable_copy(self):
        out = {}
        for pid in self.pids:
            pieces = []
            for o in self.tl.ops:
                if o["kind"] == "memcpy" and o["pid"] == pid and "Pageable" in (o["src"], o["dst"]):
                    for w in self.windows:
                        if w["pid"] == pid:
                            pieces += clip([(o["start"], o["end"])], w["start"], w["end"])
            if pieces:
                out[pid] = length(merge(pieces))
        return out

    def fp32_gemm(self, speedup=8):
        """{pid: (fp32 GEMM union, GPU busy time, recoverable)} inside the analysed steps."""
        out = {}
        for pid in self.pids:
            steps = [(w["start"], w["end"]) for w in self.windows if w["pid"] == pid]
            gemm = [p for o in self.tl.ops if o["pid"] == pid and o["kind"] == "kernel" and is_fp32_gemm(o["name"])
                    for s, e in steps for p in clip([(o["start"], o["end"])], s, e)]
            g = length(merge(gemm))
            out[pid] = (g, intersection(self.busy[pid], merge(steps)), g * (speedup - 1) // speedup)
        return out

    def launched(self):
        """Ops with a launching call that starts in an analysed step: (op, call, window)."""
        for o in self.tl.ops:
            c = o["call"]
            if c is not None and c["pid"] in self.pids:
                w = self.window_of(c["pid"], c["start"])
                if w is not None:
                    yield o, c, w

    def launch_bound(self, min_launches_per_step=20, min_short_pct=50, max_gap_ns=1_000_000, min_pct=1):
        """{(pid, tid): waited ns} for the launch-bound threads."""
        launches, kernels, short = defaultdict(int), defaultdict(int), defaultdict(int)
        for o, c, _ in self.launched():
            key = (c["pid"], c["tid"])
            launches[key] += 1
            if o["kind"] == "kernel":
                kernels[key] += 1
                short[key] += (o["end"] - o["start"]) < (c["end"] - c["start"])
        kind_order = {"kernel": 0, "memcpy": 1, "memset": 2, "graph": 3}
        waited = defaultdict(int)
        for pid in self.pids:
            busy = self.busy[pid]
            for (_, gap_start), (gap_end, _) in zip(busy, busy[1:]):
                if gap_end - gap_start > max_gap_ns:
                    continue
                enders = [o for o in self.tl.ops if o["pid"] == pid and o["start"] == gap_end]
                enders.sort(key=lambda o: (o["call"] is None, kind_order[o["kind"]]))
                c = enders[0]["call"]
                if c is None or c["end"] <= gap_start:
                    continue
                w = self.window_of(pid, c["start"])
                if w is None:
                    continue
                wait = min(gap_end, w["end"]) - max(gap_start, w["start"])
                if wait > 0:
                    waited[(pid, c["tid"])] += wait
        return {key: ns for key, ns in waited.items()
                if launches[key] >= min_launches_per_step * self.steps(key[0]) and kernels[key]
                and 100 * short[key] >= min_short_pct * kernels[key] and 100 * ns >= min_pct * self.wall(key[0])}

    def short_kernels(self, min_run=8, max_gap_ns=1_000_000, min_pct=1):
        """{(pid, device, stream): idle ns between the short kernels of long runs}."""
        streams = defaultdict(list)
        for o, c, w in self.launched():
            if o["kind"] == "kernel":
                streams[(c["pid"], o["device"], o["stream"], w["step"])].append(
                    (o["start"], o["end"], (o["end"] - o["start"]) < (c["end"] - c["start"])))
        out = defaultdict(int)
        for (pid, dev, stream, _), ks in streams.items():
            ks.sort()
            run = []
            for k in ks + [(None, None, False)]:
                if k[2]:
                    run.append(k)
                    continue
                if len(run) >= min_run:
                    between = [(a[1], b[0]) for a, b in zip(run, run[1:]) if 0 < b[0] - a[1] <= max_gap_ns]
                    out[(pid, dev, stream)] += sum(idle_within(self.busy[pid], [g]) for g in between)
                run = []
        return {key: ns for key, ns in out.items() if ns > 0 and 100 * ns >= min_pct * self.wall(key[0])}

    def dataloader_wait(self):
        out = {}
        for pid in self.pids:
            total = 0
            for w in (w for w in self.windows if w["pid"] == pid):
                pieces = [p for gtid, text, s, e in self.nvtx
                          if gtid == w["gtid"] and DATA_LOADING.search(text)
                          for p in clip([(s, e)], w["start"], w["end"])]
                total += idle_within(self.busy[pid], pieces) if pieces else 0
            out[pid] = total
        return out

    def outlier_step(self, factor=1.5, min_steps=3):
        """{pid: floor(sum(wall - median) over the outliers)}."""
        out = {}
        for pid in self.pids:
            walls = [w["end"] - w["start"] for w in self.windows if w["pid"] == pid]
            if len(walls) < min_steps:
                continue
            median = statistics.median(walls)
            excess = sum(x - median for x in walls if x > factor * median)
            if excess > 0:
                out[pid] = math.floor(excess)
        return out

    def exposed_comm(self, min_exposed_pct=30, min_ns_per_step=10_000):
        """{(pid, device): |communication - compute| inside the analysed steps}, where the rule fires."""
        plain = Plain(self.path)
        nccl_calls = {(c[2], c[0], c[1]) for c in plain.runtime.values()
                      if any(r[1].startswith("NCCL:") for r in plain.enclosing(c))}

        def is_comm(o):
            c = o["call"]
            return ("nccl" in o["name"].lower() or "::oneRankReduce<" in o["name"]
                    or (c is not None and (c["gtid"], c["start"], c["end"]) in nccl_calls))

        kernels = [(o, is_comm(o)) for o in self.tl.ops if o["kind"] == "kernel"]
        comm_ns, exposed = defaultdict(int), defaultdict(int)
        for dev in {o["device"] for o, _ in kernels}:
            compute = merge([(o["start"], o["end"]) for o, comm in kernels if o["device"] == dev and not comm])
            for w in self.windows:
                pieces = [p for o, comm in kernels if comm and o["device"] == dev and o["pid"] == w["pid"]
                          for p in clip([(o["start"], o["end"])], w["start"], w["end"])]
                if pieces:
                    comm_ns[(w["pid"], dev)] += length(merge(pieces))
                    exposed[(w["pid"], dev)] += idle_within(compute, pieces)
        return {key: ns for key, ns in exposed.items()
                if ns > 0 and 100 * ns >= min_exposed_pct * comm_ns[key] and ns >= min_ns_per_step * self.steps(key[0])}
