"""A slow, plainly written reading of an nsys export with sqlite3 and Python loops.

It shares no code or SQL with nsysql: tests compare nsysql's answers with what this computes
directly from the raw rows (range containment: every range of the thread that holds the call, found through a
sorted list of them, see Containing; interval unions by sorting).
"""
from __future__ import annotations

import sqlite3
from bisect import bisect_right
from collections import defaultdict
from functools import lru_cache


def read_export(path) -> tuple[sqlite3.Connection, set[str], dict[int, str]]:
    """A read-only sqlite3 connection to an export, the names of its tables and its strings (StringIds: id -> text)."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    return db, tables, dict(db.execute("SELECT id, value FROM StringIds"))


def pid_of(global_id: int) -> int:
    """The process id inside an nsys globalTid or globalPid."""
    return (global_id >> 24) & 0xFFFFFF

class Containing:
    """The intervals of one thread that contain [start, end], as a scan of all of them finds them (same set): they
    are sorted by start and cut into blocks that keep their latest end, so a query skips the blocks that hold no
    interval reaching `end`. The plain scan of every range for every GPU op took most of a walk's time (minutes
    on gpt-decode-eager); this is only a faster way to find the same ranges, written without nsysql's code."""
    BLOCK = 64

    def __init__(self, items, start, end):
        """`items` with `start(item)` and `end(item)`."""
        self.items = sorted(items, key=start)
        self.starts = [start(x) for x in self.items]
        self.ends = [end(x) for x in self.items]
        b = self.BLOCK
        self.block_end = [max(self.ends[i:i + b]) for i in range(0, len(self.ends), b)]
        self.group_end = [max(self.block_end[i:i + b]) for i in range(0, len(self.block_end), b)]

    def containing(self, start, end) -> list:
        """The items with start <= `start` and end >= `end`, in no particular order."""
        b, ends, items = self.BLOCK, self.ends, self.items
        n = bisect_right(self.starts, start)  # items [0, n) start at or before `start`
        out = []
        blocks, group_end, block_end = -(-n // b), self.group_end, self.block_end
        for g in range(-(-blocks // b)):
            if group_end[g] < end:
                continue
            for k in range(g * b, min(blocks, (g + 1) * b)):
                if block_end[k] >= end:
                    out.extend(items[i] for i in range(k * b, min(n, (k + 1) * b)) if ends[i] >= end)
        return out


def union_length(intervals) -> int:
    total, cur_s, cur_e = 0, None, None
    for s, e in sorted(intervals):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return total


class Plain:
    def __init__(self, path):
        db, tables, strings = read_export(path)
        self.runtime = {}
        for start, end, gtid, corr, name_id in db.execute(
                "SELECT start, end, globalTid, correlationId, nameId FROM CUPTI_ACTIVITY_KIND_RUNTIME"):
            pid = pid_of(gtid)
            self.runtime[(pid, corr)] = (start, end, gtid, strings[name_id])
        self.ops = []  # (kind, start, end, pid, corr, bytes)
        self.op_devices = []  # the deviceId of each of self.ops (several with several GPUs in one export)
        for kind, table in (("kernel", "CUPTI_ACTIVITY_KIND_KERNEL"), ("memcpy", "CUPTI_ACTIVITY_KIND_MEMCPY"),
                            ("memset", "CUPTI_ACTIVITY_KIND_MEMSET"), ("graph", "CUPTI_ACTIVITY_KIND_GRAPH_TRACE")):
            if table in tables:  # graph: a CUDA graph traced at graph level, one row per launch, no kernel rows
                cols = "start, end, globalPid, correlationId, " + ("0" if kind in ("kernel", "graph") else "bytes")
                for s, e, gpid, corr, nbytes, device in db.execute(f"SELECT {cols}, deviceId FROM {table}"):
                    self.ops.append((kind, s, e, pid_of(gpid), corr, nbytes))
                    self.op_devices.append(device)
        if "NVTX_EVENTS" not in tables:  # an export without NVTX: read as no ranges
            db.execute("CREATE TEMP TABLE NVTX_EVENTS (start, end, eventType, globalTid, endGlobalTid, text, textId, "
                       "domainId)")
        max_ts = db.execute("SELECT MAX(MAX(start, COALESCE(end, start))) FROM NVTX_EVENTS "
                            "WHERE eventType IN (59, 60, 70, 71)").fetchone()[0]
        domains = {}  # (pid, domainId) -> name, from domain-create events (eventType 75)
        for gtid, dom, text, tid_ in db.execute(
                "SELECT globalTid, domainId, text, textId FROM NVTX_EVENTS WHERE eventType = 75 ORDER BY start"):
            domains.setdefault((pid_of(gtid), dom), text if text is not None else strings.get(tid_, ""))
        self.ranges = []  # (rowid, name, start, end, gtid)
        for rowid, s, e, gtid, text, tid_, dom in db.execute(
                "SELECT n.rowid, n.start, n.end, n.globalTid, n.text, n.textId, n.domainId FROM NVTX_EVENTS n "
                "WHERE eventType IN (59, 60, 70, 71) AND endGlobalTid IS NULL"):
            body = text if text is not None else strings.get(tid_, "")
            domain = domains.get((pid_of(gtid), dom), "")
            self.ranges.append((rowid, f"{domain}:{body or ''}", s, e if e is not None else max_ts, gtid))
        self.by_thread = defaultdict(list)
        for r in self.ranges:
            self.by_thread[r[4]].append(r)
        self._index: dict = {}  # gtid -> (Containing of the thread's ranges by position, its ranges)

    def enclosing(self, call):
        """The ranges of the call's thread that contain it, in the thread's order of ranges."""
        start, end, gtid, _ = call
        if gtid not in self.by_thread:
            return []
        index = self._index.get(gtid)
        if index is None:
            rs = self.by_thread[gtid]
            index = self._index[gtid] = (Containing(range(len(rs)), lambda i: rs[i][2], lambda i: rs[i][3]), rs)
        found, rs = index
        return [rs[i] for i in sorted(found.containing(start, end))]

    def innermost(self, call):
        rs = self.enclosing(call)
        return min(rs, key=lambda r: (r[3] - r[2], -r[2])) if rs else None


# ---------------------------------------------------------------------------------------------
# Kernel attribution (nsysql kernels / layers), written from the rules in the docs, plainly.
# ---------------------------------------------------------------------------------------------
import re  # noqa: E402

LIBRARY_DOMAINS = {"CCCL", "NCCL", "cuBLAS", "cuBLASLt", "cuDNN", "cuFFT", "cuSPARSE", "cuSOLVER", "NVSHMEM",
                   "CUTLASS", "nvFuser", "TensorRT"}
# nvFuser pushes its ranges in the default domain, named by its C++ scopes: these open its internals
NVFUSER_ENTRY = re.compile(r"(nvfuser|FusionExecutorCache|FusionKernelRuntime|KernelExecutor|FusionExecutor|"
                           r"ExecutorDispatch|FusionDefinition)::")
CPP_METHOD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*::")  # TensorRT's API ranges: ExecutionContext::enqueueV3
STEP_NAME = re.compile(r"(profiled_step|((train|training|eval|inference)_)?(step|iteration|iter)([ _#-]?[0-9]+)?"
                       r"|ProfilerStep#[0-9]+)", re.IGNORECASE)
EVAL = "autograd::engine::evaluate_function: "
BACKWARD = " [backward]"  # nsysql.annotate's backward range of a module: `model/layers.3/attn [backward]`


def layer_path(texts):
    """The layer path of a chain of user range texts, outermost first: a top-level step range left out, a
    trailing ` [backward]` dropped, and a module path inside its parent's (or an enclosing module path's) range
    adding only its last part (`.../attention_sublayer/attn`, not `model/layers.3/attn` again)."""
    names = [t.removesuffix(BACKWARD) for t in texts]
    if len(names) > 1 and STEP_NAME.fullmatch(names[0]):
        names = names[1:]
    segments, parent, anchor = [], None, None
    for name in names:
        prefix = next((p for p in (parent, anchor) if p is not None and name.startswith(p + "/")), None)
        segments.append(name[len(prefix) + 1:] if prefix else name)
        anchor = name if prefix or "/" in name else anchor
        parent = name
    return "/".join(segments) if segments else None


def is_op_marker(text: str) -> bool:
    return (", op_id = " in text or ", seq = " in text or text.startswith(EVAL)
            or text.startswith("Optimizer.step#") or text.startswith("Optimizer.zero_grad#"))


@lru_cache(maxsize=None)  # a pure function of the text, asked for every range around every GPU op
def is_optimizer_name(text: str) -> bool:
    """A user range's text naming an optimizer step, in any case: it contains `optim`, or it is the name `opt`,
    `sgd` or `adam...` (letters and digits), with `step` before it and `step` or `zero_grad` after it allowed,
    joined by nothing, `_`, `.`, `-` or a space."""
    t = text.lower()
    if "optim" in t:
        return True
    joins = ("", "_", ".", "-", " ")
    heads = [""] + ["step" + j for j in joins]
    tails = [""] + [j + w for j in joins for w in ("step", "zero_grad")]
    for head in heads:
        for tail in tails:
            if len(t) > len(head) + len(tail) and t.startswith(head) and t.endswith(tail):
                core = t[len(head):len(t) - len(tail)]
                if core in ("opt", "sgd") or (core.startswith("adam") and core.isascii() and core.isalnum()):
                    return True
    return False


def is_nccl_kernel_name(name: str | None) -> bool:
    """A kernel named like NCCL's: `nccl` in any case, or NCCL's one-rank reduction `<unnamed>::oneRankReduce<...>`."""
    return name is not None and ("nccl" in name.lower() or "::oneRankReduce<" in name)


def is_library(domain: str, text: str) -> bool:
    """A library's own range (never a step): a library's domain, or an nvFuser entry range in the default one."""
    return (domain in LIBRARY_DOMAINS or domain.startswith("com.nvidia.nccl")
            or (domain == "" and NVFUSER_ENTRY.match(text) is not None))


def is_user_range(domain: str, text: str) -> bool:
    """Neither an op marker nor a library's internal range: TensorRT's layer ranges are user ranges (layers)."""
    return not is_op_marker(text) and (not is_library(domain, text)
                                       or (domain == "TensorRT" and CPP_METHOD.match(text) is None))


def layer_name(r) -> str:
    """A range's text as a layer path has it: TensorRT's detailed layer info (a JSON object) by its "Name"."""
    if r.get("library") and r["text"].startswith("{"):
        import json
        try:
            return json.loads(r["text"]).get("Name") or r["text"]
        except ValueError:
            return r["text"]
    return r["text"]


def seq_of(text: str):
    m = re.search(r", seq = (\d+)", text)
    return int(m.group(1)) if m else None


def sizes_of(text: str):
    i = text.find(", sizes = ")
    if i < 0:
        return None
    rest = text[i + len(", sizes = "):]
    j = rest.find(", input_op_ids = ")
    return (rest[:j] if j >= 0 else rest) or None


class PlainAttribution:
    """Direction, layer, op, params and seq of every GPU op, by brute-force containment."""

    def __init__(self, path):
        db, tables, strings = read_export(path)
        self.thread_name = {}
        if "ThreadNames" in tables:
            for gtid, name_id in db.execute("SELECT globalTid, nameId FROM ThreadNames"):
                self.thread_name.setdefault(gtid, strings.get(name_id))
        self.calls = {}
        for start, end, gtid, corr in db.execute(
                "SELECT start, end, globalTid, correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME"):
            self.calls[(pid_of(gtid), corr)] = (start, end, gtid)
        self.ops = []  # (kind, rowid, start, end, pid, corr)
        for kind, table in (("kernel", "CUPTI_ACTIVITY_KIND_KERNEL"), ("memcpy", "CUPTI_ACTIVITY_KIND_MEMCPY"),
                            ("memset", "CUPTI_ACTIVITY_KIND_MEMSET"), ("graph", "CUPTI_ACTIVITY_KIND_GRAPH_TRACE")):
            if table in tables:
                for rowid, s, e, gpid, corr in db.execute(
                        f"SELECT rowid, start, end, globalPid, correlationId FROM {table}"):
                    self.ops.append((kind, rowid, s, e, pid_of(gpid), corr))
        self.kernel_name = {}  # kernel rowid -> demangled name
        if "CUPTI_ACTIVITY_KIND_KERNEL" in tables:
            for rowid, name_id in db.execute("SELECT rowid, demangledName FROM CUPTI_ACTIVITY_KIND_KERNEL"):
                self.kernel_name[rowid] = strings.get(name_id)
        self.ops.sort(key=lambda o: (o[2], o[0], o[1]))
        if "NVTX_EVENTS" not in tables:  # an export without NVTX: read as no ranges
            db.execute("CREATE TEMP TABLE NVTX_EVENTS (start, end, eventType, globalTid, endGlobalTid, text, textId, "
                       "domainId)")
        last = db.execute("SELECT MAX(MAX(start, COALESCE(end, start))) FROM NVTX_EVENTS "
                          "WHERE eventType IN (59, 60, 70, 71)").fetchone()[0]
        domains = {}
        for gtid, dom, text, tid_ in db.execute(
                "SELECT globalTid, domainId, text, textId FROM NVTX_EVENTS WHERE eventType = 75 ORDER BY start"):
            domains.setdefault((pid_of(gtid), dom), text if text is not None else strings.get(tid_, ""))
        # range: dict(id, text, start, end, gtid, pid, user, marker)
        self.ranges = []
        for rowid, s, e, gtid, text, tid_, dom in db.execute(
                "SELECT rowid, start, end, globalTid, text, textId, domainId FROM NVTX_EVENTS "
                "WHERE eventType IN (59, 60, 70, 71) AND endGlobalTid IS NULL ORDER BY rowid"):
            body = (text if text is not None else strings.get(tid_)) or ""
            domain = domains.get((pid_of(gtid), dom), "")
            marker = is_op_marker(body)
            self.ranges.append(dict(id=rowid, text=body, start=s, end=e if e is not None else last, gtid=gtid,
                                    pid=pid_of(gtid), marker=marker, domain=domain,
                                    user=is_user_range(domain, body), library=is_library(domain, body)))
        self.by_thread = defaultdict(list)
        for r in self.ranges:
            self.by_thread[r["gtid"]].append(r)
        self._containing: dict = {}  # gtid -> Containing of its ranges (start and end never change)
        for r in self.ranges:  # a default-domain range inside an nvFuser entry range is nvFuser's too
            if r["domain"] == "" and any(x is not r and x["domain"] == "" and NVFUSER_ENTRY.match(x["text"])
                                         for x in self.stack(r["gtid"], r["start"], r["end"])):
                r["user"], r["library"] = False, True
        # whether a thread has any range named `... [backward]`, asked once per thread, not once per range
        has_backward = {gtid: any(x["text"].endswith(BACKWARD) for x in rs) for gtid, rs in self.by_thread.items()}
        for r in self.ranges:  # an annotated backward range, or a range inside one
            r["annotated"] = any(x["user"] and x["text"].endswith(BACKWARD)
                                 for x in self.stack(r["gtid"], r["start"], r["end"])) \
                if has_backward[r["gtid"]] else False
        self.seq_by_id = {r["id"]: seq_of(r["text"]) for r in self.ranges}  # each text read once, not per lookup
        # activation checkpointing's re-runs: user ranges (not annotated, not named backward) on an autograd thread or
        # inside a backward, named like a user range of the forward (elsewhere) on another thread of the process
        in_bwd = {}
        for rs in self.by_thread.values():
            open_ = []
            for r in sorted(rs, key=lambda r: (r["start"], -r["end"], r["id"])):
                while open_ and open_[-1]["end"] < r["end"]:
                    open_.pop()
                open_.append(r)
                in_bwd[r["id"]] = any(x["text"].startswith(EVAL) or (x["user"] and "backward" in x["text"].lower())
                                      for x in open_)
        autograd = {g for g in self.by_thread if (self.thread_name.get(g) or "").startswith("pt_autograd")}
        forward_threads = defaultdict(set)  # (pid, text) -> threads with such a forward range
        for r in self.ranges:
            if r["user"] and not r["annotated"] and not in_bwd[r["id"]] and r["gtid"] not in autograd:
                forward_threads[(r["pid"], r["text"])].add(r["gtid"])
        self.rerun_ids = {r["id"] for r in self.ranges
                          if r["user"] and not r["annotated"] and "backward" not in r["text"].lower()
                          and (r["gtid"] in autograd or in_bwd[r["id"]])
                          and forward_threads.get((r["pid"], r["text"]), set()) - {r["gtid"]}}
        # threads with a user range of their own (not annotated backward, no re-run): they borrow no other's ranges
        self.has_own_user = {gtid for gtid, rs in self.by_thread.items()
                             if any(r["user"] and not r["annotated"] and r["id"] not in self.rerun_ids for r in rs)}

    def stack(self, gtid, start, end):
        """Ranges of thread `gtid` enclosing [start, end], outermost first."""
        if gtid not in self.by_thread:
            return []
        index = self._containing.get(gtid)
        if index is None:
            index = self._containing[gtid] = Containing(self.by_thread[gtid], lambda r: r["start"], lambda r: r["end"])
        rs = index.containing(start, end)
        return sorted(rs, key=lambda r: (r["start"], -r["end"], r["id"]))

    def path(self, user_stack):
        return layer_path([layer_name(r) for r in user_stack])

    def user_path_of(self, r):
        return self.path([x for x in self.stack(r["gtid"], r["start"], r["end"]) if x["user"]])

    def node_of(self, eval_range):
        inside = [r for r in self.by_thread[eval_range["gtid"]] if r is not eval_range
                  and r["start"] >= eval_range["start"] and r["end"] <= eval_range["end"]]
        children = [r for r in inside if not any(o is not r and o["start"] <= r["start"] and o["end"] >= r["end"]
                                                 for o in inside)]
        seqs = [seq_of(r["text"]) for r in children if seq_of(r["text"]) is not None]
        return min(seqs) if seqs else None

    def forward_op(self, pid, seq, before):
        if not hasattr(self, "_markers"):  # (pid, seq) -> its op markers, in the order of self.ranges
            self._markers = defaultdict(list)
            for r in self.ranges:
                if r["marker"]:
                    self._markers[(r["pid"], self.seq_by_id[r["id"]])].append(r)
        best = None
        for r in self._markers.get((pid, seq), []):
            if r["start"] > before:
                continue
            if any(x["text"].startswith(EVAL) for x in self.stack(r["gtid"], r["start"], r["end"])):
                continue
            if best is None or r["start"] > best["start"]:
                best = r
        return best

    def in_backward(self, r):
        return any(x["text"].startswith(EVAL) or (x["user"] and "backward" in x["text"].lower())
                   for x in self.stack(r["gtid"], r["start"], r["end"]))

    def forward_range(self, pid, module, before):
        """The latest user range named `module` in the process starting at or before `before`, not in backward."""
        if not hasattr(self, "_user_named"):  # (pid, text) -> its user ranges, in the order of self.ranges
            self._user_named = defaultdict(list)
            for r in self.ranges:
                if r["user"]:
                    self._user_named[(r["pid"], r["text"])].append(r)
        found = [r for r in self._user_named.get((pid, module), [])
                 if r["start"] <= before and not self.in_backward(r)]
        return max(found, key=lambda r: r["start"]) if found else None

    def borrowed(self, pid, gtid, start, end):
        if gtid in self.has_own_user:
            return None
        found = []
        for other in self.by_thread:
            if other == gtid or pid_of(other) != pid:
                continue
            st = [r for r in self.stack(other, start, end)
                  if r["user"] and not r["annotated"] and r["id"] not in self.rerun_ids]
            if st:
                found.append(st)
        return found[0] if len(found) == 1 else None

    def attribute(self):
        """[(kind, rowid, direction, layer, op, params, seq)] in GPU start order; walked once per instance (the
        rows are immutable tuples, so each caller gets its own list of the same rows)."""
        if not hasattr(self, "_attributed"):
            self._attributed = self._walk_attribution()
        return list(self._attributed)

    def _walk_attribution(self):
        out = []
        for kind, rowid, _s, _e, pid, corr in self.ops:
            call = self.calls.get((pid, corr))
            nccl_named = kind == "kernel" and is_nccl_kernel_name(self.kernel_name.get(rowid))
            if call is None:
                out.append((kind, rowid, "comm" if nccl_named else "other", "?", None, None, None))
                continue
            cs, ce, gtid = call
            st = self.stack(gtid, cs, ce)
            # communication: a kernel named like NCCL's, or launched inside a range of NCCL's own domain
            comm = kind == "kernel" and (nccl_named or any(r["domain"] == "NCCL" for r in st))
            users = [r for r in st if r["user"]]
            markers = [r for r in st if r["marker"] and not r["text"].startswith(EVAL)]
            evals = [r for r in st if r["text"].startswith(EVAL)]
            optim = any((r["user"] and is_optimizer_name(r["text"])) or r["text"].startswith("Optimizer.step#")
                        or r["text"].startswith("Optimizer.zero_grad#") for r in st)
            backward = bool(evals) or any(r["user"] and "backward" in r["text"].lower() for r in st)
            lent = self.borrowed(pid, gtid, cs, ce) if not users else None
            layer, op, params, seq = None, None, None, None
            if evals:
                ev = evals[-1]
                name = ev["text"][len(EVAL):]
                op = re.sub(r", op_id = \d+$", "", name)
                seq = self.node_of(ev)
                fwd = self.forward_op(pid, seq, ev["start"]) if seq is not None else None
                if fwd is not None:
                    params = sizes_of(fwd["text"])
                    layer = self.user_path_of(fwd)
            elif markers:
                op = markers[-1]["text"].split(", ")[0]
                params = sizes_of(markers[-1]["text"])
                seq = seq_of(markers[-1]["text"])
            annotated = [r for r in users if r["text"].endswith(BACKWARD)]
            if layer is None and annotated:
                fwd = self.forward_range(pid, annotated[-1]["text"].removesuffix(BACKWARD), annotated[-1]["start"])
                layer = self.user_path_of(fwd if fwd is not None else annotated[-1])
            if layer is None and users:
                layer = self.path(users)
            if layer is None and lent:
                layer = self.path(lent)
            if comm:
                direction = "comm"
            elif optim:
                direction = "optim"
            elif users and users[-1]["id"] in self.rerun_ids:
                direction = "recompute"
            elif backward or (self.thread_name.get(gtid) or "").startswith("pt_autograd_"):
                direction = "bprop"
            elif users or markers:  # a library's ranges alone (NCCL, cuBLAS, ...) are no user structure
                direction = "fprop"
            elif lent:
                if any(is_optimizer_name(r["text"]) for r in lent):
                    direction = "optim"
                elif any("backward" in r["text"].lower() for r in lent):
                    direction = "bprop"
                else:
                    direction = "fprop"
            else:
                direction = "other"
            out.append((kind, rowid, direction, layer or "?", op, params, seq))
        return out


# ---------------------------------------------------------------------------------------------
# Launch overhead, copies and GPU idle gaps (nsysql overhead / memcpy / gaps / utilization), plainly.
# ---------------------------------------------------------------------------------------------
def short_api(name: str) -> str:
    """An API name as nsys stats prints it: a 4-digit _vNNNN suffix dropped."""
    return re.sub(r"_v[0-9]{4}$", "", name or "")


def quantile(values, q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default, DuckDB's quantile_cont)."""
    xs = sorted(values)
    pos = (len(xs) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def merge(intervals):
    """The union of intervals as sorted, disjoint [start, end] pairs."""
    out = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def busy_within(islands, start, end) -> int:
    return sum(max(0, min(e, end) - max(s, start)) for s, e in islands)


class PlainTimeline:
    """Every GPU op with its device and launching call, every CUDA/OS call and NVTX range of an export."""

    def __init__(self, path):
        db, tables, strings = read_export(path)
        labels = {}
        for table in ("ENUM_CUDA_MEMCPY_OPER", "ENUM_CUDA_MEM_KIND"):
            labels[table] = dict(db.execute(f"SELECT id, label FROM {table}")) if table in tables else {}
        self.thread_name = {}
        if "ThreadNames" in tables:
            for gtid, name_id in db.execute("SELECT globalTid, nameId FROM ThreadNames ORDER BY rowid"):
                self.thread_name.setdefault(gtid, strings.get(name_id))
        self.calls = {}  # (pid, corr) -> call dict
        self.cuda_calls = defaultdict(list)  # gtid -> [(start, end, short name)]
        if "CUPTI_ACTIVITY_KIND_RUNTIME" in tables:
            for s, e, gtid, corr, name_id in db.execute(
                    "SELECT start, end, globalTid, correlationId, nameId FROM CUPTI_ACTIVITY_KIND_RUNTIME"):
                call = dict(start=s, end=e, gtid=gtid, pid=pid_of(gtid), tid=gtid & 0xFFFFFF,
                            name=strings[name_id])
                self.calls[(call["pid"], corr)] = call
                self.cuda_calls[gtid].append((s, e, short_api(call["name"])))
        self.os_calls = defaultdict(list)
        if "OSRT_API" in tables:
            for s, e, gtid, name_id in db.execute(
                    "SELECT start, end, globalTid, nameId FROM OSRT_API WHERE eventClass NOT IN (31, 32)"):
                self.os_calls[gtid].append((s, e, strings[name_id]))
        self.ops = []  # dicts: kind, start, end, device, stream, name, bytes, copy_kind, src, dst, call
        if "CUPTI_ACTIVITY_KIND_KERNEL" in tables:
            for s, e, dev, stream, gpid, corr, name_id in db.execute(
                    "SELECT start, end, deviceId, streamId, globalPid, correlationId, demangledName "
                    "FROM CUPTI_ACTIVITY_KIND_KERNEL"):
                self._op("kernel", s, e, dev, stream, gpid, corr, strings[name_id])
        if "CUPTI_ACTIVITY_KIND_MEMCPY" in tables:
            ops, kinds = labels["ENUM_CUDA_MEMCPY_OPER"], labels["ENUM_CUDA_MEM_KIND"]
            for s, e, dev, stream, gpid, corr, nbytes, ck, sk, dk in db.execute(
                    "SELECT start, end, deviceId, streamId, globalPid, correlationId, bytes, copyKind, srcKind, "
                    "dstKind FROM CUPTI_ACTIVITY_KIND_MEMCPY"):
                copy_kind = ops.get(ck, "Unknown")
                self._op("memcpy", s, e, dev, stream, gpid, corr, f"[CUDA memcpy {copy_kind}]", nbytes, copy_kind,
                         kinds.get(sk, "Unknown"), kinds.get(dk, "Unknown"))
        if "CUPTI_ACTIVITY_KIND_MEMSET" in tables:
            kinds = labels["ENUM_CUDA_MEM_KIND"]
            for s, e, dev, stream, gpid, corr, nbytes, mk in db.execute(
                    "SELECT start, end, deviceId, streamId, globalPid, correlationId, bytes, memKind "
                    "FROM CUPTI_ACTIVITY_KIND_MEMSET"):
                self._op("memset", s, e, dev, stream, gpid, corr, "[CUDA memset]", nbytes, "Memset", "-",
                         kinds.get(mk, "Unknown"))
        if "CUPTI_ACTIVITY_KIND_GRAPH_TRACE" in tables:  # whole CUDA graphs traced at graph level
            for s, e, dev, stream, gpid, corr, graph_id in db.execute(
                    "SELECT start, end, deviceId, streamId, globalPid, correlationId, graphId "
                    "FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE"):
                self._op("graph", s, e, dev, stream, gpid, corr, f"[CUDA graph {graph_id}]")
        self.islands = {dev: merge([(o["start"], o["end"]) for o in self.ops if o["device"] == dev])
                        for dev in {o["device"] for o in self.ops}}
        last = db.execute("SELECT MAX(MAX(start, COALESCE(end, start))) FROM NVTX_EVENTS "
                          "WHERE eventType IN (59, 60, 70, 71)").fetchone()[0] if "NVTX_EVENTS" in tables else None
        self.user_ranges = defaultdict(list)  # gtid -> [dict(id, text, start, end)], non-op-marker ranges
        if "NVTX_EVENTS" in tables:
            for rowid, s, e, gtid, text, text_id in db.execute(
                    "SELECT rowid, start, end, globalTid, text, textId FROM NVTX_EVENTS "
                    "WHERE eventType IN (59, 60, 70, 71) AND endGlobalTid IS NULL"):
                body = (text if text is not None else strings.get(text_id)) or ""
                if not is_op_marker(body):
                    self.user_ranges[gtid].append(dict(id=rowid, text=body, start=s, end=e if e is not None else last))

    def _op(self, kind, s, e, dev, stream, gpid, corr, name, nbytes=None, copy_kind=None, src=None, dst=None):
        pid = pid_of(gpid)
        self.ops.append(dict(kind=kind, start=s, end=e, device=dev, stream=stream, pid=pid, name=name, bytes=nbytes,
                             copy_kind=copy_kind, src=src, dst=dst, call=self.calls.get((pid, corr))))

    # -- NVTX -------------------------------------------------------------------------------
    def user_stack(self, gtid, start, end):
        """User ranges of the thread enclosing [start, end], outermost first."""
        rs = [r for r in self.user_ranges.get(gtid, []) if r["start"] <= start and r["end"] >= end]
        return sorted(rs, key=lambda r: (r["start"], -r["end"], r["id"]))

    def path_of(self, gtid, r):
        return "/".join(x["text"] for x in self.user_stack(gtid, r["start"], r["end"]))

    def range_at(self, gtid, t):
        """Innermost user range of the thread open at t (start <= t < end)."""
        rs = [r for r in self.user_ranges.get(gtid, []) if r["start"] <= t < r["end"]]
        return max(rs, key=lambda r: (r["start"], -r["end"])) if rs else None

    # -- launches ---------------------------------------------------------------------------
    def launches(self):
        return [o for o in self.ops if o["kind"] in ("kernel", "graph") and o["call"] is not None]  # graph: one launch

    def launch_stats(self, group):
        """The per-launch measures of a group of launched kernels."""
        api = [o["call"]["end"] - o["call"]["start"] for o in group]
        queue = [max(o["start"] - o["call"]["end"], 0) for o in group]
        kern = [o["end"] - o["start"] for o in group]
        return dict(launches=len(group), gpu_busy_ns=union_length([(o["start"], o["end"]) for o in group]),
                    kernel_ns=sum(kern), mean_api_ns=sum(api) / len(api), median_api_ns=quantile(api, 0.5),
                    p95_api_ns=quantile(api, 0.95), mean_queue_ns=sum(queue) / len(queue),
                    median_queue_ns=quantile(queue, 0.5), p95_queue_ns=quantile(queue, 0.95),
                    shorter_than_launch=sum(1 for a, k in zip(api, kern) if k < a))

    def busiest_device_busy(self, devices, start, end) -> int:
        return max(busy_within(self.islands[d], start, end) for d in devices)

    def overhead_by_thread(self):
        groups = defaultdict(list)
        for o in self.launches():
            groups[o["call"]["gtid"]].append(o)
        out = {}
        for gtid, group in groups.items():
            calls = {id(o["call"]): o["call"] for o in group}.values()
            row = self.launch_stats(group)
            start, end = min(c["start"] for c in calls), max(c["end"] for c in calls)
            idle = end - start - self.busiest_device_busy({o["device"] for o in group}, start, end)
            row.update(cpu_ns=sum(c["end"] - c["start"] for c in calls), launch_span_ns=end - start, gpu_idle_ns=idle,
                       launch_bound=len(group) >= 2 and 2 * idle > end - start,
                       thread_name=self.thread_name.get(gtid))
            out[(pid_of(gtid), gtid & 0xFFFFFF)] = row
        return out

    def overhead_by_kernel(self):
        groups = defaultdict(list)
        for o in self.launches():
            groups[o["name"]].append(o)
        out = {}
        for name, group in groups.items():
            calls = {id(o["call"]): o["call"] for o in group}.values()
            row = self.launch_stats(group)
            row["cpu_ns"] = sum(c["end"] - c["start"] for c in calls)
            row["launch_bound"] = len(group) >= 2 and 2 * row["gpu_busy_ns"] < row["cpu_ns"]
            out[name] = row
        return out

    def overhead_by_range(self):
        """(pid, tid, path) -> row; launches count in every user range enclosing their call."""
        groups, instances, depth = defaultdict(list), defaultdict(dict), {}
        for o in self.launches():
            c = o["call"]
            key_thread = (c["pid"], c["tid"])
            stack = self.user_stack(c["gtid"], c["start"], c["end"])
            if not stack:
                groups[key_thread + ("(outside user ranges)",)].append(o)
            for above, r in enumerate(stack):  # user ranges above it (not '/' in the path: module paths have them)
                key = key_thread + (self.path_of(c["gtid"], r),)
                depth[key] = above
                groups[key].append(o)
                instances[key].setdefault(r["id"], (r, []))[1].append(o)
        out = {}
        for key, group in groups.items():
            row = self.launch_stats(group)
            if key in instances:
                cpu = idle = span = 0
                for r, inside in instances[key].values():
                    cpu += r["end"] - r["start"]
                    idle += r["end"] - r["start"] - self.busiest_device_busy(
                        {o["device"] for o in inside}, r["start"], r["end"])
                    span += max(o["call"]["end"] for o in inside) - min(o["call"]["start"] for o in inside)
                row.update(instances=len(instances[key]), cpu_ns=cpu, gpu_idle_ns=idle, launch_span_ns=span,
                           launch_bound=len(group) >= 2 and 2 * idle > cpu and 2 * span >= cpu, depth=depth[key])
            else:
                row.update(instances=None, cpu_ns=None, gpu_idle_ns=None, launch_span_ns=None, launch_bound=None,
                           depth=None)
            out[key] = row
        return out

    # -- copies -----------------------------------------------------------------------------
    @staticmethod
    def is_sync(op) -> bool:
        call = op["call"]
        if call is None:
            return False
        blocking = (re.match(r"(cudaMemcpy|cudaMemset|cuMemcpy|cuMemset)", call["name"])
                    and "Async" not in call["name"])
        return bool(blocking) or call["end"] >= op["end"]

    def copies(self, key):
        """Copies and sets grouped by key(op) -> count, bytes, ns, sync count, sync API ns."""
        out = defaultdict(lambda: dict(count=0, total_bytes=0, total_ns=0, sync_count=0, sync_api_ns=0))
        for o in self.ops:
            if o["kind"] in ("kernel", "graph"):
                continue
            row = out[key(o)]
            row["count"] += 1
            row["total_bytes"] += o["bytes"]
            row["total_ns"] += o["end"] - o["start"]
            if self.is_sync(o):
                row["sync_count"] += 1
                row["sync_api_ns"] += o["call"]["end"] - o["call"]["start"]
        return dict(out)

    @staticmethod
    def host_memory(o):
        if "Pageable" in (o["src"], o["dst"]):
            return "Pageable"
        return "Pinned" if "Pinned" in (o["src"], o["dst"]) else None

    def copy_path(self, o):
        """Path of the innermost user range around the copy's launching call."""
        c = o["call"]
        stack = self.user_stack(c["gtid"], c["start"], c["end"]) if c else []
        return self.path_of(c["gtid"], stack[-1]) if stack else "(outside user ranges)"

    # -- gaps -------------------------------------------------------------------------------
    def gaps(self, min_gap_ns):
        out = []
        for dev, islands in self.islands.items():
            for (_, prev_end), (start, _) in zip(islands, islands[1:]):
                if start - prev_end >= min_gap_ns:
                    out.append((dev, prev_end, start))
        return out

    @staticmethod
    def longest_overlap(calls, start, end):
        """(overlap ns, names reaching it) of the calls overlapping [start, end]; (None, set()) if none."""
        best, names = None, set()
        for s, e, name in calls:
            overlap = min(e, end) - max(s, start)
            if overlap > 0 and (best is None or overlap >= best):
                names = names | {name} if overlap == best else {name}
                best = overlap
        return best, names

    def thread_in_gap(self, gtid, start, end):
        cuda_ns, cuda_names = self.longest_overlap(self.cuda_calls.get(gtid, []), start, end)
        os_ns, os_names = self.longest_overlap(self.os_calls.get(gtid, []), start, end)
        r = self.range_at(gtid, start)
        return dict(cuda_call_ns=cuda_ns, cuda_names=cuda_names, os_call_ns=os_ns, os_names=os_names,
                    cuda_calls_started=sum(1 for s, _, _ in self.cuda_calls.get(gtid, []) if start < s < end),
                    range_path=self.path_of(gtid, r) if r else None)

    def ops_starting_at(self, device, t):
        return [o for o in self.ops if o["device"] == device and o["start"] == t]


# ---------------------------------------------------------------------------------------------
# Steps, range paths and op FLOPs (nsysql steps / diff / efficiency), plainly.
# ---------------------------------------------------------------------------------------------
def top_level_user_ranges(pa: PlainAttribution):
    """User ranges that no other user range of their thread encloses (a sweep per thread)."""
    out = []
    for rs in pa.by_thread.values():
        reach = None
        for r in sorted((r for r in rs if r["user"]), key=lambda r: (r["start"], -r["end"], r["id"])):
            if reach is None or r["end"] > reach:
                out.append(r)
                reach = r["end"]
    return out


def plain_steps(pa: PlainAttribution):
    """[{step, name, source, pid, gtid, start, end}] in (step, pid) order: step-named top-level user ranges, else a
    pattern of repeating top-level names on each process's busiest non-autograd thread; each process numbers its
    own steps 1, 2, ... in start order."""
    top = [r for r in top_level_user_ranges(pa) if not r["library"]]  # TensorRT's layers: no steps
    steps = [dict(name=r["text"], source="range", pid=r["pid"], gtid=r["gtid"], start=r["start"], end=r["end"])
             for r in top if STEP_NAME.fullmatch(r["text"])]
    if not steps:
        per_thread = defaultdict(list)
        for r in top:
            if not (pa.thread_name.get(r["gtid"]) or "").startswith("pt_autograd"):
                per_thread[r["gtid"]].append(r)
        mains = {}
        for gtid, rs in per_thread.items():
            key = (-len(rs), -sum(r["end"] - r["start"] for r in rs), gtid)
            pid = pid_of(gtid)
            if pid not in mains or key < mains[pid][0]:
                mains[pid] = (key, gtid)
        for pid, (_, gtid) in mains.items():
            seq = sorted(per_thread[gtid], key=lambda r: (r["start"], r["id"]))
            names = [r["text"] for r in seq]
            anchor = next((n for n in names if names.count(n) >= 2), None)
            if anchor is None:
                continue
            current = None
            for r in seq:
                if r["text"] == anchor:
                    current = dict(name=anchor, source="pattern", pid=pid, gtid=gtid, start=r["start"], end=r["end"])
                    steps.append(current)
                elif current is not None:
                    current["end"] = max(current["end"], r["end"])
    steps.sort(key=lambda s: (s["start"], s["pid"], s["gtid"]))
    count: dict[int, int] = defaultdict(int)
    for s in steps:
        count[s["pid"]] += 1
        s["step"] = count[s["pid"]]
    return sorted(steps, key=lambda s: (s["step"], s["pid"]))


def ops_in_steps(pa: PlainAttribution, steps):
    """{step index (0-based): [(kind, rowid, start, end, launching gtid)]}: ops whose launching call lies in the
    step's span on any thread of its process (the latest-starting such step)."""
    found = defaultdict(list)
    for kind, rowid, s, e, pid, corr in pa.ops:
        call = pa.calls.get((pid, corr))
        if call is None:
            continue
        cs, ce, gtid = call
        inside = [i for i, st in enumerate(steps) if st["pid"] == pid and st["start"] <= cs and ce <= st["end"]]
        if inside:
            found[max(inside, key=lambda i: steps[i]["start"])].append((kind, rowid, s, e, gtid))
    return found


def user_range_paths(pa: PlainAttribution):
    """{range id: path} for every user range: enclosing user texts joined by '/', a top-level step name dropped
    (unless the range is the step itself)."""
    paths = {}
    for rs in pa.by_thread.values():
        stack = []
        for r in sorted((r for r in rs if r["user"]), key=lambda r: (r["start"], -r["end"], r["id"])):
            while stack and not (stack[-1]["start"] <= r["start"] and stack[-1]["end"] >= r["end"]):
                stack.pop()
            stack.append(r)
            paths[r["id"]] = pa.path(list(stack))
    return paths


def op_instances(pa: PlainAttribution, kernel_names):
    """{op-marker range id: (marker text, [(kernel rowid, duration, kernel name)])}: kernels grouped by the
    innermost op marker (not an evaluate_function wrapper) around their launching call."""
    found = {}
    for kind, rowid, s, e, pid, corr in pa.ops:
        call = pa.calls.get((pid, corr)) if kind == "kernel" else None
        if call is None:
            continue
        markers = [r for r in pa.stack(call[2], call[0], call[1]) if r["marker"] and not r["text"].startswith(EVAL)]
        if markers:
            m = markers[-1]
            found.setdefault(m["id"], (m["text"], []))[1].append((rowid, e - s, kernel_names[rowid]))
    return found


def kernel_names(path):
    """{kernel rowid: demangled name}."""
    db, _, strings = read_export(path)
    return {rowid: strings[n] for rowid, n in db.execute("SELECT rowid, demangledName FROM CUPTI_ACTIVITY_KIND_KERNEL")}


# ---------------------------------------------------------------------------------------------
# Ground truth of backward inference: a capture with op markers in its last profiled step only.
# ---------------------------------------------------------------------------------------------
class PlainBackwardTruth:
    """The profiled steps' backward passes of a `--op-ranges-last` capture, and the true layer of each op.

    A step's backward pass: its GPU ops whose launching call lies inside the `profiled_step` range and on
    another thread (PyTorch's autograd thread), in call order. The marked step's ops reach their forward
    op through the seq link (the plain walk's rules), so its op at position i names the true layer of
    position i of every plain step that ran the same ops (name, grid, block) in the same order."""

    def __init__(self, path):
        plain = PlainAttribution(path)
        rows = {(k, r): (d, layer, seq) for k, r, d, layer, _op, _params, seq in plain.attribute()}
        self.rows = rows  # every op: (direction, layer, seq) by rules 1-6
        self.durations = {(o[0], o[1]): o[3] - o[2] for o in plain.ops}
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        strings = dict(db.execute("SELECT id, value FROM StringIds"))
        shape = {}
        for rowid, name, *launch in db.execute(
                "SELECT rowid, demangledName, gridX, gridY, gridZ, blockX, blockY, blockZ "
                "FROM CUPTI_ACTIVITY_KIND_KERNEL"):
            shape[("kernel", rowid)] = (strings[name], *launch)
        for kind, table, what in (("memcpy", "CUPTI_ACTIVITY_KIND_MEMCPY", "copyKind"),
                                  ("memset", "CUPTI_ACTIVITY_KIND_MEMSET", "memKind")):
            if db.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (table,)).fetchone():
                for rowid, value in db.execute(f"SELECT rowid, {what} FROM {table}"):
                    shape[(kind, rowid)] = (kind, value)
        steps = [r for r in plain.ranges if r["user"] and r["text"] == "profiled_step"]
        self.passes = []  # per step: [dict(key, signature, duration_ns, direction, layer, seq)]
        for step in sorted(steps, key=lambda r: r["start"]):
            ops = []
            for kind, rowid, s, e, pid, corr in plain.ops:
                call = plain.calls.get((pid, corr))
                if call is None or call[2] == step["gtid"] or not step["start"] <= call[0] <= step["end"]:
                    continue
                direction, layer, seq = rows[(kind, rowid)]
                if direction == "bprop":
                    ops.append((call[0], kind, rowid, dict(key=(kind, rowid), signature=shape[(kind, rowid)],
                                                          duration_ns=e - s, layer=layer, seq=seq)))
            self.passes.append([op for *_, op in sorted(ops, key=lambda o: o[:3])])
        marked = [p for p in self.passes if any(op["seq"] is not None for op in p)]
        assert len(marked) == 1, f"{path}: {len(marked)} profiled steps with op markers, expected one"
        self.marked = marked[0]
        self.truth = [op["layer"] if op["seq"] is not None else None for op in self.marked]
        self.plain = [p for p in self.passes if p is not self.marked]

    def same_as_marked(self, ops) -> bool:
        return [op["signature"] for op in ops] == [op["signature"] for op in self.marked]
