"""The critical path and what-if on real captures (docs/critical-path.md): the path covers each step exactly, each
item is what the raw rows say it is, the fixtures whose bound is known give it, and the replay reproduces the
capture unchanged. Hand-built cases with exact expected paths: tests/test_critical_path_cases.py."""
from __future__ import annotations

import bisect
import csv
import io
import json
import re
import sqlite3
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from nsysql.answers import critical_path as cp
from nsysql.cli.app import app

runner = CliRunner()
KIND_COLUMNS = ["cpu_ns", "launch_ns", "gpu_compute_ns", "copy_ns", "sync_wait_ns", "comm_transfer_ns", "comm_wait_ns"]
NO_CUDA = {"cpu-nvtx-osrt-nsys2022.4"}  # no CUDA calls: nothing to walk


def _walked(opened):
    return sorted(k for k in opened if k not in NO_CUDA)


def _raw(path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def test_every_fixture_path_is_the_step_and_its_items_tile_it(opened):
    for key in _walked(opened):
        ex = opened[key]
        comp = ex.critical_path()
        assert comp.height > 0, key
        assert (comp["path_ns"] == comp["wall_ns"]).all(), key
        assert (comp.select(pl.sum_horizontal(KIND_COLUMNS)).to_series() == comp["path_ns"]).all(), key
        steps = ex.run("analysis.steady_steps").filter(pl.col("analysed"))
        items = ex.critical_path(items=True)
        keys = ["step", "pid"] if "pid" in items.columns else ["step"]
        for row in steps.iter_rows(named=True):
            sel = items.filter(pl.col("step") == row["step"])
            if "pid" in items.columns:
                sel = sel.filter(pl.col("pid") == row["pid"])
            starts, ends = sel["start_ns"].to_list(), sel["end_ns"].to_list()
            # the path is walked over the step's range (its own launches), also when the CPU runs ahead
            assert starts[0] == row["range_start_ns"] and ends[-1] == row["range_end_ns"], (key, row["step"])
            assert all(a == b for a, b in zip(ends, starts[1:])), (key, row["step"])  # contiguous, no overlap
            assert all(a < b for a, b in zip(starts, ends)), key
        assert set(items["kind"]) <= set(cp.KINDS), key
        assert keys[0] == "step"


def test_one_step_on_its_own_graph_is_that_step_of_the_whole(opened):
    """`--step N` builds the graph of the step's span only: its path, item by item, and its unchanged replay are
    those of step N walked on the whole export's graph, on every fixture (first, middle and last analysed step)."""
    for key in _walked(opened):
        ex = opened[key]
        whole = ex.critical_path(items=True)
        numbers = sorted(set(whole["step"].to_list()))
        for number in dict.fromkeys([numbers[0], numbers[len(numbers) // 2], numbers[-1]]):
            one = ex.critical_path(step=number, items=True)
            assert one.equals(whole.filter(pl.col("step") == number)), (key, number)
            replay = ex.what_if([], step=number)
            assert (replay["measured_ns"] == replay["predicted_ns"]).all(), (key, number)


def test_graph_queries_of_a_window_are_the_whole_answer_cut_to_it(opened):
    """The `analysis._cp_*` queries read a window ($lo_ns, $hi_ns: what summarize's sample and `--step N` build)
    and give exactly the rows of their whole answer that overlap it, on every fixture (the middle step's span, and
    one that starts before the capture)."""
    from nsysql.answers import cp_graph
    for key in _walked(opened):
        ex = opened[key]
        steps = ex.run("analysis._cp_steps").filter(pl.col("analysed"))
        middle = steps.filter(pl.col("step") == steps["step"].to_list()[steps.height // 2])
        for window in (cp.span(middle), (0, int(middle["end_ns"].max()))):  # type: ignore[arg-type]
            for query in ("analysis._cp_calls", "analysis._cp_ops", "analysis._cp_os_waits", "analysis._cp_ranges"):
                table = {"analysis._cp_os_waits": "osrt", "analysis._cp_ranges": "nvtx_range"}.get(query)
                if table and not ex.has(table):
                    continue
                cut = cp_graph._in(ex.run(query), window)
                assert ex.run(query, **cp_graph.bounds(window)).equals(cut), (key, query, window)


def test_the_sample_holds_what_its_span_holds(opened):
    """analysis._cp_sample_load's count per step is the CUDA calls and GPU ops starting in the span of that step
    and the later ones (counted here from the graph queries' own rows)."""
    for key in _walked(opened):
        ex = opened[key]
        steps = ex.run("analysis._cp_steps").filter(pl.col("analysed"))
        starts = sorted(ex.run("analysis._cp_calls")["start_ns"].to_list() + ex.run("analysis._cp_ops")["start_ns"].to_list())
        load = ex.run("analysis._cp_sample_load")
        assert load["step"].to_list() == sorted(set(steps["step"].to_list()), reverse=True), key
        for number, events in load.iter_rows():
            lo, hi = cp.span(steps.filter(pl.col("step") >= number))
            assert events == bisect.bisect_right(starts, hi) - bisect.bisect_left(starts, lo), (key, number)


def test_replay_without_change_is_the_capture(opened):
    for key in _walked(opened):
        df = opened[key].what_if([])
        assert (df["measured_ns"] == df["predicted_ns"]).all(), key
        one = opened[key].what_if(["kernel:*=1", "range:*=1"], check=False)  # (a capture without ranges)
        assert (one["measured_ns"] == one["predicted_ns"]).all(), key


def _short(api: str) -> str:
    """An API name as nsys stats prints it: a 4-digit `_vNNNN` suffix dropped (cudaLaunchKernel_v7000)."""
    return re.sub(r"_v\d{4}$", "", api)


def _intervals(con, sql, short=False):
    rows = sorted(r[:3] + (_short(r[3]),) if short else r for r in con.execute(sql).fetchall())
    return [r[0] for r in rows], [r[1] for r in rows], [r[2:] for r in rows]


def _inside(index, pid, a, b, name=None) -> bool:
    """Whether [a, b] lies in one interval of `index` of process `pid` (named `name`, when given)."""
    starts, ends, rest = index
    i = bisect.bisect_right(starts, a)
    for j in range(i - 1, max(i - 5000, -1), -1):
        if starts[j] <= a and b <= ends[j] and rest[j][0] == pid and (name is None or rest[j][1] == name):
            return True
    return False


@pytest.mark.parametrize("key", ["cnn-dataloader-train", "cnn-pinned-train", "ddp-2gpu-torchrun"])
def test_items_are_what_the_raw_rows_say(key, opened, export_files):
    """Each GPU item lies inside a kernel, copy or set of its process; each CPU item named by a range lies inside
    an NVTX range of that text; each call item inside a CUDA call of that name (raw tables, read by sqlite3)."""
    if key not in opened:
        pytest.skip(f"fixtures/{key} absent")
    con = _raw(export_files[key])
    pid = "(globalPid >> 24) & 16777215"
    gpu = _intervals(con, f"SELECT start, end, {pid} FROM CUPTI_ACTIVITY_KIND_KERNEL UNION ALL "
                          f"SELECT start, end, {pid} FROM CUPTI_ACTIVITY_KIND_MEMCPY UNION ALL "
                          f"SELECT start, end, {pid} FROM CUPTI_ACTIVITY_KIND_MEMSET")
    ranges = _intervals(con, "SELECT n.start, n.end, (n.globalTid >> 24) & 16777215, COALESCE(n.text, s.value) "
                             "FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId "
                             "WHERE n.eventType = 59 AND n.end IS NOT NULL")
    calls = _intervals(con, "SELECT r.start, r.end, (r.globalTid >> 24) & 16777215, s.value "
                            "FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId", short=True)
    items = opened[key].critical_path(items=True)
    on = "on_pid" if "on_pid" in items.columns else None
    the_pid = opened[key].run("analysis.steady_steps")["pid"][0]
    checked = {"gpu": 0, "cpu": 0, "call": 0}
    for it in items.iter_rows(named=True):
        p = it[on] if on else the_pid
        a, b = it["start_ns"], it["end_ns"]
        if it["kind"] in ("gpu_compute", "copy", "comm_transfer", "comm_wait"):
            assert _inside(gpu, p, a, b), it
            checked["gpu"] += 1
        elif it["kind"] == "cpu" and not it["name"].startswith(("thread ", "(")):
            assert _inside(ranges, p, a, b, it["name"]), it
            checked["cpu"] += 1
        elif it["kind"] == "launch" and not it["name"].startswith("("):
            # a call's own time and the latency between it and its op: it starts in (or at the end of) that call
            assert _starts_in(calls, p, a, it["name"]), it
            checked["call"] += 1
    assert min(checked.values()) > 0, checked


def _starts_in(index, pid, t, name) -> bool:
    starts, ends, rest = index
    i = bisect.bisect_right(starts, t)
    return any(starts[j] <= t <= ends[j] and rest[j] == (pid, name) for j in range(i - 1, max(i - 5000, -1), -1))


def _share(comp, cols, rows=None):
    df = comp if rows is None else comp.filter(pl.col("step").is_in(rows))
    return sum(int(df[c].sum()) for c in cols) / int(df["path_ns"].sum())


def test_known_bounds(opened):
    """The launch-bound CNN is CPU-bound; the pinned CNN is GPU-bound once its launch queue is full (steps 5-8,
    fixtures/README.md); the DataLoader CNN is bound by `dataloader`."""
    needed = ("cnn-pinned-launch-bound", "cnn-pinned-train", "cnn-dataloader-train")
    if not all(k in opened for k in needed):
        pytest.skip("CNN fixtures absent")
    cpu = ["cpu_ns", "launch_ns"]
    assert _share(opened["cnn-pinned-launch-bound"].critical_path(), cpu) > 0.9
    pinned = opened["cnn-pinned-train"].critical_path()
    assert _share(pinned, ["gpu_compute_ns", "copy_ns"], [5, 6, 7, 8]) > 0.9
    assert _share(pinned, cpu, [1, 2, 3]) > 0.9  # the CPU runs ahead of an empty queue first
    ex = opened["cnn-dataloader-train"]
    items = ex.critical_path(items=True).with_columns((pl.col("end_ns") - pl.col("start_ns")).alias("ns"))
    top = items.group_by("kind", "name").agg(pl.col("ns").sum()).sort("ns", descending=True).row(0, named=True)
    assert (top["kind"], top["name"]) == ("cpu", "dataloader")
    assert top["ns"] / ex.critical_path()["path_ns"].sum() > 0.5


def test_the_waiting_rank_path_runs_through_the_straggler(opened):
    key = "ddp-2gpu-torchrun"
    if key not in opened:
        pytest.skip(f"fixtures/{key} absent")
    ex = opened[key]
    comm = ex.run("analysis.comm")
    items = ex.critical_path(items=True).with_columns((pl.col("end_ns") - pl.col("start_ns")).alias("ns"))
    for step in comm["step"].unique().to_list():
        late = comm.filter((pl.col("step") == step) & pl.col("straggler"))["pid"].to_list()
        waiting = comm.filter((pl.col("step") == step) & ~pl.col("straggler"))["pid"].to_list()
        assert len(late) == 1 and len(waiting) == 1
        path = items.filter((pl.col("step") == step) & (pl.col("pid") == waiting[0]))
        on_late = path.filter(pl.col("on_pid") == late[0])
        assert on_late["ns"].sum() > 0.5 * path["ns"].sum(), step
        if step == 2:  # the planted 25 ms sleep in the late rank's dataloader is on the waiting rank's path
            sleep = on_late.filter((pl.col("kind") == "cpu") & (pl.col("name") == "dataloader"))["ns"].sum()
            assert sleep > 20_000_000


def _dataloader_ns(con, steps) -> dict[int, int]:
    """Per step, the time of `dataloader` ranges inside it, by a plain walk of NVTX_EVENTS."""
    ranges = con.execute("SELECT n.start, n.end FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId "
                         "WHERE COALESCE(n.text, s.value) = 'dataloader' AND n.eventType = 59").fetchall()
    return {r["step"]: sum(max(0, min(e, r["end_ns"]) - max(s, r["start_ns"])) for s, e in ranges)
            for r in steps.iter_rows(named=True)}


def test_what_if_removes_at_most_what_it_scales(opened, export_files):
    key = "cnn-dataloader-train"
    if key not in opened:
        pytest.skip(f"fixtures/{key} absent")
    ex = opened[key]
    loading = _dataloader_ns(_raw(export_files[key]), ex.run("analysis.steady_steps").filter(pl.col("analysed")))
    df = ex.what_if(["range:dataloader=0"])
    for row in df.iter_rows(named=True):
        saved = row["measured_ns"] - row["predicted_ns"]
        assert 0 < saved <= loading[row["step"]], row
    findings = ex.findings()
    gain = findings.filter(pl.col("rule") == "dataloader_wait")["predicted_gain_ns"][0]
    assert 0 < gain <= sum(loading.values())
    half = ex.what_if(["kernel:*=0.5"])
    assert (half["predicted_ns"] <= half["measured_ns"]).all()


def test_predicted_gains_never_exceed_the_bound(opened):
    """A gain is how much of its finding's bound the path gives back: the replay of a cause removed wholesale may
    save more (all CPU work for GPU idle on the DDP capture), and the gain is then the bound."""
    from nsysql.answers import what_if
    for key in ("ddp-2gpu-torchrun", "cnn-dataloader-train", "whatif-cnn-base"):
        if key not in opened:
            continue
        df = opened[key].findings()
        for row in df.iter_rows(named=True):
            assert row["predicted_gain_ns"] is None or row["predicted_gain_ns"] <= row["recoverable_ns"], (key, row)
    if "ddp-2gpu-torchrun" in opened:
        ex = opened["ddp-2gpu-torchrun"]
        idle = ex.findings().filter(pl.col("rule") == "gpu_idle_in_step")
        raw = what_if.predicted_gains(ex, idle)[0]
        assert raw is not None and raw > idle["recoverable_ns"][0] == idle["predicted_gain_ns"][0]


def test_cli_csv_columns_and_errors(export_files, cache_dir):
    key = "ddp-2gpu-torchrun"
    if key not in export_files:
        pytest.skip(f"fixtures/{key} absent")
    p = str(export_files[key])
    res = runner.invoke(app, ["critical-path", p, "-f", "csv", "--cache-dir", str(cache_dir)])
    assert res.exit_code == 0, res.output
    header = next(csv.reader(io.StringIO(res.stdout)))
    assert header == ["step", "pid", "wall_ns", "path_ns", *KIND_COLUMNS]
    res = runner.invoke(app, ["what-if", p, "--scale", "wait:*=0", "-f", "csv", "--cache-dir", str(cache_dir)])
    assert res.exit_code == 0, res.output
    assert next(csv.reader(io.StringIO(res.stdout))) == ["step", "pid", "measured_ns", "predicted_ns"]
    res = runner.invoke(app, ["critical-path", p, "--items", "--step", "2", "-f", "csv", "--cache-dir", str(cache_dir)])
    assert next(csv.reader(io.StringIO(res.stdout))) == ["step", "pid", "on_pid", "kind", "name", "layer", "start_ns",
                                                         "end_ns"]
    for bad, said in ((["--scale", "kernel:*"], "TARGET:PATTERN=FACTOR"), (["--scale", "disk:*=1"], "unknown target"),
                      (["--scale", "kernel:*=-1"], "0 or more"), (["--scale", "kernel:*=x"], "not a number")):
        res = runner.invoke(app, ["what-if", p, *bad, "--cache-dir", str(cache_dir)])
        assert res.exit_code == 1 and said in res.output and "Traceback" not in res.output, res.output
    res = runner.invoke(app, ["critical-path", p, "--step", "99", "--cache-dir", str(cache_dir)])
    assert res.exit_code == 1 and "no step 99" in res.output


def test_table_fits_80_columns(export_files, cache_dir):
    key = "cnn-dataloader-train"
    if key not in export_files:
        pytest.skip(f"fixtures/{key} absent")
    for argv in (["critical-path"], ["critical-path", "--items", "--step", "3"],
                 ["what-if", "--scale", "range:dataloader=0"]):
        res = runner.invoke(app, [argv[0], str(export_files[key]), *argv[1:], "--cache-dir", str(cache_dir)],
                            env={"COLUMNS": "80"})
        assert res.exit_code == 0, res.output
        assert max(len(line) for line in res.stdout.splitlines()) <= 80, argv


def test_job_items_table_fits_80_columns_with_short_labels(export_files, cache_dir):
    """A job's items table for people: the exports' labels without the part they share (ddp-2gpu-rank0 -> rank0),
    the title naming them in full; CSV keeps the full labels."""
    keys = ("ddp-2gpu-rank0", "ddp-2gpu-rank1")
    if not all(k in export_files for k in keys):
        pytest.skip("per-rank DDP fixtures absent")
    files = [str(export_files[k]) for k in keys]
    res = runner.invoke(app, ["critical-path", *files, "--items", "--step", "2", "--cache-dir", str(cache_dir)],
                        env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "(ddp-2gpu-rank0, ddp-2gpu-rank1)" in lines[0]
    end = next(i for i, line in enumerate(lines) if "columns hidden" in line)  # the note under the table
    rows = [line.split() for line in lines[4:end] if line.strip()]
    assert {r[0] for r in rows} == {"rank0", "rank1"} and {r[1] for r in rows} <= {"rank0", "rank1"}
    res = runner.invoke(app, ["critical-path", *files, "--items", "--step", "2", "-f", "csv",
                              "--cache-dir", str(cache_dir)])
    table = list(csv.DictReader(io.StringIO(res.stdout)))
    assert {r["export"] for r in table} == set(keys) and {r["on_export"] for r in table} == set(keys)
    for command in (["critical-path"], ["what-if", "--scale", "kernel:*=0.5"]):
        res = runner.invoke(app, [command[0], *files, *command[1:], "--step", "99", "--cache-dir", str(cache_dir)])
        assert res.exit_code == 1 and "Traceback" not in res.output
        assert res.output.strip().splitlines()[-1] == "Error: no step 99 in these exports; `nsysql steps` lists them"


def test_one_export_per_rank_runs_through_the_late_rank(export_files, cache_dir):
    """ddp-2gpu-rank0/1 (one nsys per rank; rank 1 sleeps 25 ms in its `dataloader` range in step 2): as a job, the
    ranks' graphs are merged, so rank 0's path in step 2 runs through rank 1's sleep, read from rank 1's raw NVTX
    rows and put on rank 0's clock by the job's shift; every path is its step (tiled); each rank's replay without
    change is its capture; summarize's JSON of the job says what bounds it."""
    keys = ("ddp-2gpu-rank0", "ddp-2gpu-rank1")
    if not all(k in export_files for k in keys):
        pytest.skip("per-rank DDP fixtures absent")
    import nsysql
    with nsysql.open_job([export_files[k] for k in keys], cache_dir=cache_dir) as job:
        comp = job.critical_path()
        assert comp.columns[0] == "export" and (comp["path_ns"] == comp["wall_ns"]).all()
        items = job.critical_path(items=True)
        assert items.columns[:4] == ["export", "step", "on_export", "kind"]
        assert job.critical_path(step=2, items=True).equals(items.filter(pl.col("step") == 2))  # on its span only
        names = comp["export"].unique(maintain_order=True).to_list()
        for (name, step), path in items.group_by("export", "step", maintain_order=True):
            row = job.exports[names.index(name)].run("analysis._cp_steps").filter(pl.col("step") == step).row(
                0, named=True)
            assert path["start_ns"][0] == row["start_ns"] and path["end_ns"][-1] == row["end_ns"]
            assert (path["start_ns"][1:] == path["end_ns"][:-1]).all()
        steps = _raw(export_files[keys[0]]).execute(
            "SELECT n.start, n.end FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId "
            "WHERE COALESCE(n.text, s.value) = 'profiled_step' ORDER BY n.start").fetchall()
        loads = _raw(export_files[keys[1]]).execute(
            "SELECT n.start, n.end FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId "
            "WHERE COALESCE(n.text, s.value) = 'dataloader' AND n.eventType = 59 ORDER BY n.start").fetchall()
        shift = job.alignment.shifts_ns[1] - job.alignment.shifts_ns[0]  # rank 1's clock -> rank 0's
        lo, hi = steps[1]  # rank 0's step 2
        s, e = max(t for t in loads if t[1] - t[0] > 20_000_000)  # the planted sleep's range
        s, e = max(s + shift, lo), e + shift
        assert lo < e <= hi
        on_late = items.filter((pl.col("export") == names[0]) & (pl.col("step") == 2)
                               & (pl.col("on_export") == names[1]))
        covered = sum(max(0, min(e, x) - max(s, w)) for w, x in zip(on_late["start_ns"], on_late["end_ns"]))
        assert covered >= 0.9 * (e - s), (covered, e - s)
        assert items.filter(pl.col("export") == names[1])["on_export"].unique().to_list() == [names[1]]
        df = job.what_if([])
        assert (df["measured_ns"] == df["predicted_ns"]).all()
        # replayed together: without data loading, rank 0 no longer waits in step 2 for rank 1's sleep
        own = _raw(export_files[keys[0]]).execute(
            "SELECT n.start, n.end FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId "
            "WHERE COALESCE(n.text, s.value) = 'dataloader' AND n.eventType = 59 AND n.start >= ? AND n.end <= ?",
            (lo, hi)).fetchall()
        late_by = (e - s) - sum(b - a for a, b in own)
        df = job.what_if(["range:dataloader=0"]).filter((pl.col("export") == names[0]) & (pl.col("step") == 2))
        saved = df["measured_ns"][0] - df["predicted_ns"][0]
        assert 0.8 * late_by <= saved < df["measured_ns"][0], (saved, late_by)
        # the job's data-loading finding: its cause removed on both ranks, replayed together; at most all the
        # loading of both ranks (raw rows), at least step 2's planted excess
        everything = sum(b - a for k in keys for a, b in _raw(export_files[k]).execute(
            "SELECT n.start, n.end FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId "
            "WHERE COALESCE(n.text, s.value) = 'dataloader' AND n.eventType = 59").fetchall())
        gain = job.findings().filter(pl.col("rule") == "dataloader_wait")["predicted_gain_ns"][0]
        assert 0.8 * late_by <= gain <= everything, (gain, late_by, everything)
    out = CliRunner().invoke(app, ["summarize", "-f", "json", *[str(export_files[k]) for k in keys],
                                   "--cache-dir", str(cache_dir)], env={"NSYSQL_AHEAD": "off"})
    bound = json.loads(out.stdout)["critical_path"]
    # the job's steps from the raw rows: every `profiled_step` range of both exports (none left out as warm-up)
    walls = [e - s for k in keys for s, e in _raw(export_files[k]).execute(
        "SELECT n.start, n.end FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId "
        "WHERE COALESCE(n.text, s.value) = 'profiled_step'").fetchall()]
    assert bound["steps"] == len(walls) and bound["line"].startswith("Bound by (critical path): CPU")
    assert bound["mean_per_step"]["path_ns"] == int(sum(walls) / len(walls))
    assert sum(v for k, v in bound["mean_per_step"].items() if k != "path_ns") == pytest.approx(
        bound["mean_per_step"]["path_ns"], abs=len(cp.KINDS))  # the kinds' means add up (each rounded down)


def test_linking_a_job_renews_a_graph_built_before(export_files, cache_dir):
    """A graph built before the exports were linked as a job (as answering ahead does, at open) is not reused
    after: rank 0 alone counts its wait for rank 1 in step 2 as transfer (nothing to match), linked as waiting."""
    keys = ("ddp-2gpu-rank0", "ddp-2gpu-rank1")
    if not all(k in export_files for k in keys):
        pytest.skip("per-rank DDP fixtures absent")
    import nsysql
    from nsysql.answers.job import link
    with nsysql.open(export_files[keys[0]], cache_dir=cache_dir) as a, \
            nsysql.open(export_files[keys[1]], cache_dir=cache_dir) as b:
        alone = cp.composition(a, step=2).row(0, named=True)
        assert link([a, b]) is not None
        linked = cp.composition(a, step=2).row(0, named=True)
    assert alone["comm_transfer_ns"] > 20_000_000 and alone["comm_wait_ns"] == 0
    assert linked["comm_wait_ns"] > 20_000_000 and linked["comm_transfer_ns"] < 1_000_000


def test_summary_sample_of_a_long_capture(opened, export_files):
    """With a budget of CUDA calls and GPU ops, summarize walks the last analysed steps whose span (from one step's
    length before the first) holds at most that many, counted here from the raw tables; the full walk agrees on them."""
    key = "cnn-dataloader-train"
    if key not in opened:
        pytest.skip(f"fixtures/{key} absent")
    ex = opened[key]
    con = _raw(export_files[key])
    pid = ex.run("analysis.steady_steps")["pid"][0]

    def held(lo, hi):
        return sum(con.execute(f"SELECT COUNT(*) FROM {t} WHERE start >= ? AND start <= ? AND "
                               f"({col} >> 24) & 16777215 = ?", (lo, hi, pid)).fetchone()[0]
                   for t, col in (("CUPTI_ACTIVITY_KIND_RUNTIME", "globalTid"), ("CUPTI_ACTIVITY_KIND_KERNEL", "globalPid"),
                                  ("CUPTI_ACTIVITY_KIND_MEMCPY", "globalPid"), ("CUPTI_ACTIVITY_KIND_MEMSET", "globalPid")))
    steps = ex.run("analysis.steady_steps").filter(pl.col("analysed")).sort("step")
    budget = 6000
    sample = cp.steps(ex, budget=budget)
    chosen = sample["step"].to_list()
    assert chosen == steps["step"].to_list()[-len(chosen):] and 1 <= len(chosen) < steps.height
    span = steps.filter(pl.col("step").is_in(chosen))
    lo = span["start_ns"].min() - span["wall_ns"].max()
    assert held(lo, span["end_ns"].max()) <= budget
    wider = steps.filter(pl.col("step") >= min(chosen) - 1)
    assert held(wider["start_ns"].min() - wider["wall_ns"].max(), wider["end_ns"].max()) > budget
    full = ex.critical_path().filter(pl.col("step").is_in(chosen))
    assert cp.composition(ex, budget=budget).equals(full)


def test_missing_tables_are_named(export_files, cache_dir):
    """An export without CUDA event records (bert-2layer-train) is walked without cross-stream edges, and says so; one
    without CUDA calls gets one line saying what it lacks."""
    cpu_only = Path(__file__).resolve().parents[1] / "fixtures" / "cpu-nvtx-osrt-nsys2022.4" / "export.sqlite.xz"
    if "bert-2layer-train" not in export_files or not cpu_only.exists():
        pytest.skip("fixtures bert-2layer-train, cpu-nvtx-osrt-nsys2022.4 absent")
    con = _raw(export_files["bert-2layer-train"])
    assert not con.execute("SELECT COUNT(*) FROM sqlite_master WHERE name = 'CUPTI_ACTIVITY_KIND_CUDA_EVENT'").fetchone()[0]
    res = runner.invoke(app, ["critical-path", str(export_files["bert-2layer-train"]), "--cache-dir", str(cache_dir)])
    assert res.exit_code == 0 and "note: no cross-stream waits" in res.output, res.output
    res = runner.invoke(app, ["critical-path", str(cpu_only), "--cache-dir", str(cache_dir)])
    assert res.exit_code == 1 and "CUPTI_ACTIVITY_KIND_RUNTIME" in res.output and "Traceback" not in res.output


def _data_loading_by_pid(con, start, end) -> dict[int, tuple[int, int]]:
    """Each process's `dataloader` range inside [start, end] (raw NVTX_EVENTS; one per step and process)."""
    rows = con.execute("SELECT (n.globalTid >> 24) & 16777215, n.start, n.end FROM NVTX_EVENTS n "
                       "LEFT JOIN StringIds s ON s.id = n.textId WHERE COALESCE(n.text, s.value) = 'dataloader' "
                       "AND n.eventType = 59 AND n.start >= ? AND n.end <= ?", (start, end)).fetchall()
    return {pid: (s, e) for pid, s, e in rows}


@pytest.mark.parametrize("key, sleep_ms", [("ddp-2gpu-torchrun", 25), ("fsdp-2gpu-torchrun", 20)])
def test_the_late_ranks_planted_sleep_is_on_the_waiting_ranks_path(key, sleep_ms, opened, export_files):
    """Rank 1 sleeps SLEEP ms in its `dataloader` range (fixtures/README.md). Read from the raw rows alone: in each
    step where one process's dataloader range is longer than the other's by more than half the sleep, the other
    process's critical path covers at least 90% of that range (from the waiting rank's step start on), on the late
    process."""
    if key not in opened:
        pytest.skip(f"fixtures/{key} absent")
    con = _raw(export_files[key])
    items = opened[key].critical_path(items=True)
    steps = con.execute("SELECT (n.globalTid >> 24) & 16777215, n.start, n.end FROM NVTX_EVENTS n "
                        "LEFT JOIN StringIds s ON s.id = n.textId WHERE COALESCE(n.text, s.value) = 'profiled_step' "
                        "ORDER BY n.start").fetchall()
    by_pid: dict[int, list[tuple[int, int]]] = {}
    for pid, s, e in steps:
        by_pid.setdefault(pid, []).append((s, e))
    assert len(by_pid) == 2
    (a, a_steps), (b, b_steps) = sorted(by_pid.items())
    checked = 0
    for number, (sa, sb) in enumerate(zip(a_steps, b_steps), 1):
        loading = {**_data_loading_by_pid(con, *sa), **_data_loading_by_pid(con, *sb)}
        length = {pid: e - s for pid, (s, e) in loading.items()}
        late, waiting = (b, a) if length[b] > length[a] else (a, b)
        if length[late] - length[waiting] < sleep_ms * 1_000_000 // 2:
            continue
        s, e = loading[late]
        s = max(s, (sa if waiting == a else sb)[0])  # the path begins at the waiting rank's step start
        path = items.filter((pl.col("step") == number) & (pl.col("pid") == waiting) & (pl.col("on_pid") == late))
        covered = sum(max(0, min(e, x) - max(s, w)) for w, x in zip(path["start_ns"], path["end_ns"]))
        assert covered >= 0.9 * (e - s), (number, covered, e - s)
        checked += 1
    assert checked >= 1
