"""The SQL library (queries/macros/): each macro on a few rows written out by hand, against busy time counted
by a plain walk over the same intervals."""
from __future__ import annotations

import duckdb

from nsysql import catalog, macros

# two processes' disjoint busy intervals, as analysis.process_busy gives them (before_ns, idx)
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


def test_busy_in_step_equals_a_plain_walk():
    """Probes inside analysed steps against the steps' clipped busy intervals (analysis.step_busy's rows)."""
    con = duckdb.connect()
    steps = {1: (100, 5, 45), 2: (100, 55, 70), 3: (200, 400, 800)}  # step -> (pid, start, end)
    rows, idx = [], 0
    for step, (pid, ws, we) in sorted(steps.items()):
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
    probes = [(1, 1, 5, 45), (2, 1, 15, 35), (3, 1, 20, 30), (4, 2, 55, 60), (5, 2, 60, 70), (6, 3, 500, 700),
              (7, 3, 400, 400), (8, 1, 5, 10)]  # (id, step, s, e), each inside its step
    values = ", ".join(f"({i}, {step}, {s}, {e})" for i, step, s, e in probes)
    got = dict(con.execute(f"WITH probe(id, step, s, e) AS (VALUES {values}) "
                           "SELECT id, busy_ns FROM busy_in_step(probe, step_busy) ORDER BY id").fetchall())
    assert got == {i: busy_walk(steps[step][0], s, e) for i, step, s, e in probes}
    assert got[1] == 25 and got[5] == 1 and got[8] == 0  # spelled out


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
