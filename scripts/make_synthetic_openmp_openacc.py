#!/usr/bin/env python3
"""A synthetic Nsight Systems 2025.3 export with OpenMP and OpenACC events, for `openmp_sum` and `openacc_sum`.

Why synthetic: no capture can make these tables on our GPU machine. nsys traces OpenMP through OMPT, which only
LLVM's libomp and NVHPC's runtimes provide (the machine has GNU libgomp, which nsys cannot trace), and OpenACC
through CUPTI in programs built by an OpenACC compiler (NVHPC `nvc -acc`, not installed there). The project's rules
allow a synthetic export, built by a script, for what a capture cannot produce; fixtures/README.md says so too.

What is real: the tables, their columns, types and NOT NULL constraints are those nsys 2025.3.1 writes (the
CREATE TABLE statements of `nsys export --lazy=false`, which writes every table of export schema 3.20.3, comments
left out), and so are the enum ids. What is made up: the rows (a made-up OpenMP program: 4 threads, a parallel
loop, barriers, tasks, a critical section; a made-up OpenACC program: data regions, kernel launches, waits, in
`jacobi.c`) and the event names. NVIDIA's goldens are `nsys stats -r openmp_sum,openacc_sum -f csv` run by nsys
2025.3.1 on exactly the file this script writes (fixtures/synthetic-openmp-openacc/); the rows come from a
seeded generator, so the file is the same on every run and the tests rebuild it instead of keeping a copy.

CLI: `python scripts/make_synthetic_openmp_openacc.py OUT.sqlite`.
"""
from __future__ import annotations

import importlib.util
import random
import sqlite3
import sys
from pathlib import Path

_spec = importlib.util.spec_from_file_location("make_synthetic", Path(__file__).with_name("make_synthetic.py"))
make_synthetic = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_synthetic)  # type: ignore[union-attr]
global_tid = make_synthetic.global_tid

CLASS_OPENMP = 78  # ENUM_NSYS_EVENT_CLASS: TRACE_PROCESS_EVENT_OPENMP

# -- OpenMP: one table per event kind; each starts with the same seven columns ------------------------------
OPENMP_COMMON = [("start", "INTEGER   NOT NULL"), ("end", "INTEGER   NOT NULL"), ("eventClass", "INTEGER   NOT NULL"),
                 ("globalTid", "INTEGER"), ("correlationId", "INTEGER"), ("nameId", "INTEGER   NOT NULL"),
                 ("eventKind", "INTEGER")]
# table suffix -> (ENUM_OPENMP_EVENT_KIND id, the columns after the common seven, all INTEGER)
OPENMP_KINDS = {
    "THREAD": (27, ["threadId", "threadType"]),
    "PARALLEL": (28, ["parallelId", "parentTaskId"]),
    "SYNC_REGION_WAIT": (29, ["parallelId", "taskId", "kind"]),
    "SYNC_REGION": (30, ["parallelId", "taskId", "kind"]),
    "TASK": (31, ["parallelId", "taskId", "kind"]),
    "MASTER": (32, ["parallelId", "taskId"]),
    "REDUCTION": (33, ["parallelId", "taskId"]),
    "TASK_CREATE": (15, ["parentTaskId", "newTaskId"]),
    "TASK_SCHEDULE": (16, ["parallelId", "priorTaskId", "priorTaskStatus", "nextTaskId"]),
    "CANCEL": (17, ["taskId"]),
    "MUTEX_WAIT": (34, ["kind", "waitId", "taskId"]),
    "CRITICAL_SECTION": (35, ["kind", "waitId"]),
    "MUTEX_RELEASED": (20, ["kind", "waitId", "taskId"]),
    "LOCK_INIT": (21, ["kind", "waitId"]),
    "LOCK_DESTROY": (22, ["kind", "waitId"]),
    "WORKSHARE": (36, ["kind", "parallelId", "taskId", "count"]),
    "DISPATCH": (25, ["kind", "parallelId", "taskId"]),
    "FLUSH": (26, ["threadId"]),
}

# -- OpenACC: three CUPTI activity tables; each starts with the same thirteen columns -----------------------
OPENACC_COMMON = [("start", "INTEGER   NOT NULL"), ("end", "INTEGER   NOT NULL"), ("nameId", "INTEGER   NOT NULL"),
                  ("globalTid", "INTEGER"), ("eventKind", "INTEGER   NOT NULL"), ("DeviceType", "INTEGER   NOT NULL"),
                  ("lineNo", "INTEGER   NOT NULL"), ("cuDeviceId", "INTEGER   NOT NULL"),
                  ("cuContextId", "INTEGER   NOT NULL"), ("cuStreamId", "INTEGER   NOT NULL"),
                  ("srcFile", "INTEGER"), ("funcName", "INTEGER"), ("correlationId", "INTEGER")]
OPENACC_TABLES = {
    "DATA": [("bytes", "INTEGER"), ("varName", "INTEGER")],
    "LAUNCH": [("numGangs", "INTEGER"), ("numWorkers", "INTEGER"), ("vectorLength", "INTEGER"),
               ("kernelName", "INTEGER")],
    "OTHER": [],
}
# ENUM_OPENACC_EVENT_KIND ids (CUPTI_OPENACC_EVENT_KIND_*)
ACC_LAUNCH, ACC_UPLOAD, ACC_DOWNLOAD, ACC_WAIT, ACC_IMPLICIT_WAIT = 4, 5, 6, 7, 8
ACC_COMPUTE, ACC_UPDATE, ACC_ENTER_DATA, ACC_EXIT_DATA = 9, 10, 11, 12
ACC_CREATE, ACC_DELETE, ACC_ALLOC, ACC_FREE = 13, 14, 15, 16
ACC_DEVICE_INIT, ACC_RUNTIME_SHUTDOWN = 1, 3
ACC_DEVICE_NVIDIA = 4  # ENUM_OPENACC_DEVICE: acc_device_nvidia


def ddl(columns: list[tuple[str, str]]) -> str:
    return ",\n".join(f"    {name:<28}{kind}" for name, kind in columns)


def openmp_columns(kind: str) -> list[tuple[str, str]]:
    return OPENMP_COMMON + [(c, "INTEGER") for c in OPENMP_KINDS[kind][1]]


def openacc_columns(table: str) -> list[tuple[str, str]]:
    return OPENACC_COMMON + OPENACC_TABLES[table]


class ParallelExport(make_synthetic.SyntheticExport):
    """make_synthetic's export plus OPENMP_EVENT_KIND_<KIND> and CUPTI_ACTIVITY_KIND_OPENACC_<TABLE> rows."""

    def __init__(self) -> None:
        super().__init__()
        self.openmp: dict[str, list[dict]] = {k: [] for k in OPENMP_KINDS}
        self.openacc: dict[str, list[dict]] = {t: [] for t in OPENACC_TABLES}

    def omp(self, table: str, name: str, start: int, end: int, *, pid: int, tid: int, **extra) -> None:
        """A row of OPENMP_EVENT_KIND_<table>; `extra` fills its own columns (`kind` is the table's kind column)."""
        allowed = set(OPENMP_KINDS[table][1])
        if set(extra) - allowed:
            raise ValueError(f"OPENMP_EVENT_KIND_{table} has no column(s) {sorted(set(extra) - allowed)}")
        self.openmp[table].append({"start": start, "end": end, "eventClass": CLASS_OPENMP,
                                   "globalTid": global_tid(pid, tid), "correlationId": None,
                                   "nameId": self.string(name), "eventKind": OPENMP_KINDS[table][0], **extra})

    def acc(self, table: str, name: str, event_kind: int, start: int, end: int, *, pid: int, tid: int,
            line: int, src: str | None, func: str | None, **extra) -> None:
        allowed = {c for c, _ in OPENACC_TABLES[table]}
        if set(extra) - allowed:
            raise ValueError(f"CUPTI_ACTIVITY_KIND_OPENACC_{table} has no column(s) {sorted(set(extra) - allowed)}")
        names = {k: (self.string(v) if isinstance(v, str) else v) for k, v in extra.items()}
        self.openacc[table].append({"start": start, "end": end, "nameId": self.string(name),
                                    "globalTid": global_tid(pid, tid), "eventKind": event_kind,
                                    "DeviceType": ACC_DEVICE_NVIDIA, "lineNo": line, "cuDeviceId": 0,
                                    "cuContextId": 1, "cuStreamId": 13,
                                    "srcFile": None if src is None else self.string(src),
                                    "funcName": None if func is None else self.string(func), **names})

    def _time_span(self) -> tuple[int, int]:
        ends = [r["end"] for rows in (*self.openmp.values(), *self.openacc.values()) for r in rows]
        base = super()._time_span()
        return (0, max([base[1], *[e + 1000 for e in ends]]))

    def write(self, path) -> Path:
        path = super().write(path)  # StringIds (every name above included), metadata, threads, enums
        con = sqlite3.connect(path)
        try:
            tables = [(f"OPENMP_EVENT_KIND_{k}", openmp_columns(k), rows) for k, rows in self.openmp.items()]
            tables += [(f"CUPTI_ACTIVITY_KIND_OPENACC_{t}", openacc_columns(t), rows) for t, rows in self.openacc.items()]
            for table, columns, rows in tables:
                if not rows:  # nsys exports lazily: a table only when it has rows
                    continue
                con.execute(f"CREATE TABLE {table} (\n{ddl(columns)}\n)")
                names = [c for c, _ in columns]
                con.executemany(f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
                                [tuple(r.get(c) for c in names) for r in rows])
            con.commit()
        finally:
            con.close()
        return path


P = 4242          # the process
MAIN = 4242       # its initial thread
WORKERS = [4243, 4244, 4245]


def openmp_openacc() -> ParallelExport:
    """One process: an OpenMP part on 4 threads, then an OpenACC part on its main thread. Durations come from a
    seeded generator (random.Random(14)), so every run writes the same rows.

    OpenMP (per thread unless said): a Thread event each; 6 parallel regions on the main thread, each with, on every
    thread, a loop (Workshare), an implicit barrier (Sync Region, and a Sync Region Wait inside it named like it:
    NVIDIA sums each table on its own, so `openmp_sum` shows two rows of that name), and a Task; 3 Task creates per
    region on the main thread; a critical section with a mutex wait before it on every thread; one Master per region.

    OpenACC (main thread, source jacobi.c): per iteration (5) a compute construct at line 42 with an enqueue launch
    of the kernel and an implicit wait, an update at line 57 with an enqueue download; a data region (enter data at
    line 30: create, alloc and enqueue upload of two arrays; exit data at line 70: enqueue download, delete, free),
    device init and runtime shutdown without a source file (so `openacc_sum` names them without `@file:line`), and
    the same compute construct at a second line (88) to show that lines are kept apart."""
    rng = random.Random(14)
    b = ParallelExport()
    b.thread(P, MAIN, "jacobi", process_name="jacobi")
    for i, tid in enumerate(WORKERS):
        b.thread(P, tid, f"omp worker {i + 1}", process_name="jacobi")
    threads = [MAIN, *WORKERS]
    t = 1_000_000
    region_starts = []
    for region in range(6):
        start = t
        region_starts.append(start)
        b.omp("TASK_CREATE", "Task create", start + 500, start + 500 + rng.randint(200, 900), pid=P, tid=MAIN,
              parentTaskId=1, newTaskId=100 + 3 * region)
        for k in (1, 2):
            ts = start + 2_000 + 1_500 * k
            b.omp("TASK_CREATE", "Task create", ts, ts + rng.randint(200, 900), pid=P, tid=MAIN,
                  parentTaskId=1, newTaskId=100 + 3 * region + k)
        region_end = start
        for n, tid in enumerate(threads):
            loop_start = start + 8_000 + rng.randint(0, 3_000)
            loop_end = loop_start + rng.randint(40_000, 90_000)
            b.omp("WORKSHARE", "Loop region", loop_start, loop_end, pid=P, tid=tid, kind=1,
                  parallelId=region + 1, taskId=10 * (region + 1) + n, count=250)
            task_start = loop_end + rng.randint(500, 2_000)
            task_end = task_start + rng.randint(3_000, 12_000)
            b.omp("TASK", "Explicit task", task_start, task_end, pid=P, tid=tid, parallelId=region + 1,
                  taskId=100 + 3 * region + n % 3, kind=3)
            wait_start = task_end + rng.randint(1_000, 3_000)
            b.omp("MUTEX_WAIT", "Critical wait", wait_start, wait_start + rng.randint(100, 6_000), pid=P, tid=tid,
                  kind=5, waitId=7, taskId=10 * (region + 1) + n)
            crit_start = wait_start + 6_500
            crit_end = crit_start + rng.randint(800, 2_500)
            b.omp("CRITICAL_SECTION", "Critical section", crit_start, crit_end, pid=P, tid=tid, kind=5, waitId=7)
            barrier_start = crit_end + rng.randint(200, 800)
            barrier_end = start + 150_000 + rng.randint(0, 500)
            wait_from = barrier_start + rng.randint(100, 400)
            b.omp("SYNC_REGION", "Implicit barrier", barrier_start, barrier_end, pid=P, tid=tid,
                  parallelId=region + 1, taskId=10 * (region + 1) + n, kind=2)
            b.omp("SYNC_REGION_WAIT", "Implicit barrier", wait_from, barrier_end - rng.randint(50, 300), pid=P,
                  tid=tid, parallelId=region + 1, taskId=10 * (region + 1) + n, kind=2)
            region_end = max(region_end, barrier_end)
        b.omp("MASTER", "Master", start + 1_000, start + 1_000 + rng.randint(2_000, 5_000), pid=P, tid=MAIN,
              parallelId=region + 1, taskId=10 * (region + 1))
        b.omp("PARALLEL", "Parallel region", start, region_end + rng.randint(1_000, 2_000), pid=P, tid=MAIN,
              parallelId=region + 1, parentTaskId=1)
        t = region_end + 20_000 + rng.randint(0, 10_000)
    for n, tid in enumerate(threads):
        b.omp("THREAD", "Thread", 900_000 + 1_000 * n, t + 5_000 - 700 * n, pid=P, tid=tid, threadId=n + 1,
              threadType=1 if tid == MAIN else 2)

    src, fn = "/home/user/jacobi/jacobi.c", "main"
    t += 50_000
    b.acc("OTHER", "Device init", ACC_DEVICE_INIT, t, t + 180_000, pid=P, tid=MAIN, line=0, src=None, func=None)
    t += 200_000
    b.acc("OTHER", "Enter data", ACC_ENTER_DATA, t, t + 60_000, pid=P, tid=MAIN, line=30, src=src, func=fn)
    for var, nbytes in (("A", 4_194_304), ("Anew", 4_194_304)):
        b.acc("DATA", "Alloc", ACC_ALLOC, t + 1_000, t + 1_000 + rng.randint(3_000, 9_000), pid=P, tid=MAIN,
              line=30, src=src, func=fn, bytes=nbytes, varName=var)
        b.acc("DATA", "Create", ACC_CREATE, t + 11_000, t + 11_000 + rng.randint(500, 1_500), pid=P, tid=MAIN,
              line=30, src=src, func=fn, bytes=nbytes, varName=var)
        b.acc("DATA", "Enqueue upload", ACC_UPLOAD, t + 14_000, t + 14_000 + rng.randint(20_000, 40_000), pid=P,
              tid=MAIN, line=30, src=src, func=fn, bytes=nbytes, varName=var)
        t += 1_000
    t += 70_000
    for it in range(5):
        for line in (42, 88) if it % 2 == 0 else (42,):
            cstart = t
            launch = rng.randint(6_000, 14_000)
            wait = rng.randint(20_000, 60_000)
            b.acc("OTHER", "Compute construct", ACC_COMPUTE, cstart, cstart + launch + wait + 2_000, pid=P,
                  tid=MAIN, line=line, src=src, func=fn)
            b.acc("LAUNCH", "Enqueue launch", ACC_LAUNCH, cstart + 500, cstart + 500 + launch, pid=P, tid=MAIN,
                  line=line, src=src, func=fn, numGangs=1024, numWorkers=1, vectorLength=128,
                  kernelName=f"main_{line}_gpu")
            b.acc("OTHER", "Implicit wait", ACC_IMPLICIT_WAIT, cstart + launch + 1_000, cstart + launch + wait,
                  pid=P, tid=MAIN, line=line, src=src, func=fn)
            t = cstart + launch + wait + 5_000
        ustart = t
        down = rng.randint(9_000, 16_000)
        b.acc("OTHER", "Update", ACC_UPDATE, ustart, ustart + down + 3_000, pid=P, tid=MAIN, line=57, src=src, func=fn)
        b.acc("DATA", "Enqueue download", ACC_DOWNLOAD, ustart + 1_000, ustart + 1_000 + down, pid=P, tid=MAIN,
              line=57, src=src, func=fn, bytes=8, varName="error")
        b.acc("OTHER", "Wait", ACC_WAIT, ustart + down + 1_200, ustart + down + 2_600 + rng.randint(0, 400), pid=P,
              tid=MAIN, line=57, src=src, func=fn)
        t = ustart + down + 10_000
    b.acc("OTHER", "Exit data", ACC_EXIT_DATA, t, t + 90_000, pid=P, tid=MAIN, line=70, src=src, func=fn)
    for var, nbytes in (("A", 4_194_304), ("Anew", 4_194_304)):
        b.acc("DATA", "Enqueue download", ACC_DOWNLOAD, t + 2_000, t + 2_000 + rng.randint(25_000, 35_000),
              pid=P, tid=MAIN, line=70, src=src, func=fn, bytes=nbytes, varName=var)
        b.acc("DATA", "Delete", ACC_DELETE, t + 40_000, t + 40_000 + rng.randint(400, 1_200), pid=P, tid=MAIN,
              line=70, src=src, func=fn, bytes=nbytes, varName=var)
        b.acc("DATA", "Free", ACC_FREE, t + 45_000, t + 45_000 + rng.randint(2_000, 6_000), pid=P, tid=MAIN,
              line=70, src=src, func=fn, bytes=nbytes, varName=var)
        t += 1_000
    t += 100_000
    b.acc("OTHER", "Runtime shutdown", ACC_RUNTIME_SHUTDOWN, t, t + 40_000, pid=P, tid=MAIN, line=0, src=None,
          func=None)
    return b


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: make_synthetic_openmp_openacc.py OUT.sqlite", file=sys.stderr)
        return 2
    print(openmp_openacc().write(args[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
