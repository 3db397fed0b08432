"""nsysql gaps / utilization: GPU idle intervals with the CPU's context, and busy share over time.

Checked against hand-worked numbers on a synthetic export (scripts/make_synthetic.py,
launch_overhead_copies_gaps) and a brute-force walk of the real exports' raw rows
(tests/plainwalk.py PlainTimeline: interval unions by sorting, every call tested against every gap).
"""
from __future__ import annotations

import pytest
from typer.testing import CliRunner

import nsysql
from nsysql.cli.app import app
from nsysql.errors import MissingDataError, NsysqlError

from conftest import make_synthetic
from plainwalk import busy_within


@pytest.fixture(scope="module")
def cases(plain_timelines):
    return plain_timelines("kernel")


# -- synthetic -----------------------------------------------------------------------------------------
def test_gaps_synthetic(ocg_export):
    df = ocg_export.gaps(every=True, min_gap_us=0)
    assert [(r["gap_start_ns"], r["gap_end_ns"]) for r in df.to_dicts()] == [
        (5400, 8200), (2200, 3100), (8300, 9200), (4500, 5300), (3600, 4200), (1700, 2150), (500, 700),
        (9800, 9900), (9700, 9750)]  # longest first; device 1's single busy interval has no gap
    rows = {r["gap_start_ns"]: r for r in df.to_dicts()}
    longest = rows[5400]
    assert (longest["before_op"], longest["after_op"], longest["tid"], longest["launch_api"]) == \
           ("k3", "k3", 100, "cudaLaunchKernel")
    assert longest["launch_offset_ns"] == 8000 - 5400  # issued late
    assert longest["range_path"] == "step/opt"
    # poll [5300, 7900] was open at the gap's start (its nested read [5350, 5380] had ended): 2500 ns
    assert (longest["os_call"], longest["os_call_ns"]) == ("poll", 2500)
    assert (longest["cuda_call"], longest["cuda_call_ns"], longest["cuda_calls_started"]) == ("cudaLaunchKernel", 100, 1)
    # the autograd thread launched k_bwd; it has no ranges and no OS calls
    bwd = rows[2200]
    assert (bwd["thread_name"], bwd["range_path"], bwd["cuda_call_ns"], bwd["os_call"]) == \
           ("pt_autograd_0", None, 50, None)
    # the blocking cudaMemcpy [4100, 4650] overlaps [4500, 5300] by 150 ns, more than the launch [5100, 5200]
    assert (rows[4500]["cuda_call"], rows[4500]["cuda_call_ns"], rows[4500]["range_path"]) == ("cudaMemcpy", 150, "step")
    # inside the op marker, fwd is the user range; the memcpy and the memset started in [8300, 9200]
    assert rows[1700]["range_path"] == "step/fwd" and rows[8300]["cuda_calls_started"] == 2
    # the memset was issued at 9160, before the GPU went idle at 9700
    assert (rows[9700]["after_op"], rows[9700]["launch_offset_ns"], rows[9700]["cuda_call"]) == \
           ("[CUDA memset]", 9160 - 9700, None)
    assert ocg_export.gaps(every=True, min_gap_us=0.9)["gap_ns"].to_list() == [2800, 900, 900]
    call_columns = ["cuda_call", "cuda_call_ns", "cuda_calls_started", "os_call", "os_call_ns"]
    lean = ocg_export.gaps(every=True, min_gap_us=0, calls=False)
    assert lean.drop(call_columns).equals(df.drop(call_columns))
    assert all(lean[c].null_count() == lean.height == 9 for c in call_columns)


def test_gaps_threads_synthetic(ocg_export):
    df = ocg_export.gaps(every=True, min_gap_us=0, threads=True)
    longest = {r["tid"]: r for r in df.to_dicts() if r["gap_start_ns"] == 5400}
    assert set(longest) == {100, 102}  # the autograd thread did nothing then
    assert longest[100]["launched_next"] and not longest[102]["launched_next"]
    assert (longest[102]["os_call"], longest[102]["os_call_ns"], longest[102]["range_path"]) == \
           ("pthread_cond_wait", 2800, None)
    first = [r for r in df.to_dicts() if r["gap_start_ns"] == 500]
    assert [(r["tid"], r["range_path"]) for r in first] == [(100, "step/fwd")]


def test_utilization_synthetic(ocg_export):
    df = ocg_export.utilization(window_ms=0.0025)  # 2500 ns windows from the first op (450) to the last end (9950)
    got = {(r["device_id"], r["window_index"]): (r["window_start_ns"], r["window_end_ns"], r["busy_ns"], r["ops_started"])
           for r in df.to_dicts()}
    assert got == {
        (0, 0): (450, 2950, 1100, 3), (0, 1): (2950, 5450, 900, 3), (0, 2): (5450, 7950, 0, 0),
        (0, 3): (7950, 9950, 700, 4),
        (1, 0): (450, 2950, 1450, 1), (1, 1): (2950, 5450, 550, 0), (1, 2): (5450, 7950, 0, 0),
        (1, 3): (7950, 9950, 0, 0)}
    last = df.filter((df["device_id"] == 0) & (df["window_index"] == 3)).to_dicts()[0]
    assert last["busy_pct"] == pytest.approx(35.0)  # of the shortened last window



def test_gaps_long_calls_far_before_the_gaps(tmp_path):
    """A call that starts long before a thread's first gap and is still open at its gaps' starts (the query finds
    calls by time buckets as wide as the gaps' span / their count: this one starts two buckets before the first)."""
    ms = make_synthetic()
    b = ms.SyntheticExport().thread(100, 100, "python3")
    for i, (start, kstart, kend) in enumerate([(101000, 101100, 101200), (102000, 102100, 102200),
                                               (102300, 102400, 102500), (150000, 150100, 150200)]):
        b.launch(start=start, end=start + 10, tid=100, pid=100, correlation_id=i + 1, kernel=("k", kstart, kend, 7, 0))
    b.osrt("poll", 60000, 110000, tid=100, pid=100)
    b.osrt("read", 120000, 140000, tid=100, pid=100)
    with nsysql.open(b.write(tmp_path / "long.sqlite"), cache_dir=tmp_path / "cache") as ex:
        for threads in (False, True):
            rows = {r["gap_start_ns"]: r for r in ex.gaps(every=True, min_gap_us=0, threads=threads).to_dicts()}
            got = {g: (r["gap_ns"], r["os_call"], r["os_call_ns"], r["cuda_call_ns"], r["cuda_calls_started"])
                   for g, r in rows.items()}
            assert got == {101200: (900, "poll", 900, 10, 1), 102200: (200, "poll", 200, 10, 1),
                           102500: (47600, "read", 20000, 10, 1)}, threads

# -- real exports ----------------------------------------------------------------------------------------
def test_gap_list_matches_brute_force(cases):
    for ident, ex, plain in cases:
        want = sorted(plain.gaps(0))
        df = ex.gaps(every=True, min_gap_us=0)
        assert sorted(zip(df["device_id"], df["gap_start_ns"], df["gap_end_ns"])) == want, ident
        assert df["gap_ns"].to_list() == sorted(df["gap_ns"].to_list(), reverse=True)
        assert sorted(zip(*[ex.gaps(every=True, min_gap_us=250)[c] for c in ("device_id", "gap_start_ns", "gap_end_ns")])) == \
               [g for g in want if g[2] - g[1] >= 250_000], ident


def test_gap_context_matches_brute_force(cases):
    checked = 0
    for ident, ex, plain in cases:
        for row in ex.gaps(every=True, min_gap_us=1000).to_dicts():
            nexts = plain.ops_starting_at(row["device_id"], row["gap_end_ns"])
            if len(nexts) != 1 or nexts[0]["call"] is None:
                continue  # ambiguous or unlaunched: nothing to compare
            op, call = nexts[0], nexts[0]["call"]
            assert (row["after_op"], row["tid"], row["launch_offset_ns"]) == \
                   (op["name"], call["tid"], call["start"] - row["gap_start_ns"]), (ident, row["gap_start_ns"])
            want = plain.thread_in_gap(call["gtid"], row["gap_start_ns"], row["gap_end_ns"])
            where = (ident, row["gap_start_ns"])
            assert row["range_path"] == want["range_path"], where
            assert (row["cuda_call_ns"], row["cuda_calls_started"]) == (want["cuda_call_ns"], want["cuda_calls_started"]), where
            assert row["os_call_ns"] == want["os_call_ns"], where
            assert (row["cuda_call"] in want["cuda_names"]) if want["cuda_names"] else row["cuda_call"] is None, where
            assert (row["os_call"] in want["os_names"]) if want["os_names"] else row["os_call"] is None, where
            checked += 1
    assert checked > 20


def test_gaps_threads_match_brute_force(cases):
    for ident, ex, plain in cases:
        df = ex.gaps(every=True, min_gap_us=5000, threads=True)
        for row in df.to_dicts():
            known = set(plain.thread_name) | set(plain.cuda_calls) | set(plain.os_calls)  # unnamed threads too
            gtid = next(g for g in known if g & 0xFFFFFF == row["tid"] and (g >> 24) & 0xFFFFFF == row["pid"])
            want = plain.thread_in_gap(gtid, row["gap_start_ns"], row["gap_end_ns"])
            where = (ident, row["gap_start_ns"], row["tid"])
            assert row["range_path"] == want["range_path"], where
            assert (row["cuda_call_ns"], row["os_call_ns"]) == (want["cuda_call_ns"], want["os_call_ns"]), where
        # every gap appears, with the thread that launched the op ending it among its rows
        assert set(df["gap_start_ns"]) == set(ex.gaps(every=True, min_gap_us=5000)["gap_start_ns"]), ident


def test_utilization_matches_brute_force(cases):
    for ident, ex, plain in cases:
        df = ex.utilization(window_ms=50)
        t0 = min(s for islands in plain.islands.values() for s, _ in islands)
        for dev, islands in plain.islands.items():
            rows = df.filter(df["device_id"] == dev).to_dicts()
            assert sum(r["busy_ns"] for r in rows) == sum(e - s for s, e in islands), ident
            for r in rows:
                assert r["window_start_ns"] == t0 + r["window_index"] * 50_000_000
                assert r["busy_ns"] == busy_within(islands, r["window_start_ns"], r["window_end_ns"]), (ident, r)
            assert sum(r["ops_started"] for r in rows) == sum(1 for o in plain.ops if o["device"] == dev)


# -- API and CLI -------------------------------------------------------------------------------------------
def test_bad_values(ocg_export, cases):
    with pytest.raises(NsysqlError, match=r"the minimum gap \(µs\) must be 0 or more, not -1"):
        ocg_export.gaps(every=True, min_gap_us=-1)
    with pytest.raises(NsysqlError, match="longer than 0 ms"):
        ocg_export.utilization(window_ms=1e-9)  # rounds to 0 ns
    with pytest.raises(NsysqlError, match="more than a million"):
        cases[0][1].utilization(window_ms=1e-6)  # 1 ns windows over a real capture's seconds


def test_no_gpu_work(tmp_path):
    b = make_synthetic().no_cuda()
    path = b.write(tmp_path / "no_cuda.sqlite")
    with nsysql.open(path, cache_dir=tmp_path / "cache") as ex:
        with pytest.raises(MissingDataError, match="--trace=cuda"):
            ex.gaps()
        with pytest.raises(MissingDataError):
            ex.utilization()


def test_cli(ocg_export, tmp_path):
    runner = CliRunner()
    common = ["--cache-dir", str(tmp_path / "cache")]
    res = runner.invoke(app, ["gaps", str(ocg_export.path), "--min-gap-us", "0", "--top", "2", "--format", "csv", *common])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert len(lines) == 3 and lines[1].startswith("0,5400,8200,2800,k3,k3,100,100,python3,cudaLaunchKernel,2600,step/opt")
    res = runner.invoke(app, ["gaps", str(ocg_export.path), "--min-gap-us", "0", "--top", "1", "--threads",
                              "--format", "csv", *common])
    assert res.exit_code == 0 and len(res.output.splitlines()) == 3  # the longest gap, two threads
    out = tmp_path / "u.parquet"
    res = runner.invoke(app, ["utilization", str(ocg_export.path), "--window-ms", "0.0025", "--format", "parquet",
                              "-o", str(out), *common])
    assert res.exit_code == 0, res.output
    import polars as pl
    assert pl.read_parquet(out)["busy_ns"].sum() == 2700 + 2000
    res = runner.invoke(app, ["utilization", str(ocg_export.path), "--window-ms", "0", *common])
    assert res.exit_code == 1 and res.output.startswith("Error: ") and "Traceback" not in res.output


def test_gaps_keep_to_the_analysed_steps_and_say_what_the_step_thread_did(export_files, opened):
    """cnn-dataloader-train: 8 profiled steps, all analysed (range clock), whose CPU work is mostly `dataloader` on
    the step's own thread. A plain walk of the raw rows: the gaps that start inside a profiled_step range, and the
    step thread's innermost range at each gap's middle."""
    import sqlite3

    from plainwalk import PlainTimeline
    ident = "cnn-dataloader-train"
    if ident not in export_files:
        pytest.skip(f"fixtures/{ident} is not in this checkout")
    path, ex = export_files[ident], opened[ident]
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    names = dict(con.execute("SELECT id, value FROM StringIds"))
    ranges = [(s, e, t if t is not None else names.get(i, ""), g) for s, e, t, i, g in con.execute(
        "SELECT start, end, text, textId, globalTid FROM NVTX_EVENTS WHERE eventType = 59 AND end IS NOT NULL")]
    con.close()
    steps = sorted((s, e, g) for s, e, t, g in ranges if t == "profiled_step")
    assert ex.run("analysis.steady_steps")["analysed"].all()
    every = PlainTimeline(path).gaps(100_000)  # (device, start, end) of every gap of 100 µs or more
    inside = sorted(g for g in every if any(s <= g[1] < e for s, e, _ in steps))
    got = ex.gaps()
    assert sorted(zip(got["device_id"], got["gap_start_ns"], got["gap_end_ns"])) == inside
    assert len(inside) < len(every)  # start-up, warm-up and the result read-back are left out
    assert sorted(zip(*[ex.gaps(every=True)[c] for c in ("device_id", "gap_start_ns", "gap_end_ns")])) == sorted(every)
    for row in got.iter_rows(named=True):
        number, (s, e, gtid) = next((k + 1, st) for k, st in enumerate(steps) if st[0] <= row["gap_start_ns"] < st[1])
        mid = (row["gap_start_ns"] + row["gap_end_ns"]) // 2
        around = [r for r in ranges if r[3] == gtid and r[0] <= mid < r[1]]
        innermost = max(around, key=lambda r: (r[0], -r[1]))[2] if around else None  # a gap may outlast the step
        assert row["step"] == number, row
        assert (row["step_thread_range"] or "").split("/")[-1] == (innermost or ""), row
    assert got["step_thread_range"].head(5).to_list().count("dataloader") >= 4  # what the CPU did meanwhile
