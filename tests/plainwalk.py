"""A slow, plainly written reading of an nsys export with sqlite3 and Python loops.

It shares no code or SQL with nsysql: tests compare nsysql's answers with what this computes
directly from the raw rows (brute-force range containment, interval unions by sorting).
"""
from __future__ import annotations

import sqlite3
from collections import defaultdict


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
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        strings = dict(db.execute("SELECT id, value FROM StringIds"))
        self.runtime = {}
        for start, end, gtid, corr, name_id in db.execute(
                "SELECT start, end, globalTid, correlationId, nameId FROM CUPTI_ACTIVITY_KIND_RUNTIME"):
            pid = (gtid >> 24) & 0xFFFFFF
            self.runtime[(pid, corr)] = (start, end, gtid, strings[name_id])
        self.ops = []  # (kind, start, end, pid, corr, bytes)
        for kind, table in (("kernel", "CUPTI_ACTIVITY_KIND_KERNEL"), ("memcpy", "CUPTI_ACTIVITY_KIND_MEMCPY"),
                            ("memset", "CUPTI_ACTIVITY_KIND_MEMSET")):
            if table in tables:
                cols = "start, end, globalPid, correlationId, " + ("0" if kind == "kernel" else "bytes")
                for s, e, gpid, corr, nbytes in db.execute(f"SELECT {cols} FROM {table}"):
                    self.ops.append((kind, s, e, (gpid >> 24) & 0xFFFFFF, corr, nbytes))
        max_ts = db.execute("SELECT MAX(MAX(start, COALESCE(end, start))) FROM NVTX_EVENTS "
                            "WHERE eventType IN (59, 60, 70, 71)").fetchone()[0]
        domains = {}  # (pid, domainId) -> name, from domain-create events (eventType 75)
        for gtid, dom, text, tid_ in db.execute(
                "SELECT globalTid, domainId, text, textId FROM NVTX_EVENTS WHERE eventType = 75 ORDER BY start"):
            domains.setdefault(((gtid >> 24) & 0xFFFFFF, dom), text if text is not None else strings.get(tid_, ""))
        self.ranges = []  # (rowid, name, start, end, gtid)
        for rowid, s, e, gtid, text, tid_, dom in db.execute(
                "SELECT n.rowid, n.start, n.end, n.globalTid, n.text, n.textId, n.domainId FROM NVTX_EVENTS n "
                "WHERE eventType IN (59, 60, 70, 71) AND endGlobalTid IS NULL"):
            body = text if text is not None else strings.get(tid_, "")
            domain = domains.get(((gtid >> 24) & 0xFFFFFF, dom), "")
            self.ranges.append((rowid, f"{domain}:{body or ''}", s, e if e is not None else max_ts, gtid))
        self.by_thread = defaultdict(list)
        for r in self.ranges:
            self.by_thread[r[4]].append(r)

    def enclosing(self, call):
        start, end, gtid, _ = call
        return [r for r in self.by_thread.get(gtid, []) if r[2] <= start and r[3] >= end]

    def innermost(self, call):
        rs = self.enclosing(call)
        return min(rs, key=lambda r: (r[3] - r[2], -r[2])) if rs else None


# ---------------------------------------------------------------------------------------------
# Kernel attribution (nsysql kernels / layers), written from the rules in the docs, plainly.
# ---------------------------------------------------------------------------------------------
import re  # noqa: E402

LIBRARY_DOMAINS = {"CCCL", "NCCL", "cuBLAS", "cuBLASLt", "cuDNN", "cuFFT", "cuSPARSE", "cuSOLVER", "NVSHMEM",
                   "TensorRT", "CUTLASS"}
STEP_NAME = re.compile(r"(profiled_step|((train|training|eval|inference)_)?(step|iteration|iter)([ _#-]?[0-9]+)?"
                       r"|ProfilerStep#[0-9]+)", re.IGNORECASE)
EVAL = "autograd::engine::evaluate_function: "


def is_op_marker(text: str) -> bool:
    return (", op_id = " in text or ", seq = " in text or text.startswith(EVAL)
            or text.startswith("Optimizer.step#") or text.startswith("Optimizer.zero_grad#"))


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
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        strings = dict(db.execute("SELECT id, value FROM StringIds"))
        self.thread_name = {}
        if "ThreadNames" in tables:
            for gtid, name_id in db.execute("SELECT globalTid, nameId FROM ThreadNames"):
                self.thread_name.setdefault(gtid, strings.get(name_id))
        self.calls = {}
        for start, end, gtid, corr in db.execute(
                "SELECT start, end, globalTid, correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME"):
            self.calls[((gtid >> 24) & 0xFFFFFF, corr)] = (start, end, gtid)
        self.ops = []  # (kind, rowid, start, end, pid, corr)
        for kind, table in (("kernel", "CUPTI_ACTIVITY_KIND_KERNEL"), ("memcpy", "CUPTI_ACTIVITY_KIND_MEMCPY"),
                            ("memset", "CUPTI_ACTIVITY_KIND_MEMSET")):
            if table in tables:
                for rowid, s, e, gpid, corr in db.execute(
                        f"SELECT rowid, start, end, globalPid, correlationId FROM {table}"):
                    self.ops.append((kind, rowid, s, e, (gpid >> 24) & 0xFFFFFF, corr))
        self.ops.sort(key=lambda o: (o[2], o[0], o[1]))
        last = db.execute("SELECT MAX(MAX(start, COALESCE(end, start))) FROM NVTX_EVENTS "
                          "WHERE eventType IN (59, 60, 70, 71)").fetchone()[0]
        domains = {}
        for gtid, dom, text, tid_ in db.execute(
                "SELECT globalTid, domainId, text, textId FROM NVTX_EVENTS WHERE eventType = 75 ORDER BY start"):
            domains.setdefault(((gtid >> 24) & 0xFFFFFF, dom), text if text is not None else strings.get(tid_, ""))
        # range: dict(id, text, start, end, gtid, pid, user, marker)
        self.ranges = []
        for rowid, s, e, gtid, text, tid_, dom in db.execute(
                "SELECT rowid, start, end, globalTid, text, textId, domainId FROM NVTX_EVENTS "
                "WHERE eventType IN (59, 60, 70, 71) AND endGlobalTid IS NULL ORDER BY rowid"):
            body = (text if text is not None else strings.get(tid_)) or ""
            domain = domains.get(((gtid >> 24) & 0xFFFFFF, dom), "")
            marker = is_op_marker(body)
            self.ranges.append(dict(id=rowid, text=body, start=s, end=e if e is not None else last, gtid=gtid,
                                    pid=(gtid >> 24) & 0xFFFFFF, marker=marker,
                                    user=not marker and domain not in LIBRARY_DOMAINS))
        self.by_thread = defaultdict(list)
        for r in self.ranges:
            self.by_thread[r["gtid"]].append(r)

    def stack(self, gtid, start, end):
        """Ranges of thread `gtid` enclosing [start, end], outermost first."""
        rs = [r for r in self.by_thread.get(gtid, []) if r["start"] <= start and r["end"] >= end]
        return sorted(rs, key=lambda r: (r["start"], -r["end"], r["id"]))

    def path(self, user_stack):
        texts = [r["text"] for r in user_stack]
        if len(texts) > 1 and STEP_NAME.fullmatch(texts[0]):
            texts = texts[1:]
        return "/".join(texts) if texts else None

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
        best = None
        for r in self.ranges:
            if r["pid"] != pid or not r["marker"] or seq_of(r["text"]) != seq or r["start"] > before:
                continue
            if any(x["text"].startswith(EVAL) for x in self.stack(r["gtid"], r["start"], r["end"])):
                continue
            if best is None or r["start"] > best["start"]:
                best = r
        return best

    def borrowed(self, pid, gtid, start, end):
        if any(r["user"] for r in self.by_thread.get(gtid, [])):
            return None
        found = []
        for other, rs in self.by_thread.items():
            if other == gtid or (other >> 24) & 0xFFFFFF != pid:
                continue
            st = [r for r in self.stack(other, start, end) if r["user"]]
            if st:
                found.append(st)
        return found[0] if len(found) == 1 else None

    def attribute(self):
        """[(kind, rowid, direction, layer, op, params, seq)] in GPU start order."""
        out = []
        for kind, rowid, s, e, pid, corr in self.ops:
            call = self.calls.get((pid, corr))
            if call is None:
                out.append((kind, rowid, "other", "?", None, None, None))
                continue
            cs, ce, gtid = call
            st = self.stack(gtid, cs, ce)
            users = [r for r in st if r["user"]]
            markers = [r for r in st if r["marker"] and not r["text"].startswith(EVAL)]
            evals = [r for r in st if r["text"].startswith(EVAL)]
            optim = any((r["user"] and "optim" in r["text"].lower()) or r["text"].startswith("Optimizer.step#")
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
            if layer is None and users:
                layer = self.path(users)
            if layer is None and lent:
                layer = self.path(lent)
            if optim:
                direction = "optim"
            elif backward or (self.thread_name.get(gtid) or "").startswith("pt_autograd_"):
                direction = "bprop"
            elif st:
                direction = "fprop"
            elif lent:
                if any("optim" in r["text"].lower() for r in lent):
                    direction = "optim"
                elif any("backward" in r["text"].lower() for r in lent):
                    direction = "bprop"
                else:
                    direction = "fprop"
            else:
                direction = "other"
            out.append((kind, rowid, direction, layer or "?", op, params, seq))
        return out
