"""critical-path and what-if on hand-built exports with a known critical path (issue 34, docs/critical-path.md).

scripts/make_critical_path_cases.py builds each export and states its expected answer, worked out by hand from
the doc's rules in the case's docstring; nothing here is read back from nsysql. Every analysed step of a case
has the same path, written in ns after the step's start.
"""
from __future__ import annotations

import io
import sqlite3
import subprocess
import sys
from collections import Counter

import polars as pl
import pytest
from typer.testing import CliRunner

import nsysql
from nsysql.cli.app import app

from conftest import load_script

# every hand-made case built and summarized: tens of seconds; dealt out first under xdist (conftest.py)
pytestmark = pytest.mark.heavy

cp = load_script("scripts/make_critical_path_cases.py")
runner = CliRunner()
COMPOSITION = [f"{kind}_ns" for kind in cp.KINDS]
WHAT_IFS = [(name, scales) for name, case in cp.CASES.items() for scales in case.what_if]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """{case: (path of its export, the opened export)}, built and opened once for the module."""
    directory = tmp_path_factory.mktemp("critical_path_cases")
    cache = directory / "cache"
    out = {}
    for name, case in cp.CASES.items():
        path = case.build().write(directory / f"{name}.sqlite")
        out[name] = (path, nsysql.open(path, cache_dir=cache))
    yield out, cache
    for _, ex in out.values():
        ex.close()


def several(case) -> bool:
    return len(case.paths) > 1


def expected_steps(case) -> list[dict]:
    """One row per analysed step, ordered by (step, pid)."""
    rows = []
    for step in range(1, len(case.step_starts) + 1):
        for pid in sorted(case.paths):
            path = case.paths[pid]
            row = {"step": step, **({"pid": pid} if several(case) else {}), "wall_ns": path.wall_ns,
                   "path_ns": path.wall_ns}
            row.update({f"{kind}_ns": ns for kind, ns in path.composition.items()})
            rows.append(row)
    return rows


def expected_items(case) -> list[dict]:
    """The items of every analysed step's path, in time order, timestamps absolute."""
    rows = []
    for step, start in enumerate(case.step_starts, 1):
        for pid in sorted(case.paths):
            for item in case.paths[pid].items:
                rows.append({"step": step, **({"pid": pid} if several(case) else {}), "on_pid": item.on_pid,
                             "kind": item.kind, "name": item.name, "start_ns": start + item.start,
                             "end_ns": start + item.end})
    return rows


def expected_what_if(case, scales) -> list[dict]:
    rows = []
    for step in range(1, len(case.step_starts) + 1):
        for pid in sorted(case.paths):
            rows.append({"step": step, **({"pid": pid} if several(case) else {}),
                         "measured_ns": case.paths[pid].wall_ns, "predicted_ns": case.what_if[scales][pid]})
    return rows


def picked(df: pl.DataFrame, columns: list[str], order: list[str] | None = None) -> list[dict]:
    """df's rows restricted to `columns` (all must be there), sorted by `order` when given (stable)."""
    missing = [c for c in columns if c not in df.columns]
    assert not missing, f"columns {missing} missing from {df.columns}"
    out = df.select(columns)
    if order:
        out = out.sort(order, maintain_order=True)
    return out.to_dicts()


def item_columns(case, df: pl.DataFrame) -> list[str]:
    """The item columns compared: on_pid (the process an item ran on) must be there with several processes;
    with one it is compared where the frame has it."""
    on_pid = ["on_pid"] if several(case) or "on_pid" in df.columns else []
    return ["step", *(["pid"] if several(case) else []), *on_pid, "kind", "name", "start_ns", "end_ns"]


def expected_items_in(case, df: pl.DataFrame) -> list[dict]:
    columns = item_columns(case, df)
    return [{k: v for k, v in row.items() if k in columns} for row in expected_items(case)]


def by_step(rows: list[dict], case) -> list[dict]:
    """Items grouped by (step, pid), each group kept in its own order (the path's time order)."""
    keys = ["step", "pid"] if several(case) else ["step"]
    return sorted(rows, key=lambda r: tuple(r[k] for k in keys))


# -- the expectations themselves: the hand-worked numbers are consistent ---------------------------------------------
@pytest.mark.parametrize("name", list(cp.CASES))
def test_expected_paths_are_contiguous_and_add_up(name):
    for pid, path in cp.CASES[name].paths.items():
        items = path.items
        assert items[0].start == 0 and items[-1].end == path.wall_ns, (pid, "the path spans the step")
        for before, after in zip(items, items[1:]):
            assert before.end == after.start, (pid, before, after)
            assert before.start < before.end, (pid, before)
            assert (before.kind, before.name, before.on_pid) != (after.kind, after.name, after.on_pid) \
                or before.kind == "cpu", (pid, "consecutive intervals of one node are one item", before, after)
        by_kind = Counter()
        for item in items:
            assert item.kind in cp.KINDS, item
            by_kind[item.kind] += item.end - item.start
        assert {k: by_kind.get(k, 0) for k in cp.KINDS} == path.composition, pid
        assert sum(path.composition.values()) == path.wall_ns, pid


def test_script_writes_every_case(tmp_path):
    proc = subprocess.run([sys.executable, str(cp.__file__), str(tmp_path / "out")], capture_output=True, text=True,
                          check=True)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(f"{name}.sqlite" for name in cp.CASES)
    assert len(proc.stdout.splitlines()) == len(cp.CASES)


# -- the exports read as the cases say (passes before critical-path exists) ------------------------------------------
def raw(path, sql: str) -> list[tuple]:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


@pytest.mark.parametrize("name", list(cp.CASES))
def test_export_reads_as_the_case_says(built, name):
    (path, ex), case = built[0][name], cp.CASES[name]
    steps = ex.run("analysis.steady_steps").sort(["pid", "step"]).to_dicts()
    assert [(s["pid"], s["step"], s["start_ns"], s["end_ns"], s["analysed"]) for s in steps] == [
        (pid, k, start, start + case.paths[pid].wall_ns, True)
        for pid in sorted(case.paths) for k, start in enumerate(case.step_starts, 1)]
    kernels = raw(path, "SELECT s.value, k.start FROM CUPTI_ACTIVITY_KIND_KERNEL AS k "
                        "JOIN StringIds AS s ON s.id = k.demangledName ORDER BY k.start, s.value")
    assert ex.kernels().sort(["start_ns", "kernel_name"]).select("kernel_name", "start_ns").rows() == kernels
    syncs = raw(path, "SELECT start, streamId, correlationId FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION ORDER BY start") \
        if name in ("cross_stream_wait", "sync", "launch_overlap", "carry_over") else []
    assert ex.sql("SELECT start_ns, stream_id, correlation_id FROM sync ORDER BY start_ns").rows() == syncs
    waits = raw(path, "SELECT start, \"end\" FROM OSRT_API ORDER BY start") if name == "thread_wakeup" else []
    assert ex.sql("SELECT start_ns, end_ns FROM osrt ORDER BY start_ns").rows() == waits


def test_stream_waits_name_their_event_records(built):
    # cross_stream_wait: each cudaStreamWaitEvent's row names the cudaEventRecord of its step by eventSyncId
    path = built[0]["cross_stream_wait"][0]
    pairs = raw(path, "SELECT w.correlationId, w.streamId, e.correlationId, e.streamId "
                      "FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION AS w "
                      "JOIN CUPTI_ACTIVITY_KIND_CUDA_EVENT AS e USING (eventSyncId) ORDER BY w.start")
    assert pairs == [(3, 13, 2, 7), (103, 13, 102, 7)]


def test_the_two_ranks_all_reduces_are_matched(built):
    ex = built[0]["two_ranks"][1]
    waits = ex.run("analysis.comm_waits").sort(["step", "pid"])
    assert waits.select("step", "pid", "matched", "start_ns", "last_start_ns").rows() == [
        (k, pid, True, start + (13000 if pid == cp.P else 58000), start + 58000)
        for k, start in enumerate(cp.STEP_STARTS, 1) for pid in (cp.P, cp.RANK1)]


# -- critical-path and what-if (the library) -------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(cp.CASES))
def test_critical_path_per_step(built, name):
    ex, case = built[0][name][1], cp.CASES[name]
    expected = expected_steps(case)
    assert picked(ex.critical_path(), list(expected[0]), list(expected[0])[:2 if several(case) else 1]) == expected


@pytest.mark.parametrize("name", list(cp.CASES))
def test_critical_path_items(built, name):
    ex, case = built[0][name][1], cp.CASES[name]
    df = ex.critical_path(items=True)
    assert "layer" in df.columns
    assert by_step(picked(df, item_columns(case, df)), case) == expected_items_in(case, df)


@pytest.mark.parametrize(("name", "scales"), WHAT_IFS, ids=[f"{n}-{' '.join(s)}" for n, s in WHAT_IFS])
def test_what_if(built, name, scales):
    ex, case = built[0][name][1], cp.CASES[name]
    expected = expected_what_if(case, scales)
    assert picked(ex.what_if(list(scales)), list(expected[0]), list(expected[0])[:2 if several(case) else 1]) \
        == expected


# -- the same through the command line -------------------------------------------------------------------------------
def cli_csv(built, *args: str) -> pl.DataFrame:
    res = runner.invoke(app, [*args, "-f", "csv", "--cache-dir", str(built[1])], env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    return pl.read_csv(io.StringIO(res.stdout))  # notes (e.g. a table the export lacks) go to stderr


@pytest.mark.parametrize("name", list(cp.CASES))
def test_cli_critical_path_csv(built, name):
    path, case = built[0][name][0], cp.CASES[name]
    expected = expected_steps(case)
    df = cli_csv(built, "critical-path", str(path))
    assert picked(df, list(expected[0]), list(expected[0])[:2 if several(case) else 1]) == expected
    items = cli_csv(built, "critical-path", str(path), "--items")
    assert by_step(picked(items, item_columns(case, items)), case) == expected_items_in(case, items)


def test_cli_critical_path_one_step(built):
    path, case = built[0]["gpu_bound"][0], cp.CASES["gpu_bound"]
    items = cli_csv(built, "critical-path", str(path), "--step", "2", "--items")
    assert picked(items, item_columns(case, items)) == [r for r in expected_items_in(case, items) if r["step"] == 2]


@pytest.mark.parametrize("name", list(cp.CASES))
def test_cli_what_if_csv(built, name):
    path, case = built[0][name][0], cp.CASES[name]
    scales = [s for s in case.what_if if s != cp.IDENTITY][0]
    expected = expected_what_if(case, scales)
    df = cli_csv(built, "what-if", str(path), *[a for s in scales for a in ("--scale", s)])
    assert picked(df, list(expected[0]), list(expected[0])[:2 if several(case) else 1]) == expected


@pytest.mark.parametrize("name", list(cp.CASES))
def test_summarize_says_the_hand_made_bound(built, name):
    """summarize -f json's `critical_path` is the mean of the hand-made compositions, and its line names each group
    (CPU = cpu + launch, GPU, copies, sync waits, communication) with its share, largest first, rounded to 1%."""
    path, case = built[0][name][0], cp.CASES[name]
    res = runner.invoke(app, ["summarize", str(path), "-f", "json", "--cache-dir", str(built[1])])
    assert res.exit_code == 0, res.output
    import json
    got = json.loads(res.stdout)["critical_path"]
    rows = expected_steps(case)
    assert got["steps"] == len(rows)
    assert got["mean_per_step"] == {c: sum(r[c] for r in rows) // len(rows) for c in ["path_ns", *COMPOSITION]}
    total = sum(r["path_ns"] for r in rows)
    groups = {"CPU": ("cpu", "launch"), "GPU": ("gpu_compute",), "copies": ("copy",), "sync waits": ("sync_wait",),
              "communication": ("comm_transfer", "comm_wait")}
    shares = sorted(((sum(r[f"{k}_ns"] for r in rows for k in kinds), label) for label, kinds in groups.items()),
                    key=lambda x: -x[0])
    named = [f"{label} {100 * ns / total:.0f}%" for ns, label in shares if 100 * ns / total >= 1]
    line = got["line"]
    assert line.startswith("Bound by (critical path): ")
    positions = [line.find(text) for text in named]
    assert all(p > 0 for p in positions) and positions == sorted(positions), (line, named)
