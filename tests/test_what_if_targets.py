"""What-if's targets are checked (issue 41): each scale says what it matched per step, counted here again from the
raw export; one that matches nothing is a one-line error naming the closest targets; `cpu:thread NAME` scales
the thread's work outside every range, as `critical-path` names it."""
from __future__ import annotations

import bisect
import json
import sqlite3

import polars as pl
import pytest
from typer.testing import CliRunner

import nsysql
from nsysql.answers import what_if as wi
from nsysql.cli.app import app
from nsysql.errors import NsysqlError

runner = CliRunner()


@pytest.fixture(scope="module")
def plain(fixture_sqlite):
    """name -> the fixture's export as a plain .sqlite (tests/conftest.py)."""
    return fixture_sqlite


@pytest.fixture(scope="module")
def ex(plain, cache_dir):
    handles = {}

    def get(name: str):
        if name not in handles:
            handles[name] = nsysql.open(plain(name), cache_dir=cache_dir)
        return handles[name]
    yield get
    for h in handles.values():
        h.close()


def _raw(path, sql, args=()):
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return con.execute(sql, args).fetchall()
    finally:
        con.close()


def _ranges(path, text):
    return _raw(path, "SELECT n.start, n.end FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId "
                      "WHERE COALESCE(n.text, s.value) = ? AND n.end IS NOT NULL ORDER BY n.start", (text,))


def _cli(*argv, cache_dir, env=None):
    return runner.invoke(app, [*map(str, argv), "--cache-dir", str(cache_dir)], env=env or {"COLUMNS": "80"})


def test_range_matched_is_each_steps_own_range(ex, plain):
    """range:dataloader matches one span a step holding the step's `dataloader` range, to the nanosecond."""
    path = plain("whatif-cnn-base")
    steps = _ranges(path, "profiled_step")
    loading = _ranges(path, "dataloader")
    df = ex("whatif-cnn-base").what_if(["range:dataloader=0"], matched=True)
    assert df.height == len(steps) == 8
    for row in df.iter_rows(named=True):
        start, end = steps[row["step"] - 1]
        inside = [b - a for a, b in loading if start <= a and b <= end]
        assert row["matched"] == [{"scale": "range:dataloader=0", "items": 1, "ns": inside[0]}], row


def test_kernel_matched_counts_the_raw_kernels(ex, plain):
    """kernel:GLOB matches the kernels of that (demangled) name starting in each step, and their time in it: the
    raw CUPTI kernel rows, matched by SQLite's case-sensitive GLOB, clipped to the step."""
    path = plain("whatif-cnn-base")
    steps = _ranges(path, "profiled_step")
    kernels = _raw(path, "SELECT k.start, k.end FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s "
                         "ON s.id = k.demangledName WHERE s.value GLOB '*gemm*'")
    df = ex("whatif-cnn-base").what_if(["kernel:*gemm*=0.5"], matched=True)
    checked = 0
    for row in df.iter_rows(named=True):
        start, end = steps[row["step"] - 1]
        items = sum(1 for a, _ in kernels if start <= a < end)
        ns = sum(max(0, min(b, end) - max(a, start)) for a, b in kernels)
        assert row["matched"][0]["items"] == items and row["matched"][0]["ns"] == ns, row
        checked += items
    assert checked > 100


def _woken_waits(path, tid: int) -> list[tuple[int, int]]:
    """The thread's blocking OS-runtime waits (outermost) that another thread of its process woke: the call of the
    process (CUDA or OS runtime, outermost) ending last before the wait's end, ties to the lowest thread id, ended
    inside it on another thread (docs/critical-path.md, blocking OS-runtime waits). Read from the raw rows."""
    import re
    blocking = re.compile(r"^(pthread_cond_(timed)?wait|pthread_join|pthread_mutex_(timed)?lock|sem_(timed)?wait|futex)$")
    pid = (tid >> 24) & 0xFFFFFF
    rows = _raw(path, "SELECT o.start, o.end, o.globalTid, s.value, o.nestingLevel FROM OSRT_API o "
                      "JOIN StringIds s ON s.id = o.nameId WHERE (o.globalTid >> 24) & 16777215 = ?", (pid,))
    events = sorted([(e, g) for _, e, g, _, level in rows if level == 0]
                    + _raw(path, "SELECT end, globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME "
                                 "WHERE (globalTid >> 24) & 16777215 = ?", (pid,)))
    ends = [e for e, _ in events]
    out = []
    for s, e, g, name, level in rows:
        if g != tid or level != 0 or not blocking.match(name):
            continue
        i = bisect.bisect_left(ends, e) - 1  # the last event ending strictly before the wait's end
        if i < 0:
            continue
        j = bisect.bisect_left(ends, ends[i])  # of those ending then, the lowest thread id
        if ends[j] > s and events[j][1] != tid:
            out.append((s, e))
    return out


def test_cpu_thread_is_the_threads_work_outside_every_range(ex, plain):
    """`critical-path` names the autograd thread's work outside its ranges `thread pt_autograd_0`; pasted as
    `cpu:thread pt_autograd_0` it matches that work: within each step, the thread's span (its first to its last
    CUDA or OS-runtime call) less its NVTX ranges and less its waits another thread woke (their time is the
    waker's: no factor shortens them), from the raw rows."""
    name = "cnn-pinned-launch-bound"
    path = plain(name)
    items = ex(name).critical_path(items=True)
    assert ((items["kind"] == "cpu") & (items["name"] == "thread pt_autograd_0")).any()
    (tid,) = _raw(path, "SELECT globalTid FROM ThreadNames t JOIN StringIds s ON s.id = t.nameId "
                        "WHERE s.value = 'pt_autograd_0'")[0]
    events = _raw(path, "SELECT MIN(start), MAX(end) FROM (SELECT start, end FROM CUPTI_ACTIVITY_KIND_RUNTIME "
                        "WHERE globalTid = ? UNION ALL SELECT start, end FROM OSRT_API WHERE globalTid = ?)",
                  (tid, tid))[0]
    ranges = _raw(path, "SELECT start, end FROM NVTX_EVENTS WHERE globalTid = ? AND end IS NOT NULL "
                        "AND eventType = 59", (tid,))
    woken = _woken_waits(path, tid)
    assert woken  # the case the rule is about
    steps = _ranges(path, "profiled_step")
    df = ex(name).what_if(["cpu:thread pt_autograd_0=0"], matched=True)
    assert df.height == len(steps)
    for row in df.iter_rows(named=True):
        lo, hi = steps[row["step"] - 1]
        lo, hi = max(lo, events[0]), min(hi, events[1])
        covered = sorted((max(a, lo), min(b, hi)) for a, b in ranges + woken if min(b, hi) > max(a, lo))
        outside, reach = 0, lo
        for a, b in covered:  # the union of the thread's ranges and woken waits in the window
            outside += max(0, b - max(a, reach))
            reach = max(reach, b)
        assert row["matched"][0]["ns"] == (hi - lo) - outside, row
        assert row["matched"][0]["items"] >= 1, row  # a span overlapping the step counts in it
    assert (df["predicted_ns"] < df["measured_ns"]).any()  # the thread's work is on the path: removing it saves


@pytest.mark.parametrize("scale, said", [
    ("range:nonexistent=0", "'range:"),
    ("range:DataLoader=0", "closest: 'range:dataloader'"),  # case matters; the right case comes first
    ("range:thread pt_autograd_0=0", "'cpu:thread pt_autograd_0'"),  # a thread is no range: the cpu target
    ("cpu:pt_autograd_0=0", "closest: 'cpu:thread pt_autograd_0'"),
    ("kernel:conv=0.5", "closest: 'kernel:*conv*'"),  # part of kernel names: the glob that holds them
])
def test_a_scale_that_matches_nothing_is_a_one_line_error_naming_the_closest(scale, said, plain, cache_dir):
    res = _cli("what-if", plain("cnn-pinned-launch-bound"), "--scale", scale, cache_dir=cache_dir)
    assert res.exit_code == 1, res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and "matches nothing in this export; closest: " in lines[0], res.output
    assert said in lines[0] and "Traceback" not in res.output, res.output


def test_the_api_checks_too(ex):
    with pytest.raises(NsysqlError, match="matches nothing"):
        ex("cnn-pinned-launch-bound").what_if(["range:nonexistent=0"])
    df = ex("cnn-pinned-launch-bound").what_if(["range:nonexistent=0"], check=False)
    assert (df["predicted_ns"] == df["measured_ns"]).all()


@pytest.mark.parametrize("scale, said", [
    ("cpu thread pt_autograd_0=0", "here 'cpu:thread pt_autograd_0=0'"),  # as the path's summary line prints it
    ("launch:cudaLaunchKernel=0", "scaled as 'api:cudaLaunchKernel=0'"),  # a path item's kind
    ("gpu_compute:*gemm*=0.5", "scaled as 'kernel:*gemm*=0.5'"),
])
def test_what_the_path_prints_leads_to_its_target(scale, said):
    with pytest.raises(NsysqlError) as e:
        wi.parse(scale)
    assert said in str(e.value)


def test_bracketed_names_match_as_written(ex):
    """A copy's name holds brackets, a glob's character class: the name as written matches it."""
    df = ex("whatif-cnn-base").what_if(["copy:[CUDA memcpy Host-to-Device]=0"], matched=True)
    assert all(m[0]["items"] >= 1 for m in df["matched"])


def test_the_output_says_what_each_scale_matched(plain, cache_dir):
    path = plain("whatif-cnn-base")
    res = _cli("what-if", path, "--scale", "range:dataloader=0", "--scale", "kernel:*gemm*=0.5", cache_dir=cache_dir)
    assert res.exit_code == 0, res.output
    out = res.stdout.splitlines()
    assert max(len(line) for line in out) <= 80
    at = out.index("Matched, mean per step of 8:")
    assert out[at + 1].split()[:3] == ["range:dataloader=0", "1", "span"], out
    assert out[at + 2].split()[:1] == ["kernel:*gemm*=0.5"] and "kernels" in out[at + 2], out
    said = " ".join(res.output.split())  # the note on stderr says what removing CPU work assumes
    assert "note: range:dataloader=0 takes that CPU work away; moved to another thread" in said
    assert "the GIL and CPU contention are not modelled" in said
    res = _cli("what-if", path, "--scale", "range:dataloader=0", "-f", "json", cache_dir=cache_dir)
    rows = json.loads(res.stdout)
    assert all(r["matched"][0]["scale"] == "range:dataloader=0" and r["matched"][0]["items"] == 1 for r in rows)
    res = _cli("what-if", path, "--scale", "range:dataloader=0", "-f", "csv", cache_dir=cache_dir)
    assert res.stdout.splitlines()[0] == "step,measured_ns,predicted_ns"


def test_a_job_says_what_matched_on_each_rank(ex):
    df = ex("ddp-2gpu-torchrun").what_if(["range:dataloader=0"], matched=True)
    assert df["pid"].n_unique() == 2
    assert all(m[0]["items"] == 1 for m in df["matched"]), df
    assert df.filter(pl.col("step") == 2)["matched"].list.eval(pl.element().struct.field("ns")).explode().max() \
        > 20_000_000  # rank 1's planted 25 ms sleep
