"""`nsysql perfetto`: the trace file is well-formed Chrome trace-event JSON (every event, begin/end balanced per
track, slices nest per track, flows resolve) and its events are the raw rows of the export (per track: count and
summed duration from a plain sqlite3 walk), the steps of a window, and a job's ranks on one clock."""
from __future__ import annotations

import gzip
import json
import sqlite3
from collections import defaultdict

import pytest
from typer.testing import CliRunner

from nsysql.answers.perfetto import GPU_PID_BASE, JOB_PID_STRIDE
from nsysql.cli.app import app

from conftest import FIXTURES, unxz

GPT = FIXTURES / "gpt-tiny-train-annotated" / "export.sqlite.xz"
RANKS = [FIXTURES / "ddp-2gpu-rank0" / "export.sqlite.xz", FIXTURES / "ddp-2gpu-rank1" / "export.sqlite.xz"]
TORCHRUN = FIXTURES / "ddp-2gpu-torchrun" / "export.sqlite.xz"
GRAPHS = FIXTURES / "cuda-graphs-graph" / "export.sqlite.xz"


def run_trace(tmp_path, *args) -> dict:
    out = tmp_path / "trace.json.gz"
    result = CliRunner().invoke(app, ["perfetto", *map(str, args), "-o", str(out),
                                      "--cache-dir", str(tmp_path / "cache")])
    assert result.exit_code == 0, result.output
    with gzip.open(out) as f:
        return json.load(f)


def check_well_formed(trace: dict) -> None:
    """The trace-event format's rules, as the Perfetto UI's JSON importer reads them."""
    events = trace["traceEvents"]
    assert events
    slices = defaultdict(list)  # (pid, tid) -> [(start, end)]
    asyncs: dict = {}
    flows: dict = defaultdict(dict)
    for e in events:
        assert e["ph"] in {"X", "b", "e", "s", "f", "i", "M"}, e
        assert isinstance(e["pid"], int), e
        if e["ph"] == "M":
            assert e["name"] in {"process_name", "thread_name", "process_sort_index"} and "args" in e
            continue
        assert isinstance(e["tid"], int) and isinstance(e["ts"], (int, float)) and e["ts"] >= 0, e
        assert isinstance(e["name"], str) and e["name"], e
        if e["ph"] == "X":
            assert e["dur"] >= 0
            slices[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"]))
        elif e["ph"] in "be":
            key = (e["pid"], e["cat"], e["id"])
            if e["ph"] == "b":
                assert key not in asyncs, f"async id reused: {e}"
                asyncs[key] = e["ts"]
            else:
                assert key in asyncs, f"end without begin: {e}"
                assert e["ts"] >= asyncs.pop(key)
        elif e["ph"] in "sf":
            assert e["id"] not in flows[e["ph"]], f"flow id reused: {e}"
            flows[e["ph"]][e["id"]] = e
    assert not asyncs, f"{len(asyncs)} async begins without an end"
    for track, spans in slices.items():  # complete events nest on their track, as a stack
        stack: list[float] = []
        for start, end in sorted(spans, key=lambda s: (s[0], -s[1])):
            while stack and stack[-1] <= start:
                stack.pop()
            assert not stack or end <= stack[-1] + 1e-6, f"slices overlap on track {track}: {start}-{end}"
            stack.append(end)
    assert flows["s"].keys() == flows["f"].keys(), "every flow starts and ends once"
    for ends in flows.values():
        for e in ends.values():  # each end binds to a slice open at its time on its track
            assert any(s <= e["ts"] <= t for s, t in slices[(e["pid"], e["tid"])]), f"flow end outside a slice: {e}"


def raw(path, tmp_path):
    return sqlite3.connect(unxz(path, tmp_path / (path.parent.name + ".sqlite")))


def pid_of(global_id: int) -> int:
    return (global_id >> 24) & 0xFFFFFF


def tid_of(global_id: int) -> int:
    return global_id & 0xFFFFFF


def plain_tracks(db, lo: int, hi: int, shift: int = 0) -> dict:
    """{track kind and key: (count, summed ns)} of the raw rows overlapping [lo, hi] (the first export's clock)."""
    tracks: dict = defaultdict(lambda: [0, 0])
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    where = "WHERE end + ? >= ? AND start + ? <= ?"
    bounds = (shift, lo, shift, hi)
    for table in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
                  "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"):
        if table in tables:
            for s, e, dev, stream in db.execute(f"SELECT start, end, deviceId, streamId FROM {table} {where}", bounds):
                t = tracks[("gpu", dev, stream)]
                t[0] += 1
                t[1] += e - s
    for s, e, g in db.execute(f"SELECT start, end, globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME {where}", bounds):
        t = tracks[("api", pid_of(g), tid_of(g))]
        t[0] += 1
        t[1] += e - s
    for s, e, g in db.execute(f"SELECT start, end, globalTid FROM NVTX_EVENTS {where} AND eventType = 59 "
                              "AND endGlobalTid IS NULL", bounds):
        t = tracks[("nvtx", pid_of(g), tid_of(g))]
        t[0] += 1
        t[1] += e - s
    return {k: tuple(v) for k, v in tracks.items()}


def trace_tracks(trace: dict, export: int = 0, pid_offset: int = 0, host_pids=None) -> dict:
    """The same per-track count and summed ns, read from the trace's complete events of one export (its host
    tracks: those of `host_pids`, moved by `pid_offset`, where given)."""
    tracks: dict = defaultdict(lambda: [0, 0])
    for e in trace["traceEvents"]:
        if e["ph"] != "X":
            continue
        dur = round(e["dur"] * 1000)
        if e["cat"].startswith("gpu."):
            if not GPU_PID_BASE + export * 1000 <= e["pid"] < GPU_PID_BASE + (export + 1) * 1000:
                continue
            key = ("gpu", e["pid"] - GPU_PID_BASE - export * 1000, e["tid"])
        else:
            kind = "api" if e["cat"] == "cuda_api" else "nvtx"
            key = (kind, e["pid"] - pid_offset, e["tid"])
            if host_pids is not None and key[1] not in host_pids:
                continue
        tracks[key][0] += 1
        tracks[key][1] += dur
    return {k: tuple(v) for k, v in tracks.items()}


def test_gpt_steps_as_the_raw_rows(tmp_path):
    trace = run_trace(tmp_path, GPT, "--steps", "2-3")
    check_well_formed(trace)
    db = raw(GPT, tmp_path)
    # the window: steps 2 and 3, the 2nd and 3rd top-level `profiled_step` ranges
    steps = db.execute("SELECT n.start, n.end FROM NVTX_EVENTS AS n LEFT JOIN StringIds AS s ON s.id = n.textId "
                       "WHERE COALESCE(n.text, s.value) = 'profiled_step' ORDER BY n.start").fetchall()
    assert len(steps) == 3
    lo, hi = steps[1][0], steps[2][1]
    other = trace["otherData"]
    assert (other["from_ns"], other["to_ns"]) == (lo, hi)
    expected = plain_tracks(db, lo, hi)
    assert trace_tracks(trace) == expected
    assert sum(v[0] for k, v in expected.items() if k[0] == "gpu") > 500  # the steps' kernels are there
    # the step markers: steps 2 and 3 (the window's edges), as async slices of the step's process
    marks = sorted((e["name"], e["ts"]) for e in trace["traceEvents"] if e.get("cat") == "step" and e["ph"] == "b")
    assert [m[0] for m in marks] == ["step 2", "step 3"]
    origin = other["origin_ns"]
    assert [m[1] for m in marks] == [round((s - origin) / 1000, 3) for s, _ in steps[1:]]
    # flows: one per GPU op whose launching call is in the window, from that call to that op
    flows = [e for e in trace["traceEvents"] if e["ph"] == "f"]
    ops = [e for e in trace["traceEvents"] if e["ph"] == "X" and e["cat"].startswith("gpu.")]
    assert len(flows) == sum(1 for o in ops if "launch" in o["args"])
    assert all(o["args"]["direction"] in {"fprop", "bprop", "optim", "comm", "other"} for o in ops)
    assert {o["args"]["direction"] for o in ops} >= {"fprop", "bprop", "optim"}
    assert any(e["ph"] == "i" and e["cat"] == "finding" for e in trace["traceEvents"])


def test_processes_of_one_export_and_cuda_graphs(tmp_path):
    for path in (TORCHRUN, GRAPHS):
        trace = run_trace(tmp_path, path)
        check_well_formed(trace)
        other = trace["otherData"]
        assert trace_tracks(trace) == plain_tracks(raw(path, tmp_path), other["from_ns"], other["to_ns"])
    gpus = {e["args"]["name"] for e in trace["traceEvents"] if e["ph"] == "M" and e["name"] == "process_name"}
    assert any(name.startswith("GPU ") for name in gpus)


def test_ranks_of_one_job_on_one_clock(tmp_path):
    trace = run_trace(tmp_path, *RANKS, "--steps", "2")
    check_well_formed(trace)
    other = trace["otherData"]
    shifts = other["clock_shifts_ns"]
    assert shifts[0] == 0 and shifts[1] != 0
    dbs = [raw(p, tmp_path) for p in RANKS]
    pids = [{e["pid"] for e in trace["traceEvents"] if e["ph"] == "M" and e["name"] == "process_name"
             and e["args"]["name"].startswith(f"ddp-2gpu-rank{i}: process")} for i in range(2)]
    assert all(pids), "each rank's process is named after its export"
    for i, db in enumerate(dbs):
        host = {pid_of(g) for (g,) in db.execute("SELECT globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME LIMIT 1")}
        offset = 0 if host & pids[i] else JOB_PID_STRIDE * i  # pids repeated across exports are moved
        got = trace_tracks(trace, export=i, pid_offset=offset, host_pids=host)
        assert got == plain_tracks(db, other["from_ns"], other["to_ns"], shifts[i]), f"rank {i}"
    # on one clock: the all-reduces of the step end together on both ranks (the last arrival releases them)
    ends = []
    for i in range(2):
        ends.append(sorted(e["ts"] + e["dur"] for e in trace["traceEvents"] if e["ph"] == "X"
                           and "AllReduce" in e.get("args", {}).get("full_name", e["name"])
                           and GPU_PID_BASE + i * 1000 <= e["pid"] < GPU_PID_BASE + (i + 1) * 1000))
    assert ends[0] and len(ends[0]) == len(ends[1])
    assert max(abs(a - b) for a, b in zip(*ends)) < 100  # µs; their sessions started ~1 s apart


@pytest.mark.parametrize("args, message", [
    (["--steps", "9"], "numbered 1 to 3"),
    (["--steps", "x"], "--steps"),
    (["--window", "5-1"], "--window"),
    (["--steps", "1", "--window", "1-2"], "not both"),
])
def test_bad_options_say_what_is_wrong(tmp_path, args, message):
    result = CliRunner().invoke(app, ["perfetto", str(GPT), "-o", str(tmp_path / "t.json.gz"), *args,
                                      "--cache-dir", str(tmp_path / "cache")])
    assert result.exit_code == 1
    assert message in result.output and "Traceback" not in result.output
