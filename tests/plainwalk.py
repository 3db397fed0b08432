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
