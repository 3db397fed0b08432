"""The SQL library (queries/macros/): each macro on a few rows written out by hand, against busy time counted
by a plain walk over the same intervals."""
from __future__ import annotations

import math

import duckdb

from nsysql.sql import catalog, macros

# two processes' disjoint busy intervals, as analysis._process_busy gives them (before_ns, idx)
BUSY = {100: [(10, 20), (30, 50), (60, 61)], 200: [(0, 1000)]}
PROBES = [(1, 100, 0, 100), (2, 100, 15, 35), (3, 100, 20, 30), (4, 100, 55, 60), (5, 200, 500, 700),
          (6, 100, 45, 60), (7, 300, 0, 10)]  # (id, pid, s, e); pid 300 has no busy interval


def busy_walk(pid: int, s: int, e: int) -> int:
    return sum(max(0, min(e, b_end) - max(s, b_start)) for b_start, b_end in BUSY.get(pid, []))


def connection(busy: dict[int, list[tuple[int, int]]] = BUSY) -> duckdb.DuckDBPyConnection:
    """process_busy made of `busy` (pid -> its busy intervals in time order), with the macros installed."""
    con = duckdb.connect()
    rows, idx = [], 0
    for pid in sorted(busy):
        before = 0
        for start, end in busy[pid]:
            idx += 1
            rows.append((pid, start, end, before, idx))
            before += end - start
    con.execute("CREATE TEMP TABLE process_busy (pid BIGINT, start_ns BIGINT, end_ns BIGINT, before_ns BIGINT, "
                "idx BIGINT)")
    con.executemany("INSERT INTO process_busy VALUES (?, ?, ?, ?, ?)", rows)
    macros.install(con)
    return con


def test_busy_inside_equals_a_plain_walk():
    con = connection()
    values = ", ".join(f"({i}, {pid}, {s}, {e})" for i, pid, s, e in PROBES)
    got = dict(con.execute(f"WITH probe(id, pid, s, e) AS (VALUES {values}) "
                           "SELECT id, busy_ns FROM busy_inside(probe, process_busy) ORDER BY id").fetchall())
    assert got == {i: busy_walk(pid, s, e) for i, pid, s, e in PROBES}
    assert got[1] == 31 and got[7] == 0  # spelled out: the walk itself is not what is being trusted


def test_busy_inside_far_apart_in_time():
    """Probes in time buckets (2^24 ns) where no interval starts, before the first interval starting in theirs, and
    after a process's last interval: the interval before them is still found."""
    b = 16777216
    busy = {1: [(10, 20), (5 * b + 5, 5 * b + 20), (5 * b + 30, 9 * b)], 2: [(2 * b, 2 * b + 7)]}
    con = connection(busy)
    probes = [(1, 1, 15, 3 * b), (2, 1, 3 * b, 5 * b + 10), (3, 1, 5 * b + 1, 5 * b + 2), (4, 1, 8 * b, 12 * b),
              (5, 1, 11 * b, 12 * b), (6, 2, 0, 3 * b), (7, 2, 4 * b, 6 * b), (8, 1, 0, 13 * b)]
    values = ", ".join(f"({i}, {pid}, {s}, {e})" for i, pid, s, e in probes)
    got = dict(con.execute(f"WITH probe(id, pid, s, e) AS (VALUES {values}) "
                           "SELECT id, busy_ns FROM busy_inside(probe, process_busy) ORDER BY id").fetchall())
    walk = {i: sum(max(0, min(e, be) - max(s, bs)) for bs, be in busy[pid]) for i, pid, s, e in probes}
    assert got == walk
    assert got[2] == 5 and got[4] == b and got[5] == 0 and got[7] == 0  # spelled out


def busy_in_step(steps: dict, probes: list) -> dict:
    """busy_in_step over analysis._step_busy's rows for `steps` ({(pid, step): (start, end)}: BUSY clipped to each,
    idx in (pid, step, start) order) and `probes` [(id, pid, step, s, e)]: {id: busy_ns}."""
    con = duckdb.connect()
    rows, idx = [], 0
    for (pid, step), (ws, we) in sorted(steps.items()):
        before = 0
        for start, end in BUSY[pid]:
            s, e = max(start, ws), min(end, we)
            if s < e:
                idx += 1
                rows.append((step, pid, s, e, before, idx))
                before += e - s
    con.execute("CREATE TEMP TABLE step_busy (step BIGINT, pid BIGINT, start_ns BIGINT, end_ns BIGINT, "
                "before_ns BIGINT, idx BIGINT)")
    con.executemany("INSERT INTO step_busy VALUES (?, ?, ?, ?, ?, ?)", rows)
    macros.install(con)
    values = ", ".join(f"({i}, {pid}, {step}, {s}, {e})" for i, pid, step, s, e in probes)
    return dict(con.execute(f"WITH probe(id, pid, step, s, e) AS (VALUES {values}) "
                            "SELECT id, busy_ns FROM busy_in_step(probe, step_busy) ORDER BY id").fetchall())


def test_busy_in_step_equals_a_plain_walk():
    """Probes inside analysed steps against the steps' clipped busy intervals (analysis._step_busy's rows)."""
    steps = {(100, 1): (5, 45), (100, 2): (55, 70), (200, 1): (400, 800)}  # (pid, step) -> (start, end)
    probes = [(1, 100, 1, 5, 45), (2, 100, 1, 15, 35), (3, 100, 1, 20, 30), (4, 100, 2, 55, 60),
              (5, 100, 2, 60, 70), (6, 200, 1, 500, 700), (7, 200, 1, 400, 400), (8, 100, 1, 5, 10)]  # inside
    got = busy_in_step(steps, probes)
    assert got == {i: busy_walk(pid, s, e) for i, pid, step, s, e in probes}
    assert got[1] == 25 and got[5] == 1 and got[8] == 0  # spelled out


def test_busy_in_step_keeps_the_processes_steps_apart():
    """Steps are numbered per process: step 1 of process 100 and step 1 of process 200 are two steps running at
    the same time (two ranks), and a probe of one never reads the other's busy intervals."""
    steps = {(100, 1): (5, 45), (200, 1): (0, 40), (200, 2): (900, 1000)}  # (pid, step) -> (start, end)
    probes = [(1, 100, 1, 5, 45), (2, 200, 1, 10, 30), (3, 100, 1, 20, 30), (4, 200, 2, 900, 1000)]
    got = busy_in_step(steps, probes)
    assert got == {i: busy_walk(pid, s, e) for i, pid, step, s, e in probes}
    assert (got[1], got[2], got[4]) == (25, 20, 100)  # spelled out


def test_every_macro_is_stored_and_read_by_the_queries_that_say_so():
    con = connection()
    con.execute("ATTACH ':memory:' AS stored_db")
    con.execute("USE stored_db")
    macros.install(con, stored=True)
    stored = {r[0] for r in con.execute("SELECT function_name FROM duckdb_functions() "
                                        "WHERE database_name = 'stored_db' AND function_type IN ('macro', 'table_macro')").fetchall()}
    names = {q.name for q in catalog.group("macros")}
    assert names and names <= stored
    for q in catalog.all_queries().values():
        for name in names:
            called = f"{name}(" in q.sql and q.id != f"macros.{name}"  # a macro may call another one
            assert called == (f"macros.{name}" in q.requires), q.id  # the answers' key follows `requires`


def test_human_ns_picks_the_unit_and_three_digits():
    con = connection()
    cases = {1.5e9: "1.50 s", 2.5e8: "250 ms", 4.12e7: "41.2 ms", 4.126e6: "4.13 ms", 4.12e5: "412 µs",
             4.12e4: "41.2 µs", 4120.0: "4.12 µs", 412.0: "412 ns", 0.0: "0 ns"}
    got = {x: con.execute("SELECT human_ns($x::DOUBLE)", {"x": x}).fetchone()[0] for x in cases}
    assert got == cases


def test_calls_in_finds_the_longest_overlap_and_the_calls_started():
    """Per probe interval and call source: the call overlapping it longest (open at its start or starting inside),
    and how many start inside; buckets of width span/count, so probes far apart in time are covered too."""
    con = connection()
    got = con.execute("""
        WITH probe(id, tid, s, e) AS (VALUES (1, 7, 100, 200), (2, 7, 300, 310), (3, 7, 5000, 6000), (4, 8, 0, 10),
                                             (5, 7, 150, 160)),
        call(tid, start_ns, end_ns, call_id, source) AS (VALUES
            (7, 50, 120, 11, 0),    -- open at probe 1's start: 20 ns inside it
            (7, 130, 190, 12, 0),   -- starts inside probe 1: 60 ns, the longest; also covers all of probe 5
            (7, 140, 150, 13, 0),   -- starts inside probe 1
            (7, 150, 400, 14, 1),   -- another source: 50 ns of probe 1, open at probe 2's start: all 10 ns
            (7, 4000, 9000, 15, 0), -- open across probe 3
            (7, 200, 250, 16, 0),   -- starts at probe 1's end: not inside
            (9, 0, 10, 17, 0))      -- another thread
        SELECT id, source, call_id, overlap_ns, started FROM calls_in(probe, call) ORDER BY id, source""").fetchall()
    assert got == [(1, 0, 12, 60, 2), (1, 1, 14, 50, 1), (2, 1, 14, 10, 0), (3, 0, 15, 1000, 0), (5, 0, 12, 10, 0),
                   (5, 1, 14, 10, 0)]  # 14 starts at 150 = s: open at the start, not inside


def test_innermost_range_at_an_instant():
    """Nested ranges of one thread: the innermost open at each point; an end is not open, a zero-length range never."""
    con = connection()
    got = con.execute("""
        WITH ranges(range_id, tid, start_ns, end_ns) AS (VALUES
            (1, 7, 0, 100), (2, 7, 10, 50), (3, 7, 20, 30), (4, 7, 60, 60), (5, 7, 60, 80), (6, 8, 0, 1000)),
        point(id, tid, t) AS (VALUES (1, 7, 5), (2, 7, 25), (3, 7, 30), (4, 7, 50), (5, 7, 60), (6, 7, 100),
                                     (7, 8, 999), (8, 9, 5), (9, 7, 10))
        SELECT id, range_id FROM innermost_range_at(point, ranges) ORDER BY id""").fetchall()
    assert got == [(1, 1), (2, 3), (3, 2), (4, 1), (5, 5), (7, 6), (9, 2)]


def test_union_ns_counts_overlaps_once_per_group():
    """Busy time is the length of the union, never a sum: overlapping, nested, touching and disjoint intervals;
    groups apart (a negative one too) never merge, and against a plain walk over the same intervals."""
    con = connection()
    rows = [(1, 0, 10), (1, 5, 15), (1, 6, 8), (1, 15, 20), (1, 30, 31), (2, 0, 100), (-3, 7, 9), (-3, 8, 9)]
    values = ", ".join(f"({g}, {s}, {e})" for g, s, e in rows)
    got = dict(con.execute(f"WITH intervals(grp, s, e) AS (VALUES {values}) "
                           "SELECT grp, busy_ns FROM union_ns(intervals) ORDER BY grp").fetchall())

    def walk(g: int) -> int:
        covered = set()
        for grp, s, e in rows:
            if grp == g:
                covered |= set(range(s, e))
        return len(covered)

    assert got == {g: walk(g) for g in (1, 2, -3)}
    assert got == {1: 21, 2: 100, -3: 2}  # spelled out


def test_union_islands_merges_overlapping_and_touching_intervals_per_group():
    """The union as disjoint islands: overlapping, nested and touching intervals merge (through a chain too),
    a gap keeps them apart, groups never merge, a zero-length interval is an island of its own; n counts the
    intervals merged. A STRUCT group keys a composite group."""
    con = connection()
    got = con.execute("""
        WITH intervals(grp, s, e) AS (VALUES
            (1, 0, 10), (1, 5, 15), (1, 6, 8),  -- overlapping and nested: one island 0-15
            (1, 15, 20),                        -- touching it: still that island
            (1, 22, 22),                        -- zero length, after a gap: an island of its own
            (1, 30, 31), (1, 31, 40), (1, 35, 36),
            (2, 5, 15), (2, 0, 100),            -- another group, given out of order
            (-3, 7, 9))
        SELECT grp, s, e, n FROM union_islands(intervals) ORDER BY grp, s""").fetchall()
    assert got == [(-3, 7, 9, 1), (1, 0, 20, 4), (1, 22, 22, 1), (1, 30, 40, 3), (2, 0, 100, 2)]
    composite = con.execute("""
        WITH intervals AS (SELECT {'pid': pid, 'step': step} AS grp, s, e
                           FROM (VALUES (7, 1, 0, 10), (7, 1, 10, 12), (7, 2, 5, 6), (8, 1, 0, 3)) AS t(pid, step, s, e))
        SELECT grp.pid, grp.step, s, e, n FROM union_islands(intervals) ORDER BY ALL""").fetchall()
    assert composite == [(7, 1, 0, 12, 2), (7, 2, 5, 6, 1), (8, 1, 0, 3, 1)]


def test_interval_islands_numbers_each_row_and_keeps_its_columns():
    """Every row back with its other columns and its island's number (1, 2, ... per group in time order), so a
    caller can aggregate more than start and end per island."""
    con = connection()
    got = con.execute("""
        WITH intervals(grp, s, e, label) AS (VALUES
            (1, 50, 60, 'c'), (1, 0, 10, 'a'), (1, 10, 20, 'b'), (1, 61, 62, 'd'), (2, 55, 58, 'e'))
        SELECT label, grp, s, e, island FROM interval_islands(intervals) ORDER BY label""").fetchall()
    assert got == [("a", 1, 0, 10, 1), ("b", 1, 10, 20, 1), ("c", 1, 50, 60, 2), ("d", 1, 61, 62, 3),
                   ("e", 2, 55, 58, 1)]


def test_launch_busy_counts_each_call_once_and_the_union_of_the_kernels():
    """Per group: the launching calls' time with a call that launched several kernels (a graph) counted once,
    and the union of the kernel intervals, overlapping kernels counted once."""
    con = connection()
    got = con.execute("""
        WITH launch(grp, kernel_start_ns, kernel_end_ns, runtime_id, api_ns) AS (VALUES
            (1, 100, 150, 10, 7),   -- call 10 launched two kernels: its 7 ns count once
            (1, 140, 200, 10, 7),   -- overlaps the first: union 100-200
            (1, 300, 310, 11, 5),
            (2, 0, 50, 12, 20), (2, 60, 70, 13, 1))
        SELECT grp, cpu_ns, gpu_busy_ns FROM launch_busy(launch) ORDER BY grp""").fetchall()
    assert got == [(1, 12, 110), (2, 21, 60)]


def test_clip_to_steps_cuts_intervals_to_the_analysed_steps_they_overlap():
    """Against analysis._steady_windows' rows (steps 1 and 2 of process 7 in 16 ns buckets, step 1 of process 8
    at the same time): an interval inside a step, across a step's start, across two steps (one row per step),
    zero-length inside, ending where a step starts (no overlap), between steps, of a process without steps; the
    interval's own columns come back with each row."""
    con = connection()
    got = con.execute("""
        WITH step(step, pid, start_ns, end_ns) AS (VALUES (1, 7, 100, 140), (2, 7, 150, 230), (1, 8, 100, 140)),
        windows AS (SELECT step, pid, start_ns, end_ns, UNNEST(range(start_ns // 16, (end_ns - 1) // 16 + 1)) AS bucket,
                           16 AS bucket_ns FROM step),
        intervals(id, pid, start_ns, end_ns) AS (VALUES
            (1, 7, 110, 120), (2, 7, 90, 105), (3, 7, 130, 200), (4, 7, 120, 120), (5, 7, 80, 100), (6, 7, 140, 150),
            (7, 9, 100, 140), (8, 8, 0, 1000))
        SELECT id, pid, start_ns, end_ns, step, s, e FROM clip_to_steps(intervals, windows) ORDER BY id, step""").fetchall()
    assert got == [(1, 7, 110, 120, 1, 110, 120), (2, 7, 90, 105, 1, 100, 105), (3, 7, 130, 200, 1, 130, 140),
                   (3, 7, 130, 200, 2, 150, 200), (4, 7, 120, 120, 1, 120, 120), (8, 8, 0, 1000, 1, 100, 140)]


def test_host_memory_and_copy_is_sync():
    con = connection()
    got = con.execute("""
        SELECT host_memory(src, dst), copy_is_sync(api, api_end, op_end)
        FROM (VALUES ('Pageable', 'Device', 'cudaMemcpyAsync', 10, 20), ('Device', 'Pinned', 'cudaMemcpy', 10, 20),
                     ('Device', 'Device', 'cudaMemcpyAsync', 30, 20), ('Device', '-', 'cuMemsetD32_v2', 10, 20),
                     ('Pinned', 'Pageable', NULL, NULL, 20)) AS t(src, dst, api, api_end, op_end)""").fetchall()
    assert got == [("Pageable", False), ("Pinned", True), (None, True), (None, True), ("Pageable", False)]


def test_idle_gaps_between_busy_intervals():
    """Only between consecutive busy intervals of a device (not before the first or after the last), at least the
    minimum long."""
    con = connection()
    got = con.execute("""
        WITH busy(device_id, start_ns, end_ns) AS (VALUES (0, 10, 20), (0, 25, 30), (0, 100, 110), (1, 0, 5),
                                                         (1, 5, 9), (2, 50, 60))
        SELECT * FROM idle_gaps(busy, 5) ORDER BY device_id, gap_start_ns""").fetchall()
    assert got == [(0, 20, 25, 5), (0, 30, 100, 70)]


def test_launch_stats_as_columns_of_a_grouped_select():
    con = connection()
    rows = con.execute("""
        SELECT g, UNNEST(launch_stats(api_ns, queue_ns, kernel_ns))
        FROM (VALUES (1, 10, 0, 5), (1, 20, 4, 30), (1, 30, 8, 1), (2, 7, 1, 7)) AS t(g, api_ns, queue_ns, kernel_ns)
        GROUP BY g ORDER BY g""")
    assert [d[0] for d in rows.description] == [
        "g", "launches", "kernel_ns", "mean_api_ns", "median_api_ns", "p95_api_ns", "mean_queue_ns",
        "median_queue_ns", "p95_queue_ns", "shorter_than_launch"]
    assert rows.fetchall() == [(1, 3, 36, 20.0, 20.0, 29.0, 4.0, 4.0, 7.6, 2), (2, 1, 7, 7.0, 7.0, 7.0, 1.0, 1.0, 1.0, 0)]


def test_comm_kernels_by_name_or_by_an_nccl_range_around_the_launch():
    """Kernels named like NCCL's (any case), and kernels launched by a call inside one of NCCL's ranges (directly or
    under a range nested in one), matched on process AND correlation id; a range of another domain does not count."""
    con = connection()
    got = con.execute("""
        WITH kernel(kernel_id, kernel_name, pid, correlation_id) AS (VALUES
            (1, 'ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm *)', 1, 10),  -- by its name
            (2, 'oneRankReduce', 1, 11),   -- launched inside ncclAllReduce
            (3, 'NCCLKernel_x', 1, 12),    -- by its name, another case
            (4, 'gemm', 1, 13),            -- launched inside a range of another domain
            (5, 'oneRankReduce', 2, 11),   -- the same correlation id in another process, launched outside
            (6, 'copy_kernel', 1, 14),     -- launched inside a user range nested in NCCL's
            (7, 'gemm', 1, 99)),           -- no launching call
        runtime(runtime_id, pid, correlation_id) AS (VALUES (100, 1, 11), (101, 1, 13), (102, 2, 11), (103, 1, 14)),
        nvtx_range(range_id, domain) AS (VALUES (7, 'NCCL'), (8, 'other'), (9, 'user')),
        runtime_nvtx(runtime_id, range_id) AS (VALUES (100, 7), (101, 8), (103, 9)),
        nvtx_ancestor(range_id, ancestor_id) AS (VALUES (7, 7), (8, 8), (9, 9), (9, 7))
        SELECT kernel_id FROM comm_kernels(kernel, runtime, runtime_nvtx, nvtx_ancestor, nvtx_range)
        ORDER BY kernel_id""").fetchall()
    assert [k for (k,) in got] == [1, 2, 3, 6]
    names = ["ncclKernel_AllGather", "NCCLDEV", "oneRankReduce", "gemm_nccl_fused", "gemm",
             "void <unnamed>::oneRankReduce<FuncPreMulSum<float>>(void *, void *, unsigned long, unsigned long, bool)"]
    flags = [con.execute("SELECT is_nccl_name($n)", {"n": n}).fetchone()[0] for n in names]
    assert flags == [True, True, False, True, False, True]


OPTIMIZER_NAMES = ["opt", "OPT", "Opt", "optim", "optimizer", "OPTIMIZER", "optimizer_step", "optimizer.step",
                   "Optimizer.step#AdamW.step", "optim_step", "opt_step", "OPT_STEP", "opt.step", "opt-step",
                   "opt step", "optStep", "step_opt", "step_optimizer", "opt.zero_grad", "adam", "AdamW", "adamw_step",
                   "Adam8bit", "sgd", "SGD.step", "sgd_step", "step_sgd"]
NOT_OPTIMIZER_NAMES = ["option", "optional_head", "adopt", "layer_opt", "opt_layer_3", "OPT-125m forward",
                       "OPTDecoderLayer", "sgd_loader_stats", "my_adam_block", "forward_pass", "step", "backward_pass",
                       ""]


def test_is_optimizer_name_against_the_plain_rule():
    """The optimizer name rule (queries/macros/is_optimizer_name.sql) on its usual names and on names with `opt` in
    another word, against plainwalk's own reading of the documented rule."""
    from plainwalk import is_optimizer_name
    con = connection()
    got = {n: con.execute("SELECT is_optimizer_name($n)", {"n": n}).fetchone()[0]
           for n in OPTIMIZER_NAMES + NOT_OPTIMIZER_NAMES}
    assert got == {n: is_optimizer_name(n) for n in got}
    assert [n for n in got if got[n]] == OPTIMIZER_NAMES


def test_device_busy_in_equals_a_plain_walk():
    """Spans on two devices against their disjoint busy intervals: before the first, across several, inside one,
    after the last, empty, and on a device with none."""
    con = connection()
    busy = {0: [(10, 20), (30, 50), (60, 61)], 1: [(0, 1000)]}
    spans = [(1, 0, 0, 100), (2, 0, 15, 35), (3, 0, 20, 30), (4, 0, 55, 60), (5, 1, 500, 700), (6, 0, 45, 60),
             (7, 2, 0, 10), (8, 0, 70, 90), (9, 0, 12, 12)]  # (id, device_id, s, e); device 2 has no busy interval
    busy_values = ", ".join(f"({d}, {s}, {e})" for d, intervals in busy.items() for s, e in intervals)
    span_values = ", ".join(f"({i}, {d}, {s}, {e})" for i, d, s, e in spans)
    got = {i: b for i, d, b in con.execute(
        f"WITH busy(device_id, start_ns, end_ns) AS (VALUES {busy_values}), "
        f"span(id, device_id, s, e) AS (VALUES {span_values}) "
        "SELECT id, device_id, busy_ns FROM device_busy_in(span, busy) ORDER BY id").fetchall()}
    walk = {i: sum(max(0, min(e, be) - max(s, bs)) for bs, be in busy.get(d, [])) for i, d, s, e in spans}
    assert got == walk
    assert got[1] == 31 and got[5] == 200 and got[7] == 0 and got[8] == 0  # spelled out


def test_kernel_launches_pairs_kernels_and_graphs_with_their_call():
    """Kernels and graph-level CUDA graphs meet their launching call on process AND correlation id; a kernel without
    one is left out; queue time is floored at 0."""
    con = connection()
    got = con.execute("""
        WITH kernel(start_ns, end_ns, device_id, correlation_id, pid, kernel_name) AS (VALUES
            (100, 150, 0, 1, 7, 'k_a'),   -- launched by call 10
            (105, 120, 1, 2, 7, 'k_b'),   -- starts before its call returns: queue 0
            (300, 310, 0, 1, 8, 'k_c'),   -- the same correlation id in another process: call 12
            (400, 410, 0, 9, 7, 'k_orphan')),
        graph_trace(start_ns, end_ns, device_id, correlation_id, pid, graph_id) AS (VALUES (500, 900, 0, 3, 7, 42)),
        runtime(runtime_id, global_tid, pid, tid, correlation_id, start_ns, end_ns) AS (VALUES
            (10, 70, 7, 70, 1, 50, 90), (11, 71, 7, 71, 2, 95, 110), (12, 80, 8, 80, 1, 200, 260),
            (13, 70, 7, 70, 3, 480, 490))
        SELECT kernel_name, runtime_id, global_tid, api_ns, queue_ns, kernel_ns
        FROM kernel_launches(kernel, graph_trace, runtime) ORDER BY runtime_id""").fetchall()
    assert got == [("k_a", 10, 70, 40, 10, 50), ("k_b", 11, 71, 15, 0, 15), ("k_c", 12, 80, 60, 40, 10),
                   ("[CUDA graph 42]", 13, 70, 10, 10, 400)]


def test_copy_ops_and_copy_stats():
    """Copies and sets meet their call on process AND correlation id (a set is kind 'Memset' from '-'); an op without
    a call is not synchronous; the statistics of a group add up the ops (bandwidth in bytes per ns = GB/s)."""
    con = connection()
    ops = con.execute("""
        WITH memcpy(device_id, stream_id, copy_kind, src_kind, dst_kind, bytes, start_ns, end_ns, correlation_id, pid)
             AS (VALUES (0, 7, 'Host-to-Device', 'Pageable', 'Device', 1000, 100, 200, 1, 5),
                        (0, 7, 'Host-to-Device', 'Pinned', 'Device', 4000, 300, 320, 2, 5),
                        (0, 8, 'Device-to-Host', 'Device', 'Pinned', 10, 400, 410, 9, 5)),
        memset(device_id, stream_id, mem_kind, bytes, start_ns, end_ns, correlation_id, pid)
             AS (VALUES (1, 9, 'Device', 64, 500, 505, 3, 5)),
        runtime(runtime_id, pid, correlation_id, api_name, start_ns, end_ns) AS (VALUES
            (11, 5, 1, 'cudaMemcpyAsync_v3020', 90, 95),    -- returns before the copy ends: not synchronous
            (12, 5, 2, 'cudaMemcpy_v3020', 290, 330),       -- a blocking API
            (13, 5, 3, 'cudaMemsetAsync_v3020', 480, 510),  -- returns after the set ended
            (14, 6, 9, 'cudaMemcpy_v3020', 0, 1))           -- another process's correlation id 9
        SELECT copy_kind, src_kind, host_memory, dur_ns, runtime_id, api_ns, is_sync
        FROM copy_ops(memcpy, memset, runtime) ORDER BY start_ns""").fetchall()
    assert ops == [("Host-to-Device", "Pageable", "Pageable", 100, 11, 5, False),
                   ("Host-to-Device", "Pinned", "Pinned", 20, 12, 40, True),
                   ("Device-to-Host", "Device", "Pinned", 10, None, None, False),
                   ("Memset", "-", None, 5, 13, 30, True)]
    stats = con.execute("""
        SELECT g, UNNEST(copy_stats(bytes, dur_ns, is_sync, api_ns))
        FROM (VALUES (1, 1000, 100, false, 5), (1, 4000, 20, true, 40), (1, 64, 5, true, 30), (2, 8, 0, false, NULL))
             AS t(g, bytes, dur_ns, is_sync, api_ns)
        GROUP BY g ORDER BY g""")
    assert [d[0] for d in stats.description] == ["g", "count", "total_bytes", "total_ns", "avg_bytes", "gb_per_s",
                                                 "sync_count", "sync_api_ns"]
    assert stats.fetchall() == [(1, 3, 5064, 125, 1688.0, 5064 / 125, 2, 70), (2, 1, 8, 0, 8.0, None, 0, 0)]


def test_the_findings_text_macros():
    """The pieces the findings write their text with: durations, plurals, the opening of the evidence, threads."""
    con = connection()
    assert con.execute("SELECT human_ns_each([1500, 2.5e8, 41])").fetchone()[0] == ["1.50 µs", "250 ms", "41 ns"]
    assert con.execute("SELECT [plural_s(n) FOR n IN [0, 1, 2]]").fetchone()[0] == ["s", "", "s"]
    got = con.execute("SELECT per_step_phrase(0, 1), per_step_phrase(3, 1), per_step_phrase(9, 4)").fetchone()
    assert got == ("Over the GPU activity", "In the analysed step", "Per step (mean of 4)")
    assert con.execute("SELECT thread_label('python3', 7), thread_label(NULL, 8)").fetchone() == ("python3 (7)", "? (8)")


def test_thread_list_and_call_layers_per_process():
    """Per process: its calls' threads once each, named (the least name of several, '?' without one), in name order;
    the three user-range paths with the most weight (ties in name order), outside every user range named so."""
    con = connection()
    threads = con.execute("""
        WITH thread(pid, tid, thread_name) AS (VALUES (1, 10, 'python3'), (1, 11, 'worker'), (1, 11, 'a_worker'),
                                                     (2, 20, 'python3')),
        calls(pid, tid) AS (VALUES (1, 11), (1, 10), (1, 11), (1, 12), (2, 20))
        SELECT pid, threads, n FROM thread_list(calls, thread) ORDER BY pid""").fetchall()
    assert threads == [(1, "? (12), a_worker (11), python3 (10)", 3), (2, "python3 (20)", 1)]
    layers = con.execute("""
        WITH runtime_nvtx(runtime_id, range_id) AS (VALUES (1, 100), (2, 101), (3, 102), (4, 103), (5, 100)),
        nvtx_context(range_id, user_range_id) AS (VALUES (100, 200), (101, 201), (102, 202), (103, 203)),
        user_range(range_id, layer) AS (VALUES (200, 'step/fwd'), (201, 'step/bwd'), (202, 'step/opt'),
                                               (203, 'step/zz')),
        calls(pid, runtime_id, weight) AS (VALUES (1, 1, 10), (1, 5, 15), (1, 2, 20), (1, 3, 20), (1, 4, 5),
                                                  (1, 9, 30), (2, 4, 1))
        SELECT pid, layers FROM call_layers(calls, runtime_nvtx, nvtx_context, user_range) ORDER BY pid""").fetchall()
    assert layers == [(1, "(outside user ranges), step/fwd, step/bwd"), (2, "step/zz")]


def test_hex_le_uint_and_int_read_little_endian_bytes():
    """Against struct.pack: every width of 1 to 8 bytes at an odd offset, the top bit set and clear, signed and
    unsigned; NULL outside the data, for no data, a width outside 1..8 and digits that are not hex."""
    import struct
    con = connection()
    cases = []
    for width, fmt in ((1, "b"), (2, "h"), (4, "i"), (8, "q")):
        for value in (0, 1, 5, -1, -(1 << (8 * width - 1)), (1 << (8 * width - 1)) - 1, -77):
            data = b"\x99" + struct.pack("<" + fmt, value) + b"\x11"
            cases.append((data.hex().upper(), width, value, value % (1 << (8 * width))))
    for width in (3, 5, 6, 7):  # widths no C type has: the same rule
        data = bytes(range(1, width + 3))
        cases.append((data.hex(), width, None, int.from_bytes(data[1:1 + width], "little")))
    for h, width, signed, unsigned in cases:
        got = con.execute("SELECT hex_le_uint($h, 1, $w), hex_le_int($h, 1, $w, true), hex_le_int($h, 1, $w, false)",
                          {"h": h, "w": width}).fetchone()
        assert got[0] == unsigned and got[2] == (unsigned if unsigned < 1 << 63 else None)
        if signed is not None:
            assert got[1] == signed
    outside = con.execute("SELECT hex_le_uint('0102', 1, 2), hex_le_uint('0102', -1, 1), hex_le_uint(NULL, 0, 1), "
                          "hex_le_uint('01', 0, 0), hex_le_uint('010203040506070809', 0, 9), hex_le_uint('zz', 0, 1), "
                          "hex_le_int('0102', 1, 2, true)").fetchone()
    assert outside == (None,) * 7
    assert con.execute("SELECT hex_le_uint('2A000000', 0, 4), hex_le_int('FFFF', 0, 2, true)").fetchone() == (42, -1)


# Real kernel names from the fixtures (nsys-stats_cuda_gpu_kern_sum.csv of fixtures/* and ../shared/samples/*), and
# what runs them: written out by hand, not derived from the macro's patterns.
TENSOR_CORE_NAMES = [
    # TF32: the operands fp32 in memory, the products on tensor cores (bwdtruth-resnet18, cuDNN 9 on H100)
    ("sm90_xmma_fprop_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize64x128x32_warpgroupsize1x1x1_g1_"
     "execute_segment_k_off_kernel__5x_cudnn", "yes"),
    ("sm90_xmma_wgrad_indexed_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize64x64x32_warpgroupsize1x1x1_g1_"
     "execute_split_k_kernel__5x_cudnn", "yes"),
    ("sm80_xmma_dgrad_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize64x32x64_stage5_warpsize2x2x1_g1_"
     "tensor16x8x8_execute_kernel__5x_cudnn", "yes"),
    ("void cutlass__5x_cudnn::Kernel<cutlass_tensorop_s1688fprop_optimized_tf32_256x64_16x4_nhwc_align4>(T1::Params)",
     "yes"),
    # bf16 / f16 (gpt-tiny-train-bf16, the DDP samples)
    ("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT", "yes"),
    ("nvjet_sm90_tst_32x64_64x16_2x4_h_bz_splitK_NNN", "yes"),
    ("sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x64_warpgroupsize1x1x1_g1_"
     "execute_segment_k_off_kernel__5x_cudnn", "yes"),
    ("void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_bf16_128x64_64x3_nn_align2>(T1::Params)", "yes"),
    ("void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x1_nn_align2>(T1::Params)", "yes"),
    ("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64_4x1x1_cga1x1x1_kernel0_0", "yes"),
    ("void cutlass__5x_cudnn::Kernel<cutlass__5x_cudnn::conv::kernel::ImplicitGemmConvolution<cutlass__5x_cudnn::conv::"
     "threadblock::ImplicitGemmMultistage<cutlass__5x_cudnn::gemm::GemmShape<(int)64, (int)64, (int)32>, "
     "cutlass__5x_cudnn::gemm::warp::MmaTensorOp<cutlass__5x_cudnn::gemm::GemmShape<(int)32, (int)32, (int)32>, "
     "cutlass__5x_cudnn::tfloat32_t>>>(T1::Params)", "yes"),
    # fp32 memory-efficient attention on sm80+: CUTLASS's 3xTF32 tensor-core path
    ("fmha_cutlassF_f32_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<float, cutlass::arch::Sm80, "
     "(bool)1, (int)64, (int)64, (int)64, (bool)1, (bool)1>::Params)", "yes"),
    # fp32 on CUDA cores (gpt-tiny-train-fp32, cnn-*, whatif-cnn-base)
    ("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_aligna4_alignc4_execute_kernel_"
     "_5x_cublas", "no"),
    ("sm80_xmma_fprop_implicit_gemm_f32f32_f32f32_f32_nchwkcrs_nchw_tilesize128x32x8_stage3_warpsize2x2x1_g1_ffma_"
     "aligna4_alignc4_execute_kernel__5x_cudnn", "no"),
    ("sm80_xmma_gemm_cf32cf32_f32f32_cf32_nt_n_tilesize32x32x8_stage3_warpsize2x2x1_ffma_aligna8_alignc8_execute_"
     "kernel__5x_cublas", "no"),
    ("void cutlass::Kernel2<cutlass_80_simt_sgemm_64x64_8x5_nt_align1>(T1::Params)", "no"),
    ("volta_sgemm_32x32_sliced1x4_tn", "no"),
    ("volta_scudnn_winograd_128x128_ldg1_ldg4_relu_tile148t_nt_v1", "no"),
    ("void cudnn::detail::implicit_convolve_sgemm<float, float, (int)128, (int)5, (int)5, (int)3, (int)3, (int)3, "
     "(int)1, (bool)1, (bool)0, (bool)1>(int, int, int, const T1 *, int, T2 *, T1 *, kernel_conv_params, int)", "no"),
    ("void precomputed_convolve_sgemm<__nv_bfloat16, (int)128, (int)6, (int)7, (int)3, (int)3, (int)5, (int)1, "
     "(bool)0>(int, int, int, const T1 *, int, T1 *, const T1 *, kernel_conv_params)", "no"),
    ("void cudnn::detail::dgrad_engine<float, (int)512, (int)6, (int)5, (int)3, (int)3, (int)3, (bool)0>(int, int)",
     "no"),
    ("void gemv2T_kernel_val<int, int, float, float, float, float, (int)128, (int)16, (int)2, (int)2, (bool)0, "
     "(bool)0, cublasGemvParamsEx<int>>(T13, T6, T6)", "no"),
    ("void gemmSN_NN_kernel<float, (int)128, (int)2, (int)4, (int)8, (int)3, (int)4, "
     "cublasGemvTensorStridedBatched<const float>>(cublasGemmSmallNParams<T8, T9, T1>)", "no"),
    # helpers and other kernels: no matrix multiplication
    ("void cublasLt::splitKreduce_kernel<(int)32, (int)16, int, __nv_bfloat16, __nv_bfloat16, float, __nv_bfloat16, "
     "(bool)0>(cublasLt::cublasSplitKParams<T6>, const T4 *)", "no"),
    ("void cask_plugin__5x_cudnn::xmma__5x_cudnn::init_device_workspace_kernel<xmma__5x_cudnn::implicit_gemm::fprop::"
     "Warp_specialized_params_non_template<xmma__5x_cudnn::Grid_constant_params>>(T1, bool)", "no"),
    ("void fft2d_r2c_16x16<float>(float2 *, const T1 *, int, int, int, int, int, int, int, int)", "no"),
    ("void at::native::<unnamed>::multi_tensor_apply_kernel<at::native::<unnamed>::FusedOptimizerTensorListMetadata"
     "<(int)4>>(T1, T2, T3...)", "no"),
    ("triton_poi_fused_addmm_relu_0", "no"),
    ("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<(unsigned long)4096>)", "no"),
    # a GEMM whose name gives no precision
    ("triton_tem_fused_mm_0", "unknown"),
    ("void cutlass::Kernel2<my_gemm_128x128_32x3_nn_align8>(T1::Params)", "unknown"),
]


def test_tensor_core_class_on_real_kernel_names():
    con = duckdb.connect()
    macros.install(con)
    got = con.execute("SELECT tensor_core_class(n) FROM (SELECT unnest(?) AS n, generate_subscripts(?, 1) AS i) "
                      "ORDER BY i", [[n for n, _ in TENSOR_CORE_NAMES]] * 2).fetchall()
    assert [(n, c) for (n, _), (c,) in zip(TENSOR_CORE_NAMES, got)] == TENSOR_CORE_NAMES
    # is_fp32_gemm: only the CUDA-core fp32 GEMMs, never a TF32 one
    fp32 = {n for n, c in TENSOR_CORE_NAMES if con.execute("SELECT is_fp32_gemm(?)", [n]).fetchone()[0]}
    assert not any("tf32" in n for n in fp32)
    assert TENSOR_CORE_NAMES[13][0] in fp32 and TENSOR_CORE_NAMES[0][0] not in fp32


# -- the recipes' macros (NVIDIA's pandas and numpy steps, written out plainly here) ------------------------------
def pandas_groups(rows: list[tuple]) -> list[int]:
    """NVIDIA's group_overlapping_ranges over (start, end) rows, end None for NaN: sort by start, cumulative max of
    the ends (skipping NaN, NaN where the row's own end is), a new group where start > the previous row's value."""
    order = sorted(range(len(rows)), key=lambda i: rows[i][0])
    groups, group, reach, prev = [0] * len(rows), 0, None, None
    for k, i in enumerate(order):
        s, e = rows[i]
        if k and prev is not None and s > prev:
            group += 1
        groups[i] = group
        if e is not None:
            reach = e if reach is None else max(reach, e)
        prev = None if e is None else reach
    return groups


def test_overlap_keep_groups_as_nvidia_does():
    """A chain of overlaps links an item to a chosen interval; touching counts; an event without an end joins the
    next one in time to its group (pandas' NaN), and a gap opens a new group."""
    items = [(1, 0, 10), (2, 8, 20), (3, 20, 25), (4, 30, 40), (5, 38, None), (6, 50, 60), (7, 70, 80), (8, 90, 95)]
    chosen = [(35, 36), (92, 93)]
    rows = [(s, e) for _, s, e in items] + chosen
    groups = pandas_groups(rows)
    want = sorted(i for (i, _, _), g in zip(items, groups) if g in set(groups[len(items):]))
    con = duckdb.connect()
    macros.install(con)
    values = ", ".join(f"({i}, {s}, {'NULL' if e is None else e})" for i, s, e in items)
    got = [r[0] for r in con.execute(f"""
        WITH items(id, s, e) AS (VALUES {values}), chosen(s, e) AS (VALUES (35, 36), (92, 93))
        SELECT id FROM overlap_keep(items, chosen) ORDER BY id""").fetchall()]
    assert got == want
    assert got == [4, 5, 6, 8]  # spelled out: 5 (no end) links 6 to 4's group; 1-3 and 7 stay apart


def test_nvtx_chosen_by_name_domain_and_index():
    con = duckdb.connect()
    macros.install(con)
    con.execute("""CREATE TEMP TABLE events AS SELECT * FROM (VALUES
        (1, 0, 10, 'step', '', true), (2, 5, NULL, 'step', NULL, false), (3, 20, 30, 'step', 'nccl', true),
        (4, 40, 50, 'step', '', true), (5, 60, 70, 'other', '', true))
        AS t(event_id, start_ns, end_ns, text, domain_name, is_range)""")

    def ids(*args):
        return [r[0] for r in con.execute("SELECT event_id FROM nvtx_chosen(events, ?, ?, ?) ORDER BY 1",
                                          list(args)).fetchall()]

    assert ids("step", None, None) == [1, 4]  # default domain, ranges only
    assert ids("step", None, 1) == [4]  # the second of those, from 0
    assert ids("step", "*", None) == [1, 2, 3, 4]  # any domain, marks too
    assert ids("step", "*", 1) == [2]
    assert ids("step", "nccl", None) == [3]
    assert ids("step", None, 2) == [] and ids("nope", None, None) == []


def numpy_bins(intervals: list[tuple[int, int]], bin_size: int, bins: int, max_duration: int, offset: int) -> list:
    """NVIDIA's heatmap.calculate_bin_pcts in plain floats, in its order: one-bin intervals first, then the others."""
    def info(s, e):
        ss, es = s / bin_size, e / bin_size
        return math.floor(ss), math.floor(es), min(math.ceil(ss), es) - ss, es - max(math.floor(es), ss)
    pct = [0.0] * bins
    parts = [info(s, e) for s, e in intervals]
    for sb, eb, sp, _ in parts:
        if sb == eb:
            pct[sb] += sp
    for sb, eb, sp, ep in parts:
        if sb != eb:
            pct[eb] += ep
            pct[sb] += sp
            for b in range(sb + 1, eb):
                pct[b] += 1.0
    sb0, eb0, sp0, ep0 = info(offset, max_duration)
    if sp0 != 0:
        pct[sb0] /= sp0
    if ep0 != 0 and sb0 != eb0:
        pct[eb0] /= ep0
    out = []
    for b, v in enumerate(pct):
        if b > eb0 or b < sb0:
            out.append(None)
        else:  # numpy's round(1): rint(x * 10) / 10, half to even
            out.append(round(v * 100 * 10) / 10)
    return out


def test_heatmap_pct_is_nvidias_arithmetic():
    """Bins of 16 ns over a session from 20 to 150 ns: one-bin and many-bin intervals, one starting on a boundary
    (NVIDIA counts it 0 in a one-bin interval), the partly covered first and last bins scaled, NULL outside, and
    a 1/16 share (6.25 %) rounded half to even (6.2)."""
    intervals = [(34, 35), (48, 52), (70, 100), (101, 103), (130, 149), (75, 80)]
    bin_size, bins, max_duration, offset = 16, 12, 150, 20
    want = numpy_bins(intervals, bin_size, bins, max_duration, offset)
    con = duckdb.connect()
    macros.install(con)
    values = ", ".join(f"(1, {s}, {e}, {i})" for i, (s, e) in enumerate(intervals))
    got = [r[0] for r in con.execute(f"""
        WITH intervals(grp, s, e, rn) AS (VALUES {values}), groups(grp) AS (VALUES (1))
        SELECT pct FROM heatmap_pct(intervals, groups, {bin_size}, {bins}, {max_duration}, {offset})
        ORDER BY bin""").fetchall()]
    assert got == want
    assert got[0] is None and got[10] is None and got[3] == 0.0  # before the session, after it, (48, 52) counts 0
    one = con.execute("""WITH intervals(grp, s, e, rn) AS (VALUES (1, 2, 3, 1)), groups(grp) AS (VALUES (1))
                         SELECT pct FROM heatmap_pct(intervals, groups, 16, 1, 16, 0)""").fetchall()
    assert one == [(6.2,)]  # 1/16 of the bin: 6.25 % to even
