"""A time window of one export, or of the ranks of one job, as Chrome trace-event JSON (the format the Perfetto UI and
chrome://tracing load; https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU).

Tracks: per thread, its NVTX push/pop ranges and CUDA API calls (complete events, `X`, which nest); start/end
ranges and ranges ending on another thread as async events (`b`/`e`) of their process; per GPU stream its ops
(kernels, copies, sets, graph executions) in a process of their own per GPU; a flow arrow (`s` -> `f`) from each
launching call to its op, where both are in the window; the steps as async events; the findings as global instant
events at the window's start. Several exports of one job sit side by side on the first export's clock.
Timestamps are microseconds since the first export's first event (`ts` 0), with nanosecond decimals.
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import polars as pl

from nsysql.answers.tracedata import Events, Window, gather, shift_of, steps_on_clock
from nsysql.errors import NsysqlError

GPU_PID_BASE = 10_000_000  # above Linux's largest pid (2^22): the GPUs' tracks never share a host process's pid
JOB_PID_STRIDE = 20_000_000  # a job's later exports, where their host pids repeat the first's


def build(exports: list, names: list[str], window: Window, findings: pl.DataFrame | None = None) -> dict:
    """The trace as a dict: {"traceEvents": [...], "displayTimeUnit": "ns", "otherData": {...}}."""
    def us(ns: int) -> float:
        return round((ns - window.origin) / 1000, 3)

    events: list[dict] = []
    seen_pids: set[int] = set()
    flow_id = 0
    async_id = 0
    offsets = [0] * len(exports)
    for i, (ex, name) in enumerate(zip(exports, names)):
        ev: Events = gather(ex, window.lo, window.hi)
        label = f"{name}: " if len(exports) > 1 else ""
        host = sorted(set(ev.ranges["pid"].to_list()) | set(ev.calls["pid"].to_list())
                      | set(ev.ops["pid"].to_list()))
        offset = offsets[i] = JOB_PID_STRIDE * i if seen_pids & set(host) else 0
        seen_pids |= {p + offset for p in host}
        for pid in host:
            events.append(_meta("process_name", pid + offset, None, f"{label}process {pid}"))
            events.append(_meta("process_sort_index", pid + offset, None, sort_index=i * 1000))
        threads = pl.concat([ev.ranges.select("pid", "tid", "thread_name"), ev.calls.select("pid", "tid", "thread_name")]
                            ).unique(["pid", "tid"]).sort("pid", "tid")
        for pid, tid, thread_name in threads.iter_rows():
            events.append(_meta("thread_name", pid + offset, tid, f"{thread_name} ({tid})"))
        # NVTX ranges: push/pop ranges nest on their thread; the others overlap freely, as async events
        for r in ev.ranges.iter_rows(named=True):
            args = {"domain": r["domain"] or None, "op_marker": r["is_op_marker"] or None}
            cat = "nvtx.op_marker" if r["is_op_marker"] else "nvtx"
            if r["nested"]:
                events.append(_slice(r["text"], cat, r["pid"] + offset, r["tid"], us(r["start_ns"]),
                                     us(r["end_ns"]) - us(r["start_ns"]), args))
            else:
                async_id += 1
                base = {"name": r["text"], "cat": cat, "pid": r["pid"] + offset, "tid": r["tid"], "id": async_id}
                events.append({**base, "ph": "b", "ts": us(r["start_ns"]), "args": _clean(args)})
                events.append({**base, "ph": "e", "ts": us(r["end_ns"])})
        call_at = {}
        for c in ev.calls.iter_rows(named=True):
            events.append(_slice(c["name"], "cuda_api", c["pid"] + offset, c["tid"], us(c["start_ns"]),
                                 us(c["end_ns"]) - us(c["start_ns"]), {"correlation_id": c["correlation_id"]}))
            call_at[c["runtime_id"]] = c
        # GPU ops: a process per GPU, a thread per stream
        gpus = sorted(set(ev.ops["device_id"].to_list()))
        for d in gpus:
            gpid = GPU_PID_BASE + i * 1000 + d
            events.append(_meta("process_name", gpid, None, f"{label}GPU {d}"))
            events.append(_meta("process_sort_index", gpid, None, sort_index=i * 1000 + 500 + d))
        for d, s in ev.ops.select("device_id", "stream_id").unique().sort("device_id", "stream_id").iter_rows():
            events.append(_meta("thread_name", GPU_PID_BASE + i * 1000 + d, s, f"stream {s}"))
        for o in ev.ops.iter_rows(named=True):
            gpid, start, end = GPU_PID_BASE + i * 1000 + o["device_id"], us(o["start_ns"]), us(o["end_ns"])
            args = {"kind": o["op_kind"], "direction": o["direction"], "layer": o["layer"], "op": o["op"],
                    "seq": o["seq"], "bytes": o["bytes"], "correlation_id": o["correlation_id"],
                    "launch": o["launch_api"], "full_name": o["full_name"] if o["full_name"] != o["name"] else None}
            events.append(_slice(o["name"], f"gpu.{o['op_kind']}", gpid, o["stream_id"], start, end - start, args))
            call = call_at.get(o["runtime_id"])
            if call is not None:  # the arrow binds to the slices around its ends: the call's and the op's middles
                flow_id += 1
                c0, c1 = us(call["start_ns"]), us(call["end_ns"])
                events.append({"ph": "s", "id": flow_id, "cat": "launch", "name": "launch", "pid": call["pid"] + offset,
                               "tid": call["tid"], "ts": round((c0 + c1) / 2, 3)})
                events.append({"ph": "f", "bp": "e", "id": flow_id, "cat": "launch", "name": "launch", "pid": gpid,
                               "tid": o["stream_id"], "ts": round((start + end) / 2, 3)})
    # steps: an async track per process, each step a slice (warm-up steps say so)
    steps = steps_on_clock(exports)
    steps = steps.filter((pl.col("source") != "gpu_span") & (pl.col("end_ns") >= window.lo)
                         & (pl.col("start_ns") <= window.hi))
    for s in steps.iter_rows(named=True):
        async_id += 1
        pid = s["pid"] + offsets[s["export"]]
        base = {"name": f"step {s['step']}", "cat": "step", "pid": pid, "tid": s["tid"], "id": async_id}
        events.append({**base, "ph": "b", "ts": us(s["start_ns"]),
                       "args": {"range": s["name"], "analysed": s["analysed"], "wall_ns": s["wall_ns"]}})
        events.append({**base, "ph": "e", "ts": us(s["end_ns"])})
    for f in (findings.iter_rows(named=True) if findings is not None else []):
        events.append({"ph": "i", "s": "g", "name": f["title"], "cat": "finding", "pid": 0, "tid": 0,
                       "ts": us(window.lo), "args": _clean({k: f.get(k) for k in
                                                           ("rule", "where", "evidence", "action", "recoverable_ns")})})
    return {"traceEvents": events, "displayTimeUnit": "ns",
            "otherData": {"generator": "nsysql perfetto", "exports": names, "window": window.what,
                          "origin_ns": window.origin, "from_ns": window.lo, "to_ns": window.hi,
                          "clock_shifts_ns": [shift_of(ex) for ex in exports]}}


def write(trace: dict, output: Path) -> Path:
    """Write the trace: gzip-compressed when the name ends in .gz (both UIs open .json.gz)."""
    if output.suffix not in (".json", ".gz"):
        raise NsysqlError(f"{output}: name the trace file .json or .json.gz")
    data = json.dumps(trace, separators=(",", ":")).encode()
    if output.suffix == ".gz":
        with gzip.open(output, "wb", compresslevel=6) as out:
            out.write(data)
    else:
        output.write_bytes(data)
    return output


def _meta(kind: str, pid: int, tid: int | None, name: str | None = None, sort_index: int | None = None) -> dict:
    args = {"name": name} if name is not None else {"sort_index": sort_index}
    return {"ph": "M", "name": kind, "pid": pid, **({"tid": tid} if tid is not None else {}), "args": args}


def _slice(name: str, cat: str, pid: int, tid: int, ts: float, dur: float, args: dict) -> dict:
    return {"ph": "X", "name": name, "cat": cat, "pid": pid, "tid": tid, "ts": ts, "dur": round(max(dur, 0), 3),
            "args": _clean(args)}


def _clean(args: dict) -> dict:
    return {k: v for k, v in args.items() if v is not None}
