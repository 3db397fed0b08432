"""The steady-state overview (steady_steps, step_breakdown, overview_gpus, step_stats, top_*), read plainly.

Like tests/plainwalk.py this shares no SQL or code with nsysql: every figure is recomputed with sqlite3 and
Python loops from the raw rows of the export (kernels, copies, sets, CUDA calls, OS runtime calls, NVTX events,
TARGET_INFO_GPU, CUPTI synchronization records). The only input taken from nsysql is the list of step windows
(analysis.steps, tested against plainwalk in test_steps.py); which of them are analysed is decided here.

Conventions: pid = pid_of(globalTid), tid = globalTid & 0xFFFFFF; correlationId is unique per process
only; intervals are [start, end) in ns.
"""
from __future__ import annotations

import re
import statistics
from bisect import bisect_right
from collections import defaultdict

from plainwalk import (
    BACKWARD,
    EVAL,
    STEP_NAME,
    is_op_marker,
    is_user_range,
    layer_path,
    merge,
    pid_of,
    read_export,
    short_api,
    union_length,
)

WARMUP = re.compile(r"warm[ _-]?up", re.IGNORECASE)  # warmup, warm-up, warm_up, warm up
DATA_NAMES = ("data", "dataloader", "data_loader", "data loading", "data_loading", "load_data", "load_batch",
              "get_batch", "next_batch", "fetch_batch", "batch", "input", "input_pipeline")
DATA_RANGE = re.compile("(" + "|".join(re.escape(n) for n in DATA_NAMES) + r")([ _#-]?[0-9]+)?", re.IGNORECASE)
SYNC_APIS = {"cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "cuCtxSynchronize",
             "cuStreamSynchronize", "cuEventSynchronize", "cudaMemcpy", "cudaMemcpy2D", "cudaMemcpy3D", "cudaMemset",
             "cudaMemset2D", "cudaMemset3D"}
CATEGORIES = ("kernel_ns", "comm_transfer_ns", "comm_wait_ns", "memcpy_ns", "memset_ns", "runtime_ns", "dataloader_ns",
              "cpu_exec_ns", "other_ns")


def is_comm(op) -> bool:
    """An NCCL kernel, by its name (queries/macros/is_nccl_name.sql's rule)."""
    name = op.get("name") or ""
    return op["kind"] == "kernel" and ("nccl" in name.lower() or "::oneRankReduce<" in name)


def mark_waits(comm: list[dict]) -> None:
    """Give each NCCL kernel of a matched collective its `wait_end`: NCCL runs a communicator's collectives in the
    same order on every rank, one stream per communicator and GPU, so the k-th kernel on every rank's n-th NCCL
    stream (streams numbered by first use) is one collective; matched when every rank has it, all of one operation.
    The kernel spins until the last rank's kernel starts (L): wait_end = max(start, min(end, L))."""
    ranks = {(k["pid"], k["device"]) for k in comm}
    first: dict = {}
    for k in sorted(comm, key=lambda k: k["start"]):
        first.setdefault((k["pid"], k["device"]), {}).setdefault(k["stream"], k["start"])
    count: dict = defaultdict(int)
    groups = defaultdict(list)
    for k in sorted(comm, key=lambda k: (k["start"], k["id"])):
        rank = (k["pid"], k["device"])
        order = sorted(first[rank], key=lambda st: (first[rank][st], st)).index(k["stream"])
        count[(rank, k["stream"])] += 1
        groups[(order, count[(rank, k["stream"])])].append(k)
    for group in groups.values():
        ops = {re.search(r"nccl(?:Dev)?Kernel_([A-Za-z]+?)(?:_|\(|$)", k["name"]).group(1)
               if re.search(r"nccl(?:Dev)?Kernel_", k["name"]) else k["name"] for k in group}
        if len(ranks) > 1 and len(group) == len(ranks) and len({(k["pid"], k["device"]) for k in group}) == len(group) \
                and len(ops) == 1:
            last = max(k["start"] for k in group)
            for k in group:
                k["wait_end"] = max(k["start"], min(k["end"], last))


def split_tid(gtid):
    return pid_of(gtid), gtid & 0xFFFFFF


class PlainExport:
    """The raw rows the overview is made of, as plain Python lists and dicts."""

    def __init__(self, path):
        db, tables, strings = read_export(path)
        self.thread_name = {}  # (pid, tid) -> name
        if "ThreadNames" in tables:
            for gtid, name_id in db.execute("SELECT globalTid, nameId FROM ThreadNames ORDER BY rowid"):
                self.thread_name.setdefault(split_tid(gtid), strings.get(name_id))
        self.kernels = []
        if "CUPTI_ACTIVITY_KIND_KERNEL" in tables:
            for row in db.execute(
                    "SELECT rowid, start, end, deviceId, globalPid, correlationId, gridX, gridY, gridZ, blockX, "
                    "blockY, blockZ, registersPerThread, staticSharedMemory, dynamicSharedMemory, demangledName, shortName, "
                    "streamId FROM CUPTI_ACTIVITY_KIND_KERNEL"):
                rowid, s, e, dev, gpid, corr, gx, gy, gz, bx, by, bz, regs, smem_s, smem_d, dn, sn, st = row
                self.kernels.append(dict(kind="kernel", id=rowid, start=s, end=e, device=dev, pid=split_tid(gpid)[0],
                                         corr=corr, blocks=gx * gy * gz, threads=bx * by * bz, regs=regs or 0,
                                         smem=(smem_s or 0) + (smem_d or 0), name=strings.get(dn),
                                         short=strings.get(sn), stream=st))
        mark_waits([k for k in self.kernels if is_comm(k)])
        self.ops = list(self.kernels)  # kernels, copies and sets
        for kind, table in (("memcpy", "CUPTI_ACTIVITY_KIND_MEMCPY"), ("memset", "CUPTI_ACTIVITY_KIND_MEMSET"),
                            ("graph", "CUPTI_ACTIVITY_KIND_GRAPH_TRACE")):  # graph: a whole CUDA graph, no kernel rows
            if table in tables:
                for rowid, s, e, dev, gpid, corr in db.execute(
                        f"SELECT rowid, start, end, deviceId, globalPid, correlationId FROM {table}"):
                    self.ops.append(dict(kind=kind, id=rowid, start=s, end=e, device=dev, pid=split_tid(gpid)[0],
                                         corr=corr))
        self.calls = []  # CUDA runtime/driver calls
        self.call_of = {}  # (pid, correlationId) -> call
        if "CUPTI_ACTIVITY_KIND_RUNTIME" in tables:
            for rowid, s, e, gtid, corr, name_id in db.execute(
                    "SELECT rowid, start, end, globalTid, correlationId, nameId FROM CUPTI_ACTIVITY_KIND_RUNTIME"):
                pid, tid = split_tid(gtid)
                call = dict(id=rowid, start=s, end=e, pid=pid, tid=tid, corr=corr, name=strings.get(name_id))
                self.calls.append(call)
                self.call_of[(pid, corr)] = call
        self.osrt = []  # outermost OS runtime calls (nestingLevel 0), without the zero-length start/finish markers
        if "OSRT_API" in tables:
            for s, e, gtid in db.execute("SELECT start, end, globalTid FROM OSRT_API "
                                         "WHERE nestingLevel = 0 AND eventClass NOT IN (31, 32)"):
                pid, tid = split_tid(gtid)
                self.osrt.append(dict(start=s, end=e, pid=pid, tid=tid))
        # (pid, correlationId) of calls CUPTI recorded a CPU-blocking synchronization for: event, stream or
        # context synchronize (CUPTI_ActivitySynchronizationType 1, 3, 4), not a GPU-side stream wait (2)
        self.synced = set()
        if "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION" in tables:
            blocking = {1, 3, 4}
            if "ENUM_CUPTI_SYNC_TYPE" in tables:
                blocking = {i for i, name in db.execute("SELECT id, name FROM ENUM_CUPTI_SYNC_TYPE")
                            if name.endswith(("_EVENT_SYNCHRONIZE", "_STREAM_SYNCHRONIZE", "_CONTEXT_SYNCHRONIZE"))}
            for gpid, corr, kind in db.execute(
                    "SELECT globalPid, correlationId, syncType FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"):
                if kind in blocking:
                    self.synced.add((split_tid(gpid)[0], corr))
        self.gpus = {}
        if "TARGET_INFO_GPU" in tables:
            cols = ("id", "smCount", "maxWarpsPerSm", "maxBlocksPerSm", "maxRegistersPerSm", "maxShmemPerSm",
                    "threadsPerWarp", "computeMajor")
            for row in db.execute(f"SELECT {', '.join(cols)} FROM TARGET_INFO_GPU"):
                self.gpus.setdefault(row[0], dict(zip(cols, row)))
        self.ranges = []  # NVTX push/pop and start/end ranges
        if "NVTX_EVENTS" in tables:
            last = db.execute("SELECT MAX(MAX(start, COALESCE(end, start))) FROM NVTX_EVENTS "
                              "WHERE eventType IN (59, 60, 70, 71)").fetchone()[0]
            domains = {}
            for gtid, dom, text, text_id in db.execute("SELECT globalTid, domainId, text, textId FROM NVTX_EVENTS "
                                                       "WHERE eventType = 75 ORDER BY start"):
                domains.setdefault((split_tid(gtid)[0], dom), text if text is not None else strings.get(text_id))
            for rowid, s, e, gtid, end_gtid, text, text_id, dom in db.execute(
                    "SELECT rowid, start, end, globalTid, endGlobalTid, text, textId, domainId FROM NVTX_EVENTS "
                    "WHERE eventType IN (59, 60, 70, 71)"):
                pid, tid = split_tid(gtid)
                body = (text if text is not None else strings.get(text_id)) or ""
                self.ranges.append(dict(id=rowid, start=s, end=e if e is not None else last, pid=pid, tid=tid,
                                        text=body, domain=domains.get((pid, dom)) or "",
                                        cross=end_gtid is not None))
        db.close()

    def user_ranges(self):
        return [r for r in self.ranges if is_user_range(r["domain"], r["text"])]


# ---------------------------------------------------------------------------------------------
# analysed windows (steady_steps)
# ---------------------------------------------------------------------------------------------
def plain_steady(steps, user_ranges, ops=(), calls_by_corr=None, requests=()):
    """steps: dicts with step, name, source, pid, tid, start_ns, end_ns (steps of `nsysql steps`); user_ranges:
    dicts with pid, start, end, text; requests: (pid, start, end) of the requests found in the op sequence (their
    decode steps are steps). Returns steady_steps rows worked out by the header's rules, as dicts, in (step, pid)
    order: each process numbers its own steps, (pid, step) names one."""
    warm = [r for r in user_ranges if WARMUP.search(r["text"])]
    in_warm = {(s["pid"], s["step"]): any(r["pid"] == s["pid"] and r["start"] <= s["start_ns"] < r["end"]
                                          for r in warm) for s in steps}
    warm_requests = []  # the leading requests of a process over 1.5 x the median of the ones after them
    for pid in {r[0] for r in requests}:
        mine = sorted(r for r in requests if r[0] == pid)
        for k, (_, start, end) in enumerate(mine):
            later = [e - s for _, s, e in mine[k + 1:]]
            if not later or not end - start > 1.5 * statistics.median(later):
                break
            warm_requests.append((pid, start, end))
    in_warm_request = {(s["pid"], s["step"]) for s in steps for pid, a, b in warm_requests
                       if s["pid"] == pid and a <= s["start_ns"] < b}
    steps = plain_clock(steps, ops, calls_by_corr or {})
    all_warm = bool(steps) and all(in_warm.values())
    slow_leading = set()
    by_pid = defaultdict(list)
    for s in sorted(steps, key=lambda s: s["step"]):
        by_pid[s["pid"]].append(s)
    for group in by_pid.values():
        for k, s in enumerate(group):
            later = [x["window"][1] - x["window"][0] for x in group[k + 1:]]
            if not later or not s["window"][1] - s["window"][0] > 1.5 * statistics.median(later):
                break
            slow_leading.add((s["pid"], s["step"]))
    rows = []
    for s in sorted(steps, key=lambda s: (s["step"], s["pid"])):
        key = (s["pid"], s["step"])
        reason = ("warmup_range" if in_warm[key] and not all_warm
                  else "slow_leading_request" if key in in_warm_request
                  else "slow_leading_step" if key in slow_leading else None)
        start, end = s["window"]
        rows.append(dict(step=s["step"], name=s["name"], source=s["source"], pid=s["pid"], tid=s["tid"],
                         start_ns=start, end_ns=end, wall_ns=end - start, analysed=reason is None,
                         excluded_because=reason, clock=s["clock"], range_wall_ns=s["end_ns"] - s["start_ns"],
                         range_start_ns=s["start_ns"], range_end_ns=s["end_ns"]))
    if not steps and ops:
        launched = defaultdict(int)
        for o in ops:
            call = calls_by_corr.get((o["pid"], o["corr"])) if calls_by_corr else None
            if call is not None:
                launched[(call["pid"], call["tid"])] += 1
        if launched:
            pid, tid = min(launched, key=lambda k: (-launched[k], k))
            start, end = min(o["start"] for o in ops), max(o["end"] for o in ops)
            rows.append(dict(step=0, name="GPU activity", source="gpu_span", pid=pid, tid=tid, start_ns=start,
                             end_ns=end, wall_ns=end - start, analysed=True, excluded_because=None, clock="range",
                             range_wall_ns=end - start, range_start_ns=start, range_end_ns=end))
    return rows


def plain_clock(steps, ops, calls_by_corr):
    """Each step with its `window` and `clock` by steady_steps' rule, worked out from the raw ops: an op belongs to
    the latest step of its process that began at or before its launching call, if the call ended inside it; a
    process runs ahead when its median step's GPU work ends more than its median wall after the range, and
    then each step's window runs from when the GPU had finished every op launched before the step began (or the
    step's start, if later) to the end of its own ops or its range, whichever is later."""
    launched = []  # (pid, call start, call end, op end)
    for o in ops:
        call = calls_by_corr.get((o["pid"], o["corr"]))
        if call is not None:
            launched.append((call["pid"], call["start"], call["end"], o["end"]))
    by_pid = defaultdict(list)
    for s in steps:
        by_pid[s["pid"]].append(s)
    out = []
    for pid, group in by_pid.items():
        group = sorted(group, key=lambda s: s["step"])
        mine = [x for x in launched if x[0] == pid]
        gpu_end = {}
        for _, c_start, c_end, o_end in mine:
            owner = None
            for s in group:
                if s["start_ns"] <= c_start:
                    owner = s
            if owner is not None and c_end <= owner["end_ns"]:
                gpu_end[owner["step"]] = max(gpu_end.get(owner["step"], o_end), o_end)
        leads = [gpu_end.get(s["step"], s["end_ns"]) - s["end_ns"] for s in group]
        walls = [s["end_ns"] - s["start_ns"] for s in group]
        ahead = statistics.median(leads) > statistics.median(walls)
        for s in group:
            if ahead:
                done = max((o_end for _, c_start, _, o_end in mine if c_start < s["start_ns"]), default=s["start_ns"])
                end = max(s["end_ns"], gpu_end.get(s["step"], s["end_ns"]))
                window = (max(s["start_ns"], done), end)
            else:
                window = (s["start_ns"], s["end_ns"])
            out.append({**s, "window": window, "clock": "period" if ahead else "range"})
    return out


def plain_step_stats(windows):
    """Steps are numbered per process: (pid, step) names one; an outlier is judged against its own process's
    median (3 or more analysed steps)."""
    walls = {(w["pid"], w["step"]): w["wall_ns"] for w in windows if w["analysed"]}
    n = len(walls)
    median = statistics.median(walls.values()) if n else None
    per_pid = defaultdict(list)
    for (pid, _), wall in walls.items():
        per_pid[pid].append(wall)
    outliers = sorted((pid, s) for (pid, s), w in walls.items()
                      if len(per_pid[pid]) >= 3 and w > 1.5 * statistics.median(per_pid[pid]))
    return dict(analysed_steps=n, excluded_steps=sum(1 for w in windows if not w["analysed"]),
                processes=len(per_pid), first_step=min(s for _, s in walls) if n else None,
                last_step=max(s for _, s in walls) if n else None,
                total_ns=sum(walls.values()) if n else None, mean_ns=sum(walls.values()) / n if n else None,
                median_ns=median, max_ns=max(walls.values()) if n else None,
                outlier_steps=[s for _, s in outliers], outlier_pids=[pid for pid, _ in outliers])


# ---------------------------------------------------------------------------------------------
# step time breakdown
# ---------------------------------------------------------------------------------------------
def is_data_range(text: str) -> bool:
    return text.lower().startswith("enumerate(dataloader)") or DATA_RANGE.fullmatch(text) is not None


def covers(islands, a, b) -> bool:
    """Whether the merged, sorted islands cover the elementary segment [a, b)."""
    i = bisect_right(islands, [a, float("inf")]) - 1
    return i >= 0 and islands[i][0] <= a and islands[i][1] >= b


def plain_breakdown(win, ops, calls, ranges, osrt):
    """One analysed step's nine categories (ns). win: dict pid, tid, start_ns, end_ns; ops: dicts kind, pid, start,
    end (NCCL kernels: name, and wait_end where another rank was waited for: [start, wait_end) waits, the rest is
    transfer); calls: dicts pid, tid, start, end; ranges: dicts pid, tid, start, end, text, cross; osrt: outermost OS
    runtime calls, dicts pid, tid, start, end. Elementary segments between all boundaries inside the step, each
    given to the first category that holds in it."""
    S, E, pid = win["start_ns"], win["end_ns"], win["pid"]

    def clipped(items):
        return [[max(x["start"], S), min(x["end"], E)] for x in items if x["start"] < E and x["end"] > S]

    mine = [o for o in ops if o["pid"] == pid]
    my_calls = [c for c in calls if c["pid"] == pid]
    spans = {
        "kernel_ns": clipped(o for o in mine if o["kind"] in ("kernel", "graph") and not is_comm(o)),  # graph: no kernel rows
        "comm_transfer_ns": clipped(dict(start=o.get("wait_end", o["start"]), end=o["end"]) for o in mine if is_comm(o)),
        "comm_wait_ns": clipped(dict(start=o["start"], end=o.get("wait_end", o["start"])) for o in mine if is_comm(o)),
        "memcpy_ns": clipped(o for o in mine if o["kind"] == "memcpy"),
        "memset_ns": clipped(o for o in mine if o["kind"] == "memset"),
        "runtime_ns": clipped(my_calls),
        "dataloader_ns": clipped(r for r in ranges if r["pid"] == pid and r["tid"] == win["tid"] and not r["cross"]
                                 and is_data_range(r["text"])),
    }
    threads = {win["tid"]} | {c["tid"] for c in my_calls if c["start"] < E and c["end"] > S}
    waits = {t: clipped(x for x in osrt if x["pid"] == pid and x["tid"] == t) for t in threads}
    bounds = {S, E}
    for group in list(spans.values()) + list(waits.values()):
        for s, e in group:
            bounds.update((s, e))
    islands = {k: merge(v) for k, v in spans.items()}
    wait_islands = {t: merge(v) for t, v in waits.items()}
    out = dict.fromkeys(CATEGORIES, 0)
    points = sorted(bounds)
    for a, b in zip(points, points[1:]):
        cat = next((k for k in spans if covers(islands[k], a, b)), None)
        if cat is None:
            cat = "other_ns" if all(covers(wait_islands[t], a, b) for t in threads) else "cpu_exec_ns"
        out[cat] += b - a
    return out


# ---------------------------------------------------------------------------------------------
# GPUs
# ---------------------------------------------------------------------------------------------
def ceil_div(a, b):
    return -(-a // b)


def occupancy(k, gpu):
    """Theoretical occupancy (0..1) of a kernel by the CUDA occupancy calculator's limits, as the header states."""
    warp = gpu["threadsPerWarp"] or 32
    warps = ceil_div(k["threads"], warp)
    limits = [gpu["maxBlocksPerSm"], gpu["maxWarpsPerSm"] // warps]
    if k["regs"] > 0:
        per_warp = ceil_div(k["regs"] * 32, 256) * 256
        limits.append(gpu["maxRegistersPerSm"] // (warps * per_warp))
    per_block = ceil_div(k["smem"] + (1024 if gpu["computeMajor"] >= 8 else 0), 128) * 128
    if per_block > 0:
        limits.append(gpu["maxShmemPerSm"] // per_block)
    return min(limits) * warps / gpu["maxWarpsPerSm"]


XMMA_TUPLE = re.compile(r"xmma_.*?gemm(?:_indexed)?_([a-z0-9]+)_([a-z0-9]+)_")  # sm90_xmma_gemm_<A,B>_<acc,C>_
SIMT_WORDS = ("ffma", "simt", "sgemm", "dgemm", "cgemm", "zgemm", "hgemm", "scudnn", "gemv", "gemmsn")
MMA_WORDS = ("hmma", "gmma", "imma", "dmma", "tensorop", "wmma", "warpgroup", "nvjet", "tf32", "flash", "fmha")
MMA_SHAPES = ("884", "1688", "16816", "8816", "16832", "161616")
HELPER_WORDS = ("splitkreduce", "reducesplitk", "init_device_workspace", "computeoffsets", "compute_gemm_pointers",
                "im2col", "fft")
GEMM_WORDS = ("gemm", "xmma", "cutlass", "convolve", "winograd", "fprop", "dgrad", "wgrad", "matmul", "triton_tem")


def tensor_core_class(name: str) -> str:
    """'yes', 'no' or 'unknown', written apart from queries/macros/tensor_core_class.sql: an xmma kernel by its
    type tuple, others by words in the name."""
    n = name.lower()
    m = XMMA_TUPLE.search(n)
    if m:
        operands, rest = m.group(1), m.group(2)
        if operands in ("f32f32", "cf32cf32") and rest == "f32f32":
            return "no"  # fp32 in, fp32 math: CUDA cores
        if any(t in operands + rest for t in ("tf32", "bf16", "f16", "e4m3", "e5m2", "i8i8", "int8")):
            return "yes"
    if any(w in n for w in SIMT_WORDS):
        return "no"
    if ("fmha" in n or "flash" in n) and "f32" in n and any(f"sm{v}" in n for v in (50, 70, 75)):
        return "no"
    if (any(w in n for w in MMA_WORDS) or re.search(r"tensor\d+x\d+x\d+", n)
            or any(f"{p}{shape}" in n for p in "hsi" for shape in MMA_SHAPES)):
        return "yes"
    if any(w in n for w in HELPER_WORDS):
        return "no"
    if any(w in n for w in GEMM_WORDS) or re.search(r"conv([^e]|$)", n):
        return "no" if any(t in n for t in ("float", "double", "f32", "fp32", "f64", "fp64")) else "unknown"
    return "no"


def is_tensor_core(name: str) -> bool:
    return tensor_core_class(name) == "yes"


def plain_gpus(ops, gpus, windows):
    """{device: dict(window_ns, busy_ns, kernel_ns, utilization_pct, sm_efficiency_pct, achieved_occupancy_pct,
    tensor_core_pct)} over the analysed windows, for the GPUs with ops in them. ops: PlainExport.ops (kernels with
    blocks, threads, regs, smem, name; an NCCL kernel counts from its wait_end, mark_waits); gpus: PlainExport.gpus
    (TARGET_INFO_GPU columns)."""
    wins = [w for w in windows if w["analysed"]]
    clipped = defaultdict(list)  # device -> [(op, clipped start, clipped end)]
    users = defaultdict(set)  # device -> pids with an op in one of their windows
    for w in wins:
        for o in ops:
            start = o.get("wait_end", o["start"]) if is_comm(o) else o["start"]  # NCCL: its transfer part only
            if o["pid"] == w["pid"] and start < w["end_ns"] and o["end"] > w["start_ns"] and o["end"] > start:
                clipped[o["device"]].append((o, max(start, w["start_ns"]), min(o["end"], w["end_ns"])))
                users[o["device"]].add(w["pid"])
    out = {}
    for dev, items in clipped.items():
        window_ns = sum(w["wall_ns"] for w in wins if w["pid"] in users[dev])
        busy = union_length([(s, e) for _, s, e in items])
        gpu = gpus.get(dev)  # None: no TARGET_INFO_GPU row, so SM count and per-SM limits unknown
        kern = [(o, e - s) for o, s, e in items if o["kind"] == "kernel"]
        kernel_ns = sum(d for _, d in kern)
        graph_ns = sum(e - s for o, s, e in items if o["kind"] == "graph")  # graph-level replays: no grids
        util = 100.0 * busy / window_ns
        sm = occ = None
        known_ns = window_ns - graph_ns
        if not kern and graph_ns:
            sm = None
        elif gpu is not None or not kern:
            sm = 100.0 * sum(min(o["blocks"] / gpu["smCount"], 1) * d for o, d in kern) / known_ns
            sm = min(sm, 100.0 * max(busy - graph_ns, 0) / known_ns)
        if gpu is not None and kernel_ns:
            occ = sum(occupancy(o, gpu) * d for o, d in kern) / kernel_ns * 100.0
        tc = 100.0 * sum(d for o, d in kern if is_tensor_core(o["name"])) / kernel_ns if kernel_ns else None
        unknown = (100.0 * sum(d for o, d in kern if tensor_core_class(o["name"]) == "unknown") / kernel_ns
                   if kernel_ns else None)
        blind = 100.0 * graph_ns / (kernel_ns + graph_ns) if kernel_ns + graph_ns else None
        out[dev] = dict(window_ns=window_ns, busy_ns=busy, kernel_ns=kernel_ns, utilization_pct=util,
                        sm_efficiency_pct=sm, achieved_occupancy_pct=occ, tensor_core_pct=tc,
                        tensor_core_unknown_pct=unknown, efficiency_unknown_pct=blind)
    return out  # GPUs the windows' processes left idle are not listed


# ---------------------------------------------------------------------------------------------
# top kernels, CUDA calls, operators
# ---------------------------------------------------------------------------------------------
def starts_in(x, wins):
    return any(x["pid"] == w["pid"] and w["start_ns"] <= x["start"] < w["end_ns"] for w in wins)


def plain_top_kernels(px: PlainExport, windows):
    """{short name: dict(calls, total_ns, durations by demangled name)}."""
    wins = [w for w in windows if w["analysed"]]
    out = defaultdict(lambda: dict(calls=0, total_ns=0, by_name=defaultdict(int)))
    for k in px.kernels:
        if starts_in(k, wins):
            row = out[k["short"] if k["short"] is not None else k["name"]]
            row["calls"] += 1
            row["total_ns"] += k["end"] - k["start"]
            row["by_name"][k["name"]] += k["end"] - k["start"]
    return dict(out)


def is_synchronizing_name(name: str) -> bool:
    return "Async" not in name and (name in SYNC_APIS or name.startswith("cuMemcpy") or name.startswith("cuMemset"))


def plain_top_api(px: PlainExport, windows):
    """{api short name: dict(calls, total_ns, max_ns, recorded sync)}."""
    wins = [w for w in windows if w["analysed"]]
    out = defaultdict(lambda: dict(calls=0, total_ns=0, max_ns=0, recorded=False))
    for c in px.calls:
        if starts_in(c, wins):
            row = out[short_api(c["name"])]
            row["calls"] += 1
            row["total_ns"] += c["end"] - c["start"]
            row["max_ns"] = max(row["max_ns"], c["end"] - c["start"])
            row["recorded"] |= (c["pid"], c["corr"]) in px.synced
    return dict(out)


def encloses(p, r) -> bool:
    """Whether range p holds range r on their thread (NVIDIA's tree: a range starting at the instant another one
    ends is not inside it, unless that one is empty too)."""
    if not (p["start"] <= r["start"] and r["end"] <= p["end"]):
        return False
    return not (r["start"] == p["end"] and p["start"] < p["end"])


def thread_trees(ranges):
    """{(pid, tid): ranges of the thread in (start, -end, id) order}, ranges ended on another thread left out."""
    by_thread = defaultdict(list)
    for r in ranges:
        if not r["cross"]:
            by_thread[(r["pid"], r["tid"])].append(r)
    for rs in by_thread.values():
        rs.sort(key=lambda r: (r["start"], -r["end"], r["id"]))
    return by_thread


def parents(by_thread):
    """{range id: id of the innermost range of its thread holding it} (a stack walk in start order)."""
    parent = {}
    for rs in by_thread.values():
        stack = []
        for r in rs:
            while stack and stack[-1]["end"] < r["start"]:
                stack.pop()
            holder = next((p for p in reversed(stack) if encloses(p, r)), None)
            if holder is not None:
                parent[r["id"]] = holder["id"]
            stack.append(r)
    return parent


def enclosing_at_calls(by_thread, calls):
    """{call id: ranges of its thread enclosing the whole call, outermost first}."""
    out = {}
    calls_by_thread = defaultdict(list)
    for c in calls:
        calls_by_thread[(c["pid"], c["tid"])].append(c)
    for key, cs in calls_by_thread.items():
        rs = by_thread.get(key, [])
        stack, i = [], 0
        for c in sorted(cs, key=lambda c: (c["start"], c["id"])):
            while i < len(rs) and rs[i]["start"] <= c["start"]:
                while stack and stack[-1]["end"] < rs[i]["start"]:
                    stack.pop()
                stack.append(rs[i])
                i += 1
            while stack and stack[-1]["end"] < c["start"]:
                stack.pop()
            out[c["id"]] = [r for r in stack if r["start"] <= c["start"] and r["end"] >= c["end"]]
    return out


def plain_top_ops(px: PlainExport, windows):
    """{op name: dict(calls, device_self_ns, device_total_ns, host_self_ns, host_total_ns, shapes set)} over the
    op markers (not evaluate_function wrappers) starting in an analysed step of their process; plus the GPU time
    of the ops whose innermost op marker is one of them."""
    wins = [w for w in windows if w["analysed"]]
    by_thread = thread_trees(px.ranges)
    parent = parents(by_thread)
    stacks = enclosing_at_calls(by_thread, px.calls)
    self_dev = defaultdict(int)  # marker id -> GPU time of ops whose launching call's innermost op marker it is
    for o in px.ops:
        call = px.call_of.get((o["pid"], o["corr"]))
        if call is None:
            continue
        markers = [r for r in stacks.get(call["id"], []) if is_op_marker(r["text"]) and not r["text"].startswith(EVAL)]
        if markers:
            self_dev[markers[-1]["id"]] += o["end"] - o["start"]
    counted = [r for r in px.ranges if is_op_marker(r["text"]) and not r["text"].startswith(EVAL)
               and starts_in(r, wins)]
    child_ns = defaultdict(int)
    for r in px.ranges:
        if r["id"] in parent and is_op_marker(r["text"]):
            child_ns[parent[r["id"]]] += r["end"] - r["start"]
    out = defaultdict(lambda: dict(calls=0, device_self_ns=0, device_total_ns=0, host_self_ns=0, host_total_ns=0,
                                   shapes=defaultdict(int)))
    position = {r["id"]: (key, i) for key, rs in by_thread.items() for i, r in enumerate(rs)}
    for m in counted:
        inside = [m]  # m and the ranges of its thread it holds: they follow it in (start, -end, id) order
        if m["id"] in position:
            key, i = position[m["id"]]
            rs = by_thread[key]
            for j in range(i + 1, len(rs)):
                r = rs[j]
                if r["start"] > m["end"]:
                    break
                if encloses(m, r):
                    inside.append(r)
        row = out[m["text"].split(", ")[0]]
        row["calls"] += 1
        row["device_self_ns"] += self_dev[m["id"]]
        row["device_total_ns"] += sum(self_dev[r["id"]] for r in inside)
        row["host_total_ns"] += m["end"] - m["start"]
        row["host_self_ns"] += m["end"] - m["start"] - child_ns[m["id"]]
        sizes = ""
        if ", sizes = " in m["text"]:
            sizes = m["text"].split(", sizes = ", 1)[1].split(", input_op_ids = ", 1)[0]
        row["shapes"][sizes or None] += self_dev[m["id"]]
    return dict(out), sum(self_dev[m["id"]] for m in counted)


# a numbered repeat of the step's work (micro-batches): one path, `micro_batch_*`
MICRO_BATCH = re.compile(r"(^|/)((micro[_ -]?batch|mb|chunk|accum[a-z_]*|step|iter|iteration)[_ #-]?)[0-9]+(/|$)",
                         re.IGNORECASE)


def fold_repeats(path: str) -> str:
    """Each numbered micro-batch-like component as `name*` (twice over: a match takes the `/` after it)."""
    return MICRO_BATCH.sub(r"\1\2*\4", MICRO_BATCH.sub(r"\1\2*\4", path))


def plain_top_ranges(px: PlainExport, windows):
    """top_ops without op markers: {layer path: dict(calls, device_ns, host_ns)} over the innermost user ranges
    (no user range inside them; not a step range) starting in an analysed step of their process. A GPU op's
    range is the innermost user range around its launching call on its thread, or, on a thread without user
    ranges of its own (PyTorch's autograd thread), the innermost user range open across the whole call on the
    one other thread of the process that has one. For exports without any op marker (no seq links)."""
    wins = [w for w in windows if w["analysed"]]
    users = [r for r in px.ranges if is_user_range(r["domain"], r["text"])]
    by_thread = thread_trees(users)
    user_parent = parents(by_thread)
    has_child = set(user_parent.values())
    by_id = {r["id"]: r for r in users}

    def chain(r):
        out = [r]
        while out[-1]["id"] in user_parent:
            out.append(by_id[user_parent[out[-1]["id"]]])
        return out[::-1]

    def path(r):
        return layer_path([x["text"] for x in chain(r)])

    def in_backward(r):
        return any("backward" in x["text"].lower() for x in chain(r))

    def forward_of(annotated):
        """nsysql.annotate: the latest forward range of the module, in the process, before its backward range."""
        module = annotated["text"].removesuffix(BACKWARD)
        found = [r for r in users if r["pid"] == annotated["pid"] and r["text"] == module
                 and r["start"] <= annotated["start"] and not in_backward(r)]
        return max(found, key=lambda r: r["start"]) if found else annotated

    annotated_scope = {r["id"] for r in users if any(x["text"].endswith(BACKWARD) for x in chain(r))}
    rerun_of = reruns(px, users, chain, in_backward, annotated_scope, path)
    threads_with_users = {(r["pid"], r["tid"]) for r in users
                          if r["id"] not in annotated_scope and r["id"] not in rerun_of}
    stacks = enclosing_at_calls(by_thread, px.calls)
    layer_ns = defaultdict(int)  # user range id -> GPU time
    for o in px.ops:
        c = px.call_of.get((o["pid"], o["corr"]))
        if c is None:
            continue
        own = stacks.get(c["id"])
        backward_ranges = [r for r in own or [] if r["text"].endswith(BACKWARD)]
        if backward_ranges:
            layer_ns[forward_of(backward_ranges[-1])["id"]] += o["end"] - o["start"]
        elif own and rerun_of.get(own[-1]["id"]) is not None:  # a re-run: where its forward ran
            layer_ns[rerun_of[own[-1]["id"]]] += o["end"] - o["start"]
        elif own:
            layer_ns[own[-1]["id"]] += o["end"] - o["start"]
        elif (c["pid"], c["tid"]) not in threads_with_users:
            found = set()
            for (pid, tid), rs in by_thread.items():
                if pid != c["pid"] or tid == c["tid"]:
                    continue
                rs = [r for r in rs if r["id"] not in annotated_scope]
                open_ = [r for r in rs if r["start"] <= c["start"] < r["end"]]
                if open_ and open_[-1]["end"] >= c["end"]:
                    found.add(open_[-1]["id"])
            if len(found) == 1:
                layer_ns[found.pop()] += o["end"] - o["start"]
    out = defaultdict(lambda: dict(calls=0, device_ns=0, host_ns=0))
    for r in users:
        top = r["id"] not in user_parent
        if r["id"] in has_child or (top and STEP_NAME.fullmatch(r["text"])) or not starts_in(r, wins):
            continue
        row = out[fold_repeats(path(r))]
        row["calls"] += 1
        row["device_ns"] += layer_ns[r["id"]]
        row["host_ns"] += r["end"] - r["start"]
    return dict(out)


def reruns(px, users, chain, in_backward, annotated_scope, path):
    """Activation checkpointing's forward re-runs: {re-run range id: id of the forward range it repeats, or None}. A
    re-run is a user range on an autograd thread or inside a backward (not annotated, not named backward) named like a
    forward range of the process on another thread; autograd re-runs blocks last first, so walking a process's ranges
    in time, a re-run block (one inside no other re-run) repeats the latest forward range of its name not yet
    re-run, when the backward pass re-runs every one of them (else None); a range inside it, the first range of the
    same sub-path inside that forward range."""
    def autograd(r):
        return (px.thread_name.get((r["pid"], r["tid"])) or "").startswith("pt_autograd")
    forward = [r for r in users if r["id"] not in annotated_scope and not autograd(r) and not in_backward(r)]
    texts = defaultdict(set)
    for r in forward:
        texts[(r["pid"], r["text"])].add(r["tid"])
    rerun = {r["id"]: r for r in users if r["id"] not in annotated_scope and "backward" not in r["text"].lower()
             and (autograd(r) or in_backward(r)) and texts.get((r["pid"], r["text"]), set()) - {r["tid"]}}
    roots = [r for r in rerun.values() if not any(x["id"] in rerun and x is not r for x in chain(r))]
    matched = {}
    for pid, text in {(r["pid"], r["text"]) for r in roots}:
        fwd = sorted((r for r in forward if r["pid"] == pid and r["text"] == text), key=lambda r: (r["start"], r["id"]))
        mine = sorted((r for r in roots if r["pid"] == pid and r["text"] == text), key=lambda r: (r["start"], r["id"]))
        groups = defaultdict(list)  # by the number of forward ranges of the name before the re-run
        for r in mine:
            groups[sum(1 for f in fwd if f["start"] < r["start"])].append(r)
        prev = 0
        for before in sorted(groups):
            group = groups[before]
            if len(group) == before - prev:
                for k, r in enumerate(group):
                    matched[r["id"]] = fwd[before - 1 - k]
            prev = before
    out = {}
    for r in rerun.values():
        root = next((x for x in chain(r) if x["id"] in matched), None)
        if root is None:
            out[r["id"]] = None
            continue
        f = matched[root["id"]]
        want = path(f) + path(r)[len(path(root)):]
        inside = [u for u in forward if u["pid"] == r["pid"] and f["start"] <= u["start"] <= f["end"] and path(u) == want]
        out[r["id"]] = min(u["id"] for u in inside) if inside else f["id"]
    return out
