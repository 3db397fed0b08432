"""kernel, runtime, gpu_op and osrt are views over integer tables whose names are ENUMs of nsys_string (normalize.nsys3.name):
every row must still read as the export's strings, checked here against a plain sqlite3 reading of the export."""
from __future__ import annotations

import re
import sqlite3
from collections import Counter


def test_the_big_tables_are_views_over_lean_tables(opened):
    con = opened["gpt-tiny-train-fp32"].con
    kinds = dict(con.execute("SELECT table_name, table_type FROM information_schema.tables "
                             "WHERE table_schema = 'main'").fetchall())
    for view, stored in (("kernel", "kernel_int"), ("runtime", "runtime_int"), ("gpu_op", "gpu_op_int"),
                         ("osrt", "osrt_int")):
        assert kinds[view] == "VIEW" and kinds[stored] == "BASE TABLE"
    assert kinds["name"] == "BASE TABLE"


def test_names_read_back_as_the_export_wrote_them(opened, export_files):
    ex = opened["gpt-tiny-train-fp32"]
    plain = sqlite3.connect(export_files["gpt-tiny-train-fp32"])
    strings = dict(plain.execute("SELECT id, value FROM StringIds"))
    kernels = {rowid: (strings.get(d), strings.get(s), strings.get(m)) for rowid, d, s, m in plain.execute(
        "SELECT rowid, demangledName, shortName, mangledName FROM CUPTI_ACTIVITY_KIND_KERNEL")}
    got = {r[0]: r[1:] for r in ex.con.execute(
        "SELECT kernel_id, kernel_name, short_name, mangled_name FROM kernel").fetchall()}
    assert kernels and got == kernels
    calls = {rowid: strings.get(n) for rowid, n in plain.execute("SELECT rowid, nameId FROM CUPTI_ACTIVITY_KIND_RUNTIME")}
    got = {r[0]: r[1:] for r in ex.con.execute("SELECT runtime_id, api_name, api_short_name FROM runtime").fetchall()}
    assert calls and got == {k: (v, re.sub(r"_v[0-9]{4}$", "", v)) for k, v in calls.items()}
    ops = ex.con.execute("SELECT op_kind, op_id, op_name FROM gpu_op").fetchall()
    assert {(i, n) for k, i, n in ops if k == "kernel"} == {(i, v[0]) for i, v in kernels.items()}
    assert all(n.startswith("[CUDA memcpy ") for k, _, n in ops if k == "memcpy")


def test_os_runtime_calls_read_back_as_the_export_wrote_them(opened, export_files):
    """osrt (a view over osrt_int, the API name an ENUM): every OS runtime call but the start/finish markers, with
    its name as StringIds has it and pid/tid unpacked from globalTid."""
    ex = opened["gpt-tiny-train-fp32"]
    plain = sqlite3.connect(export_files["gpt-tiny-train-fp32"])
    strings = dict(plain.execute("SELECT id, value FROM StringIds"))
    calls = Counter((s, e, g, (g >> 24) & 0xFFFFFF, g & 0xFFFFFF, strings.get(n), level) for s, e, g, n, level in plain.execute(
        'SELECT start, "end", globalTid, nameId, nestingLevel FROM OSRT_API WHERE eventClass NOT IN (31, 32)'))
    got = Counter(ex.con.execute("SELECT start_ns, end_ns, global_tid, pid, tid, api_name, nesting_level FROM osrt").fetchall())
    assert calls and got == calls
