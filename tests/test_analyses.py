"""Analyses checked against a plain Python reading of the raw export (tests/plainwalk.py)."""
from __future__ import annotations

from collections import defaultdict

import pytest

from plainwalk import Plain, union_length


@pytest.fixture(scope="module")
def cases(export_files, opened):
    """Every golden export with NVTX ranges (a capture without NVTX has no ranges to compare)."""
    return [(opened[i], Plain(p)) for i, p in export_files.items() if opened[i].has("nvtx_range")]


def test_gpu_time_by_range_matches_brute_force(cases):
    for ex, plain in cases:
        incl, excl, proj = defaultdict(set), defaultdict(list), defaultdict(lambda: defaultdict(list))
        for op in plain.ops:
            call = plain.runtime.get((op[3], op[4]))
            if call is None:
                continue
            rs = plain.enclosing(call)
            for r in rs:
                incl[r[1]].add(op)
                proj[r[1]][r[0]].append(op)
            if rs:
                excl[plain.innermost(call)[1]].append(op)
        got = {row["range_name"]: row for row in ex.gpu_time_by_range().iter_rows(named=True)}
        assert set(got) == set(incl)
        for name, ops in incl.items():
            row = got[name]
            assert row["inclusive_busy_ns"] == union_length([(o[1], o[2]) for o in ops]), name
            assert row["exclusive_busy_ns"] == union_length([(o[1], o[2]) for o in excl.get(name, [])]), name
            assert row["kernels"] == sum(1 for o in ops if o[0] == "kernel"), name
            spans = [max(o[2] for o in v) - min(o[1] for o in v) for v in proj[name].values()]
            assert row["projected_ns"] == sum(spans) and row["instances"] == len(spans), name


def test_launch_overhead_matches(cases):
    for ex, plain in cases:
        df = ex.launch_overhead()
        expected = []
        for kind, s, e, pid, corr, _ in plain.ops:
            call = plain.runtime.get((pid, corr)) if kind == "kernel" else None
            if call:
                expected.append((call[1] - call[0], max(s - call[1], 0), e - s))
        assert df.height == len(expected)
        assert df["api_ns"].sum() == sum(x[0] for x in expected)
        assert df["queue_ns"].sum() == sum(x[1] for x in expected)
        assert df["kernel_ns"].sum() == sum(x[2] for x in expected)
        assert (df["queue_ns"] >= 0).all()


def test_gpu_busy_is_union_of_all_ops(cases):
    """Per GPU: the union of its ops (an export of several ranks has several GPUs, each busy on its own)."""
    for ex, plain in cases:
        util = ex.run("analysis.gpu_utilization")
        per_device = defaultdict(list)
        for op, device in zip(plain.ops, plain.op_devices):
            per_device[device].append((op[1], op[2]))
        assert dict(zip(util["device_id"], util["busy_ns"])) == {
            device: union_length(intervals) for device, intervals in per_device.items()}


def test_memcpy_totals(cases):
    for ex, plain in cases:
        df = ex.memcpy()
        copies = [o for o in plain.ops if o[0] == "memcpy"]
        sets = [o for o in plain.ops if o[0] == "memset"]
        got_copies = df.filter(df["copy_kind"] != "Memset")
        assert got_copies["count"].sum() == len(copies)
        assert got_copies["total_bytes"].sum() == sum(o[5] for o in copies)
        assert got_copies["total_ns"].sum() == sum(o[2] - o[1] for o in copies)
        assert df.filter(df["copy_kind"] == "Memset")["count"].sum() == len(sets)


def test_range_depth_and_parent_match_containment(cases):
    for ex, plain in cases:
        got = {r["range_id"]: r for r in ex.ranges().iter_rows(named=True)}
        for rowid, name, s, e, gtid in plain.ranges:
            # every other range of the thread holding it (plain.enclosing: the thread's ranges with start <= s and
            # end >= e, in the thread's order, found through an index instead of a scan of all of them per range)
            containers = [r for r in plain.enclosing((s, e, gtid, None)) if r[0] != rowid]
            assert got[rowid]["depth"] == len(containers), name
            if containers:
                tightest = min(containers, key=lambda r: (r[3] - r[2], -r[2]))
                assert got[rowid]["parent_id"] == tightest[0], name
            else:
                assert got[rowid]["parent_id"] is None


def test_coverage_adds_up(cases):
    for ex, plain in cases:
        cov = ex.run("analysis.range_coverage")
        kernels = [o for o in plain.ops if o[0] == "kernel"]
        assert cov["kernel_ns"].sum() == sum(o[2] - o[1] for o in kernels)
        none = sum(o[2] - o[1] for o in kernels
                   if not (plain.runtime.get((o[3], o[4])) and plain.enclosing(plain.runtime[(o[3], o[4])])))
        assert cov["in_no_range_ns"].sum() == none
        assert (cov["in_user_range_ns"] + cov["in_op_marker_only_ns"] + cov["in_no_range_ns"]
                == cov["kernel_ns"]).all()
