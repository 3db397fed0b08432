#!/usr/bin/env python3
"""Synthetic Nsight Systems SQLite exports for edge cases a real capture cannot (easily) produce.

The files have the raw tables of an nsys 2025.3 export (schema 3.20.3): the column lists and
types are those of the CREATE TABLE statements in a real export's sqlite_master (comments left
out). As nsys exports lazily, an event table is written only when it has rows; StringIds,
META_DATA_EXPORT, ANALYSIS_DETAILS and the ENUM_* tables are always written.

Ids are packed as nsys packs them: globalTid = (1 << 48) | (pid << 24) | tid and
globalPid = globalTid with the tid bits zeroed, so pid = (globalTid >> 24) & 0xFFFFFF and
tid = globalTid & 0xFFFFFF. (The 1 << 48 is the high "vm id" part every id of a real
single-machine export carries.)

Library use (tests import this file by path):

    b = SyntheticExport()
    b.thread(100, 100, "python3")
    b.range("step", 1000, 9000, pid=100, tid=100)
    b.launch(start=1100, end=1150, pid=100, tid=100, correlation_id=1,
             kernel=("gemm", 1200, 1600, 7, 0))
    b.write("step.sqlite")

CLI: `python scripts/make_synthetic.py OUTDIR` writes every case of CASES as OUTDIR/<case>.sqlite.
Each case function documents its numbers; tests/test_synthetic.py checks nsysql against them.
"""
from __future__ import annotations

import argparse
import os
import sqlite3
import sys
from pathlib import Path

SCHEMA_VERSION = "3.20.3"
PRODUCT_VERSION = "2025.3.2.0"
VM_ID = 1 << 48

# NVTX event types (ENUM_NSYS_EVENT_TYPE)
NVTX_MARK = 34
NVTX_PUSHPOP = 59
NVTX_STARTEND = 60
NVTX_DOMAIN_CREATE = 75
# event classes (ENUM_NSYS_EVENT_CLASS)
CLASS_CUDA_RUNTIME = 0
CLASS_CUDA_DRIVER = 1
CLASS_OSRT = 27
CLASS_OSRT_START = 31
CLASS_OSRT_FINISH = 32
# ENUM_CUDA_MEMCPY_OPER / ENUM_CUDA_MEM_KIND ids
HTOD, DTOH, DTOD = 1, 2, 8
PAGEABLE, PINNED, DEVICE = 0, 1, 2
# ENUM_CUPTI_SYNC_TYPE ids. A real export stores cudaStreamSynchronize as 2 too (with eventSyncId NO_EVENT),
# and writes no SYNCHRONIZATION row for cudaDeviceSynchronize.
SYNC_EVENT_SYNCHRONIZE, SYNC_STREAM_WAIT_EVENT = 1, 2
NO_EVENT = 4294967295  # eventId / eventSyncId of a synchronization without an event


def global_tid(pid: int, tid: int) -> int:
    return VM_ID | (pid << 24) | tid


def global_pid(pid: int) -> int:
    return VM_ID | (pid << 24)


# Column lists as in a real nsys 2025.3 export (sqlite_master), comments dropped.
# column blocks nsys repeats in several tables (its DDL text, kept as written)
_TIMED = """
    start                       INTEGER   NOT NULL,
    end                         INTEGER   NOT NULL,"""
_ON_STREAM = """
    deviceId                    INTEGER   NOT NULL,
    contextId                   INTEGER   NOT NULL,
    greenContextId              INTEGER,
    streamId                    INTEGER   NOT NULL,
    correlationId               INTEGER,
    globalPid                   INTEGER,"""
_ENUM = """
    id                          INTEGER   NOT NULL   PRIMARY KEY,
    name                        TEXT,
    label                       TEXT"""

DDL = {
    "StringIds": """
    id                          INTEGER   NOT NULL   PRIMARY KEY,
    value                       TEXT      NOT NULL""",
    "META_DATA_EXPORT": """
    name                        TEXT      NOT NULL,
    value                       TEXT""",
    "ThreadNames": """
    nameId                      INTEGER   NOT NULL,
    priority                    INTEGER,
    globalTid                   INTEGER""",
    "PROCESSES": """
    globalPid                   INTEGER,
    pid                         INTEGER,
    name                        TEXT""",
    "TARGET_INFO_GPU": """
    vmId                        INTEGER   NOT NULL,
    id                          INTEGER   NOT NULL,
    name                        TEXT,
    busLocation                 TEXT,
    isDiscrete                  INTEGER,
    l2CacheSize                 INTEGER,
    totalMemory                 INTEGER,
    memoryBandwidth             INTEGER,
    clockRate                   INTEGER,
    smCount                     INTEGER,
    pwGpuId                     INTEGER,
    uuid                        TEXT,
    luid                        INTEGER,
    chipName                    TEXT,
    cuDevice                    INTEGER,
    ctxswDevPath                TEXT,
    ctrlDevPath                 TEXT,
    revision                    INTEGER,
    nodeMask                    INTEGER,
    constantMemory              INTEGER,
    maxIPC                      INTEGER,
    maxRegistersPerBlock        INTEGER,
    maxShmemPerBlock            INTEGER,
    maxShmemPerBlockOptin       INTEGER,
    maxShmemPerSm               INTEGER,
    maxRegistersPerSm           INTEGER,
    threadsPerWarp              INTEGER,
    asyncEngines                INTEGER,
    maxWarpsPerSm               INTEGER,
    maxBlocksPerSm              INTEGER,
    maxThreadsPerBlock          INTEGER,
    maxBlockDimX                INTEGER,
    maxBlockDimY                INTEGER,
    maxBlockDimZ                INTEGER,
    maxGridDimX                 INTEGER,
    maxGridDimY                 INTEGER,
    maxGridDimZ                 INTEGER,
    computeMajor                INTEGER,
    computeMinor                INTEGER,
    smMajor                     INTEGER,
    smMinor                     INTEGER""",
    "ANALYSIS_DETAILS": """
    globalVid                   INTEGER   NOT NULL,
    duration                    INTEGER   NOT NULL,
    startTime                   INTEGER   NOT NULL,
    stopTime                    INTEGER   NOT NULL""",
    "CUPTI_ACTIVITY_KIND_RUNTIME": """
    start                       INTEGER   NOT NULL,
    end                         INTEGER   NOT NULL,
    eventClass                  INTEGER   NOT NULL,
    globalTid                   INTEGER,
    correlationId               INTEGER,
    nameId                      INTEGER   NOT NULL,
    returnValue                 INTEGER   NOT NULL,
    callchainId                 INTEGER""",
    "CUPTI_ACTIVITY_KIND_KERNEL": _TIMED + _ON_STREAM + """
    demangledName               INTEGER   NOT NULL,
    shortName                   INTEGER   NOT NULL,
    mangledName                 INTEGER,
    launchType                  INTEGER,
    cacheConfig                 INTEGER,
    registersPerThread          INTEGER   NOT NULL,
    gridX                       INTEGER   NOT NULL,
    gridY                       INTEGER   NOT NULL,
    gridZ                       INTEGER   NOT NULL,
    blockX                      INTEGER   NOT NULL,
    blockY                      INTEGER   NOT NULL,
    blockZ                      INTEGER   NOT NULL,
    staticSharedMemory          INTEGER   NOT NULL,
    dynamicSharedMemory         INTEGER   NOT NULL,
    localMemoryPerThread        INTEGER   NOT NULL,
    localMemoryTotal            INTEGER   NOT NULL,
    gridId                      INTEGER   NOT NULL,
    sharedMemoryExecuted        INTEGER,
    graphNodeId                 INTEGER,
    sharedMemoryLimitConfig     INTEGER""",
    "CUPTI_ACTIVITY_KIND_MEMCPY": _TIMED + _ON_STREAM + """
    bytes                       INTEGER   NOT NULL,
    copyKind                    INTEGER   NOT NULL,
    deprecatedSrcId             INTEGER,
    srcKind                     INTEGER,
    dstKind                     INTEGER,
    srcDeviceId                 INTEGER,
    srcContextId                INTEGER,
    dstDeviceId                 INTEGER,
    dstContextId                INTEGER,
    migrationCause              INTEGER,
    graphNodeId                 INTEGER,
    virtualAddress              INTEGER,
    copyCount                   INTEGER""",
    "CUPTI_ACTIVITY_KIND_MEMSET": _TIMED + _ON_STREAM + """
    value                       INTEGER   NOT NULL,
    bytes                       INTEGER   NOT NULL,
    graphNodeId                 INTEGER,
    memKind                     INTEGER""",
    "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION": _TIMED + _ON_STREAM + """
    deprecatedSyncType          INTEGER,
    syncType                    INTEGER   NOT NULL,
    eventId                     INTEGER   NOT NULL,
    eventSyncId                 INTEGER""",
    "CUPTI_ACTIVITY_KIND_CUDA_EVENT": _ON_STREAM + """
    eventId                     INTEGER   NOT NULL,
    eventSyncId                 INTEGER""",
    "NVTX_EVENTS": """
    start                       INTEGER   NOT NULL,
    end                         INTEGER,
    eventType                   INTEGER   NOT NULL,
    rangeId                     INTEGER,
    category                    INTEGER,
    color                       INTEGER,
    text                        TEXT,
    globalTid                   INTEGER,
    endGlobalTid                INTEGER,
    textId                      INTEGER,
    domainId                    INTEGER,
    uint64Value                 INTEGER,
    int64Value                  INTEGER,
    doubleValue                 REAL,
    uint32Value                 INTEGER,
    int32Value                  INTEGER,
    floatValue                  REAL,
    jsonTextId                  INTEGER,
    jsonText                    TEXT,
    binaryData                  TEXT""",
    "OSRT_API": """
    start                       INTEGER   NOT NULL,
    end                         INTEGER   NOT NULL,
    eventClass                  INTEGER   NOT NULL,
    globalTid                   INTEGER,
    nameId                      INTEGER   NOT NULL,
    returnValue                 INTEGER   NOT NULL,
    nestingLevel                INTEGER,
    callchainId                 INTEGER   NOT NULL""",
    "ENUM_CUDA_MEMCPY_OPER": _ENUM,
    "ENUM_CUDA_MEM_KIND": _ENUM,
    "ENUM_NSYS_EVENT_CLASS": _ENUM,
    "ENUM_CUPTI_SYNC_TYPE": _ENUM,
}

ENUM_ROWS = {
    "ENUM_CUDA_MEMCPY_OPER": [
        (0, "CUDA_MEMCPY_KIND_UNKNOWN", "Unknown"), (1, "CUDA_MEMCPY_KIND_HTOD", "Host-to-Device"),
        (2, "CUDA_MEMCPY_KIND_DTOH", "Device-to-Host"), (3, "CUDA_MEMCPY_KIND_HTOA", "Host-to-Array"),
        (4, "CUDA_MEMCPY_KIND_ATOH", "Array-to-Host"), (5, "CUDA_MEMCPY_KIND_ATOA", "Array-to-Array"),
        (6, "CUDA_MEMCPY_KIND_ATOD", "Array-to-Device"), (7, "CUDA_MEMCPY_KIND_DTOA", "Device-to-Array"),
        (8, "CUDA_MEMCPY_KIND_DTOD", "Device-to-Device"), (9, "CUDA_MEMCPY_KIND_HTOH", "Host-to-Host"),
        (10, "CUDA_MEMCPY_KIND_PTOP", "Peer-to-Peer"), (11, "CUDA_MEMCPY_KIND_UVM_HTOD", "Unified Host-to-Device"),
        (12, "CUDA_MEMCPY_KIND_UVM_DTOH", "Unified Device-to-Host"),
        (13, "CUDA_MEMCPY_KIND_UVM_DTOD", "Unified Device-to-Device"),
    ],
    "ENUM_CUDA_MEM_KIND": [
        (0, "CUDA_MEMOPR_MEMORY_KIND_PAGEABLE", "Pageable"), (1, "CUDA_MEMOPR_MEMORY_KIND_PINNED", "Pinned"),
        (2, "CUDA_MEMOPR_MEMORY_KIND_DEVICE", "Device"), (3, "CUDA_MEMOPR_MEMORY_KIND_ARRAY", "Array"),
        (4, "CUDA_MEMOPR_MEMORY_KIND_MANAGED", "Managed"),
        (5, "CUDA_MEMOPR_MEMORY_KIND_DEVICE_STATIC", "Device Static"),
        (6, "CUDA_MEMOPR_MEMORY_KIND_MANAGED_STATIC", "Managed Static"),
        (7, "CUDA_MEMOPR_MEMORY_KIND_UNKNOWN", "Unknown"),
    ],
    "ENUM_NSYS_EVENT_CLASS": [
        (0, "TRACE_PROCESS_EVENT_CUDA_RUNTIME", "CUDA runtime"),
        (1, "TRACE_PROCESS_EVENT_CUDA_DRIVER", "CUDA driver"),
        (6, "TRACE_PROCESS_EVENT_NVTX_START", "NVTX start"),
        (7, "TRACE_PROCESS_EVENT_NVTX_FINISH", "NVTX finish"),
        (10, "TRACE_PROCESS_EVENT_CUDA_START", "CUDA start"),
        (11, "TRACE_PROCESS_EVENT_CUDA_FINISH", "CUDA finish"),
        (26, "TRACE_PROCESS_EVENT_CUDA_API", "CUDA API"),
        (27, "TRACE_PROCESS_EVENT_OS_RUNTIME", "OSRT runtime"),
        (31, "TRACE_PROCESS_EVENT_OS_RUNTIME_START", "OSRT start"),
        (32, "TRACE_PROCESS_EVENT_OS_RUNTIME_FINISH", "OSRT finish"),
    ],
    "ENUM_CUPTI_SYNC_TYPE": [
        (0, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_UNKNOWN", "Unknown"),
        (1, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE", "Event sync"),
        (2, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT", "Stream wait sync"),
        (3, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE", "Stream sync"),
        (4, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE", "Context sync"),
    ],
}

# event tables in the order they are written; only those with rows are created
EVENT_TABLES = ["ThreadNames", "PROCESSES", "TARGET_INFO_GPU", "CUPTI_ACTIVITY_KIND_RUNTIME",
                "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
                "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "CUPTI_ACTIVITY_KIND_CUDA_EVENT", "NVTX_EVENTS", "OSRT_API"]


def _columns(table: str) -> list[str]:
    return [line.split()[0] for line in DDL[table].strip().splitlines()]


class SyntheticExport:
    """Collects rows of an nsys-like export; `write(path)` makes the SQLite file.

    Every timestamp is an integer nanosecond. Rows are written in the order the methods
    were called, so NVTX rowids (nsysql's range_id) are 1, 2, ... in call order, the
    domain-create rows included.
    """

    def __init__(self) -> None:
        self._strings: dict[str, int] = {}
        self.rows: dict[str, list[dict]] = {t: [] for t in EVENT_TABLES}
        self._domains: dict[tuple[int, str], int] = {}   # (pid, name) -> domainId
        self._processes: dict[int, str] = {}
        self._gpus: set[int] = set()
        self._next_range_id = 1

    # -- helpers -------------------------------------------------------------------------
    def string(self, value: str) -> int:
        """The StringIds id of `value` (added when new)."""
        if value not in self._strings:
            self._strings[value] = len(self._strings) + 1
        return self._strings[value]

    def _add(self, table: str, **values) -> int:
        cols = _columns(table)
        unknown = set(values) - set(cols)
        if unknown:
            raise ValueError(f"{table} has no column(s) {sorted(unknown)}")
        self.rows[table].append({c: values.get(c) for c in cols})
        return len(self.rows[table])  # the rowid SQLite will give it

    # -- processes and threads -----------------------------------------------------------
    def process(self, pid: int, name: str) -> "SyntheticExport":
        if pid not in self._processes:
            self._processes[pid] = name
            self._add("PROCESSES", globalPid=global_pid(pid), pid=pid, name=name)
        return self

    def thread(self, pid: int, tid: int, name: str, process_name: str | None = None) -> "SyntheticExport":
        self.process(pid, process_name or name)
        self._add("ThreadNames", nameId=self.string(name), priority=20, globalTid=global_tid(pid, tid))
        return self

    def gpu(self, device: int = 0, name: str = "Synthetic GPU") -> "SyntheticExport":
        if device not in self._gpus:
            self._gpus.add(device)
            self._add("TARGET_INFO_GPU", vmId=VM_ID, id=device, name=name, busLocation=f"0000:00:{6 + device:02x}.0",
                      isDiscrete=1, l2CacheSize=52428800, totalMemory=85017493504, memoryBandwidth=3352320000000,
                      clockRate=1980000000, smCount=132, pwGpuId=device, uuid=f"00000000-0000-0000-0000-{device:012d}",
                      luid=0, chipName="GSYN", cuDevice=device, revision=161, nodeMask=0, constantMemory=65536,
                      maxIPC=0, maxRegistersPerBlock=65536, maxShmemPerBlock=49152, maxShmemPerBlockOptin=232448,
                      maxShmemPerSm=233472, maxRegistersPerSm=65536, threadsPerWarp=32, asyncEngines=3,
                      maxWarpsPerSm=64, maxBlocksPerSm=32, maxThreadsPerBlock=1024, maxBlockDimX=1024,
                      maxBlockDimY=1024, maxBlockDimZ=64, maxGridDimX=2147483647, maxGridDimY=65535,
                      maxGridDimZ=65535, computeMajor=9, computeMinor=0, smMajor=9, smMinor=0)
        return self

    # -- NVTX ----------------------------------------------------------------------------
    def domain(self, name: str, ts: int, *, pid: int, tid: int | None = None, domain_id: int | None = None) -> int:
        """nvtxDomainCreate on (pid, tid) at `ts` (an eventType 75 row); returns its domainId."""
        if domain_id is None:
            domain_id = 1 + sum(1 for (p, _) in self._domains if p == pid)
        self._domains[(pid, name)] = domain_id
        self._add("NVTX_EVENTS", start=ts, eventType=NVTX_DOMAIN_CREATE, text=name,
                  globalTid=global_tid(pid, pid if tid is None else tid), domainId=domain_id)
        return domain_id

    def range(self, name: str, start: int, end: int | None, *, tid: int, pid: int, domain: str | None = None,
              style: str = "PushPop", end_tid: int | None = None, registered: bool = False) -> int:
        """An NVTX range; `end=None` leaves it unterminated; `end_tid` sets endGlobalTid (ended on
        another thread, StartEnd only); `registered` stores the text through textId -> StringIds.
        Returns the row's rowid (nsysql's range_id)."""
        if style not in ("PushPop", "StartEnd"):
            raise ValueError(f"style must be PushPop or StartEnd, not {style!r}")
        if end_tid is not None and style != "StartEnd":
            raise ValueError("only a StartEnd range can end on another thread")
        domain_id = 0
        if domain is not None:
            if (pid, domain) not in self._domains:
                raise ValueError(f"create domain {domain!r} in pid {pid} first (SyntheticExport.domain)")
            domain_id = self._domains[(pid, domain)]
        range_id = None
        if style == "StartEnd":
            range_id = self._next_range_id
            self._next_range_id += 1
        return self._add("NVTX_EVENTS", start=start, end=end,
                         eventType=NVTX_PUSHPOP if style == "PushPop" else NVTX_STARTEND, rangeId=range_id,
                         text=None if registered else name, textId=self.string(name) if registered else None,
                         globalTid=global_tid(pid, tid),
                         endGlobalTid=None if end_tid is None else global_tid(pid, end_tid), domainId=domain_id)

    def mark(self, name: str, ts: int, *, tid: int, pid: int) -> int:
        """An NVTX mark (instant event, eventType 34)."""
        return self._add("NVTX_EVENTS", start=ts, end=None, eventType=NVTX_MARK, text=name,
                         globalTid=global_tid(pid, tid), domainId=0)

    # -- CUDA ----------------------------------------------------------------------------
    def runtime(self, api: str, start: int, end: int, *, tid: int, pid: int, correlation_id: int | None,
                event_class: int | None = None) -> int:
        """A CUDA runtime/driver API call (CUPTI_ACTIVITY_KIND_RUNTIME row)."""
        if event_class is None:
            event_class = CLASS_CUDA_DRIVER if api.startswith("cu") and not api.startswith("cuda") else CLASS_CUDA_RUNTIME
        return self._add("CUPTI_ACTIVITY_KIND_RUNTIME", start=start, end=end, eventClass=event_class,
                         globalTid=global_tid(pid, tid), correlationId=correlation_id, nameId=self.string(api),
                         returnValue=0, callchainId=None)

    def kernel(self, name: str, start: int, end: int, *, pid: int, correlation_id: int | None, stream: int = 7,
               device: int = 0, grid=(1, 1, 1), block=(128, 1, 1), registers: int = 32) -> int:
        """A kernel execution (CUPTI_ACTIVITY_KIND_KERNEL row) only; see `launch`."""
        self.gpu(device)
        short = name.split("(")[0].split("<")[0].split()[-1]
        return self._add("CUPTI_ACTIVITY_KIND_KERNEL", start=start, end=end, deviceId=device, contextId=1,
                         greenContextId=0, streamId=stream, correlationId=correlation_id, globalPid=global_pid(pid),
                         demangledName=self.string(name), shortName=self.string(short), mangledName=self.string(name),
                         launchType=1, cacheConfig=1, registersPerThread=registers,
                         gridX=grid[0], gridY=grid[1], gridZ=grid[2], blockX=block[0], blockY=block[1],
                         blockZ=block[2], staticSharedMemory=0, dynamicSharedMemory=0, localMemoryPerThread=0,
                         localMemoryTotal=0, gridId=len(self.rows["CUPTI_ACTIVITY_KIND_KERNEL"]) + 1,
                         sharedMemoryExecuted=0, graphNodeId=None, sharedMemoryLimitConfig=0)

    def launch(self, api: str = "cudaLaunchKernel_v7000", start: int = 0, end: int = 0, *, tid: int, pid: int,
               correlation_id: int, kernel: tuple | None = None) -> int:
        """A launching API call on (pid, tid) and, with kernel=(name, kstart, kend, stream, device),
        the kernel it launched (same correlationId and process). Returns the runtime rowid."""
        rowid = self.runtime(api, start, end, tid=tid, pid=pid, correlation_id=correlation_id)
        if kernel is not None:
            name, kstart, kend, stream, device = kernel
            self.kernel(name, kstart, kend, pid=pid, correlation_id=correlation_id, stream=stream, device=device)
        return rowid

    def kernel_without_runtime(self, name: str, start: int, end: int, *, pid: int, correlation_id: int | None,
                               stream: int = 7, device: int = 0) -> int:
        """A kernel whose correlationId matches no API call of its process."""
        return self.kernel(name, start, end, pid=pid, correlation_id=correlation_id, stream=stream, device=device)

    def memcpy(self, start: int, end: int, nbytes: int, *, pid: int, correlation_id: int, copy_kind: int = HTOD,
               src_kind: int = PAGEABLE, dst_kind: int = DEVICE, stream: int = 7, device: int = 0,
               api: str = "cudaMemcpyAsync_v3020", api_start: int | None = None, api_end: int | None = None,
               tid: int | None = None) -> int:
        """A memory copy; with api_start/api_end/tid also the API call that issued it."""
        if api_start is not None:
            self.runtime(api, api_start, api_end, tid=tid, pid=pid, correlation_id=correlation_id)
        self.gpu(device)
        return self._add("CUPTI_ACTIVITY_KIND_MEMCPY", start=start, end=end, deviceId=device, contextId=1,
                         greenContextId=0, streamId=stream, correlationId=correlation_id, globalPid=global_pid(pid),
                         bytes=nbytes, copyKind=copy_kind, srcKind=src_kind, dstKind=dst_kind, copyCount=1)

    def memset(self, start: int, end: int, nbytes: int, *, pid: int, correlation_id: int, value: int = 0,
               mem_kind: int = DEVICE, stream: int = 7, device: int = 0, api: str = "cudaMemsetAsync_v3020",
               api_start: int | None = None, api_end: int | None = None, tid: int | None = None) -> int:
        """A memset; with api_start/api_end/tid also the API call that issued it."""
        if api_start is not None:
            self.runtime(api, api_start, api_end, tid=tid, pid=pid, correlation_id=correlation_id)
        self.gpu(device)
        return self._add("CUPTI_ACTIVITY_KIND_MEMSET", start=start, end=end, deviceId=device, contextId=1,
                         greenContextId=0, streamId=stream, correlationId=correlation_id, globalPid=global_pid(pid),
                         value=value, bytes=nbytes, graphNodeId=None, memKind=mem_kind)

    def synchronization(self, start: int, end: int, *, pid: int, correlation_id: int, stream: int,
                        sync_type: int = SYNC_STREAM_WAIT_EVENT, event_id: int = NO_EVENT,
                        event_sync_id: int = NO_EVENT, device: int = 0) -> int:
        """A CUPTI_ACTIVITY_KIND_SYNCHRONIZATION row of the synchronizing call `correlation_id` (its API call is
        added with `runtime`): a stream wait (cudaStreamWaitEvent: the waiting stream, the event's ids) or,
        as a real export stores it, a cudaStreamSynchronize (sync type 2 too, without an event)."""
        return self._add("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", start=start, end=end, deviceId=device, contextId=1,
                         greenContextId=None, streamId=stream, correlationId=correlation_id,
                         globalPid=global_pid(pid), deprecatedSyncType=None, syncType=sync_type, eventId=event_id,
                         eventSyncId=event_sync_id)

    def cuda_event(self, *, pid: int, correlation_id: int, stream: int, event_id: int, event_sync_id: int,
                   device: int = 0) -> int:
        """A CUPTI_ACTIVITY_KIND_CUDA_EVENT row: the event recorded on `stream` by the cudaEventRecord call
        `correlation_id` (its API call is added with `runtime`); stream waits name it by `event_sync_id`."""
        return self._add("CUPTI_ACTIVITY_KIND_CUDA_EVENT", deviceId=device, contextId=1, greenContextId=0,
                         streamId=stream, correlationId=correlation_id, globalPid=global_pid(pid), eventId=event_id,
                         eventSyncId=event_sync_id)

    # -- OS runtime ----------------------------------------------------------------------
    def osrt(self, name: str, start: int, end: int, *, tid: int, pid: int, event_class: int = CLASS_OSRT,
             nesting_level: int | None = 0) -> int:
        """An OS runtime call (OSRT_API row); event_class 31/32 makes nsys's start/finish markers."""
        return self._add("OSRT_API", start=start, end=end, eventClass=event_class, globalTid=global_tid(pid, tid),
                         nameId=self.string(name), returnValue=0, nestingLevel=nesting_level, callchainId=0)

    def on(self, pid: int, tid: int) -> "OnThread":
        """This export's NVTX ranges, launches and OS runtime calls on one thread: `main = b.on(P, 100)`."""
        return OnThread(self, pid, tid)

    # -- output --------------------------------------------------------------------------
    def _time_span(self) -> tuple[int, int]:
        ts = []
        for table in ("CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
                      "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "NVTX_EVENTS", "OSRT_API"):
            for row in self.rows[table]:
                ts.extend(v for v in (row["start"], row["end"]) if v is not None)
        return (0, max(ts) + 1000) if ts else (0, 1000)

    def write(self, path: str | os.PathLike) -> Path:
        """Write the export (replacing `path`); returns the path."""
        path = Path(path)
        if path.exists():
            path.unlink()
        start, stop = self._time_span()
        con = sqlite3.connect(path)
        try:
            tables = ["StringIds", "META_DATA_EXPORT", "ANALYSIS_DETAILS"]
            tables += [t for t in EVENT_TABLES if self.rows[t]]
            # the sync-type labels only with synchronization rows, so that the exports made before them (and the
            # one NVIDIA's scripts read, fixtures/synthetic-openmp-openacc) keep their rows and digest
            enums = [t for t in ENUM_ROWS if t != "ENUM_CUPTI_SYNC_TYPE" or self.rows["CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"]]
            tables += enums
            for table in tables:
                con.execute(f"CREATE TABLE {table} ({DDL[table]}\n)")
            con.executemany("INSERT INTO StringIds VALUES (?, ?)", [(i, s) for s, i in self._strings.items()])
            major, minor, micro = SCHEMA_VERSION.split(".")
            con.executemany("INSERT INTO META_DATA_EXPORT VALUES (?, ?)", [
                ("EXPORT_PRODUCT_NAME", "NVIDIA Nsight Systems"), ("EXPORT_PRODUCT_VERSION", PRODUCT_VERSION),
                ("EXPORT_SCHEMA_VERSION", SCHEMA_VERSION), ("EXPORT_SCHEMA_VERSION_MAJOR", major),
                ("EXPORT_SCHEMA_VERSION_MINOR", minor), ("EXPORT_SCHEMA_VERSION_MICRO", micro),
                ("EXPORT_PARAM_LAZY", "true"), ("EXPORT_SYNTHETIC", "scripts/make_synthetic.py"),
            ])
            con.execute("INSERT INTO ANALYSIS_DETAILS VALUES (?, ?, ?, ?)", (VM_ID, stop - start, start, stop))
            for table in EVENT_TABLES:
                if self.rows[table]:
                    cols = _columns(table)
                    con.executemany(f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                                    [tuple(r[c] for c in cols) for r in self.rows[table]])
            for table in enums:
                con.executemany(f"INSERT INTO {table} VALUES (?, ?, ?)", ENUM_ROWS[table])
            con.commit()
        finally:
            con.close()
        return path


class OnThread:
    """SyntheticExport's calls on one thread (pid, tid), so that a scenario names the thread once."""

    def __init__(self, export: SyntheticExport, pid: int, tid: int) -> None:
        self.export, self.pid, self.tid = export, pid, tid

    def range(self, name: str, start: int, end: int | None, **how) -> int:
        return self.export.range(name, start, end, tid=self.tid, pid=self.pid, **how)

    def launch(self, start: int, end: int, correlation_id: int, kernel: str, kernel_start: int, kernel_end: int,
               *, stream: int = 7, device: int = 0) -> int:
        """A cudaLaunchKernel call [start, end] and the kernel it launched [kernel_start, kernel_end]."""
        return self.export.launch(start=start, end=end, tid=self.tid, pid=self.pid, correlation_id=correlation_id,
                                  kernel=(kernel, kernel_start, kernel_end, stream, device))

    def osrt(self, name: str, start: int, end: int, **how) -> int:
        return self.export.osrt(name, start, end, tid=self.tid, pid=self.pid, **how)


class ForeignSQLite:
    """A valid SQLite file that is not an nsys export."""

    def write(self, path: str | os.PathLike) -> Path:
        path = Path(path)
        if path.exists():
            path.unlink()
        con = sqlite3.connect(path)
        try:
            con.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL)")
            con.executemany("INSERT INTO customers (name) VALUES (?)", [("ada",), ("grace",)])
            con.commit()
        finally:
            con.close()
        return path


class TextFile:
    """Not SQLite at all (e.g. a CSV renamed .sqlite)."""

    def __init__(self, text: str = "Range,Style,Total Time (ns)\n:step,PushPop,9000\n") -> None:
        self.text = text

    def write(self, path: str | os.PathLike) -> Path:
        path = Path(path)
        path.write_text(self.text)
        return path


# ---------------------------------------------------------------------------------------------
# Edge cases. PID/TID 100 is the main thread unless a case says otherwise.
# ---------------------------------------------------------------------------------------------
P, T = 100, 100


def nested_ranges() -> SyntheticExport:
    """PushPop ranges three deep on one thread, kernels/memcpy/memset launched at several depths.

        step  [1000, 10000]                                   rowid 1, depth 0
          fwd   [1100, 5000]                                  rowid 2, depth 1
            layer [1200, 3000]                                rowid 3, depth 2
              corr 1 cudaLaunchKernel [1300,1350] -> gemm  [2000,2400]
              corr 2 cudaLaunchKernel [1400,1450] -> relu  [2500,2600]
            layer [3100, 4800]                                rowid 4, depth 2
              corr 3 cudaMemcpyAsync  [3200,3300] -> HtoD 4096 B [3400,3900]
              corr 4 cudaLaunchKernel [3500,3550] -> gemm  [4000,4500]
          bwd   [5100, 9000]                                  rowid 5, depth 1
              corr 5 cudaLaunchKernel [5200,5250] -> gemm_bwd [5300,6300]
              corr 6 cudaMemsetAsync  [5400,5450] -> memset 512 B [6400,6500]
            idle  [6000, 7000]  (no GPU work)                 rowid 6, depth 2
        corr 7 cudaLaunchKernel [10500,10550] -> tail [10600,10700]  (outside every range)
    """
    b = SyntheticExport().thread(P, T, "python3")
    b.range("step", 1000, 10000, tid=T, pid=P)
    b.range("fwd", 1100, 5000, tid=T, pid=P)
    b.range("layer", 1200, 3000, tid=T, pid=P)
    b.range("layer", 3100, 4800, tid=T, pid=P, registered=True)
    b.range("bwd", 5100, 9000, tid=T, pid=P)
    b.range("idle", 6000, 7000, tid=T, pid=P)
    b.launch(start=1300, end=1350, tid=T, pid=P, correlation_id=1, kernel=("gemm", 2000, 2400, 7, 0))
    b.launch(start=1400, end=1450, tid=T, pid=P, correlation_id=2, kernel=("relu", 2500, 2600, 7, 0))
    b.memcpy(3400, 3900, 4096, pid=P, correlation_id=3, api_start=3200, api_end=3300, tid=T)
    b.launch(start=3500, end=3550, tid=T, pid=P, correlation_id=4, kernel=("gemm", 4000, 4500, 7, 0))
    b.launch(start=5200, end=5250, tid=T, pid=P, correlation_id=5, kernel=("gemm_bwd", 5300, 6300, 7, 0))
    b.memset(6400, 6500, 512, pid=P, correlation_id=6, api_start=5400, api_end=5450, tid=T)
    b.launch(start=10500, end=10550, tid=T, pid=P, correlation_id=7, kernel=("tail", 10600, 10700, 7, 0))
    return b


def unterminated_range() -> SyntheticExport:
    """Ranges never closed; the last NVTX timestamp is 900 (the end of `later`).

        outer_open PushPop  [50, None]     rowid 1 -> ends at 900
          inner    PushPop  [100, 400]     rowid 2
          later    PushPop  [600, 900]     rowid 3
            async_open StartEnd [700, None] rowid 4 -> ends at 900
              corr 1 cudaLaunchKernel [750,760] -> k_in   [800,1000]
        corr 2 cudaLaunchKernel [950,960] -> k_after [1000,1100]  (after the last NVTX timestamp)
    """
    b = SyntheticExport().thread(P, T, "python3")
    b.range("outer_open", 50, None, tid=T, pid=P)
    b.range("inner", 100, 400, tid=T, pid=P)
    b.range("later", 600, 900, tid=T, pid=P)
    b.range("async_open", 700, None, tid=T, pid=P, style="StartEnd")
    b.launch(start=750, end=760, tid=T, pid=P, correlation_id=1, kernel=("k_in", 800, 1000, 7, 0))
    b.launch(start=950, end=960, tid=T, pid=P, correlation_id=2, kernel=("k_after", 1000, 1100, 7, 0))
    return b


def unterminated_range_late_mark() -> SyntheticExport:
    """`unterminated_range` plus an NVTX mark at 2000 (rowid 5): the last NVTX timestamp of the
    whole NVTX_EVENTS table is now 2000, which nsys stats's nvtx_sum uses for open ranges."""
    b = unterminated_range()
    b.mark("checkpoint_saved", 2000, tid=T, pid=P)
    return b


def range_crossing_threads() -> SyntheticExport:
    """A StartEnd range started on tid 100 and ended on tid 101 (endGlobalTid set).

        handoff StartEnd [1000, 5000] start tid 100, end tid 101   rowid 1
        local   PushPop  [2000, 3000] tid 100                       rowid 2
          corr 1 cudaLaunchKernel [2100,2150] tid 100 -> k_local   [2200,2700]
        corr 2 cudaLaunchKernel [3500,3550] tid 100 -> k_between [3600,3900]  (inside handoff's span only)
        corr 3 cudaLaunchKernel [4000,4050] tid 101 -> k_worker  [4100,4300]  (inside handoff's span only)
    """
    b = SyntheticExport().thread(P, T, "python3").thread(P, 101, "worker", process_name="python3")
    b.range("handoff", 1000, 5000, tid=T, pid=P, style="StartEnd", end_tid=101)
    b.range("local", 2000, 3000, tid=T, pid=P)
    b.launch(start=2100, end=2150, tid=T, pid=P, correlation_id=1, kernel=("k_local", 2200, 2700, 7, 0))
    b.launch(start=3500, end=3550, tid=T, pid=P, correlation_id=2, kernel=("k_between", 3600, 3900, 7, 0))
    b.launch(start=4000, end=4050, tid=101, pid=P, correlation_id=3, kernel=("k_worker", 4100, 4300, 7, 0))
    return b


def kernel_without_runtime() -> SyntheticExport:
    """Kernels whose correlationId has no API call in the export.

        region PushPop [100, 1000]                                   rowid 1
          corr 1 cudaLaunchKernel [200,250] -> k_launched [300,500]
        k_orphan [600,900]   correlationId 99 (no API call 99), running while `region` is open
        k_orphan [1100,1200] correlationId NULL
    """
    b = SyntheticExport().thread(P, T, "python3")
    b.range("region", 100, 1000, tid=T, pid=P)
    b.launch(start=200, end=250, tid=T, pid=P, correlation_id=1, kernel=("k_launched", 300, 500, 7, 0))
    b.kernel_without_runtime("k_orphan", 600, 900, pid=P, correlation_id=99)
    b.kernel_without_runtime("k_orphan", 1100, 1200, pid=P, correlation_id=None)
    return b


def two_processes_same_correlation() -> SyntheticExport:
    """Two processes, each with correlationId 1 and its own domain id 1 (named differently).

        pid 100 tid 100: domain 1 "alpha" (rowid 1); alpha:a_range PushPop [100, 1000] (rowid 3)
            corr 1 cudaLaunchKernel [200,260] -> kA [300,700]  device 0 stream 7
        pid 200 tid 201: domain 1 "beta"  (rowid 2); beta:b_range  PushPop [150, 2000] (rowid 4)
            corr 1 cudaLaunchKernel [400,420] -> kB [800,1800] device 0 stream 13
    """
    b = SyntheticExport().thread(100, 100, "procA").thread(200, 201, "procB")
    b.domain("alpha", 10, pid=100, tid=100, domain_id=1)
    b.domain("beta", 20, pid=200, tid=201, domain_id=1)
    b.range("a_range", 100, 1000, tid=100, pid=100, domain="alpha")
    b.range("b_range", 150, 2000, tid=201, pid=200, domain="beta")
    b.launch(start=200, end=260, tid=100, pid=100, correlation_id=1, kernel=("kA", 300, 700, 7, 0))
    b.launch(start=400, end=420, tid=201, pid=200, correlation_id=1, kernel=("kB", 800, 1800, 13, 0))
    return b


def one_launch() -> SyntheticExport:
    """One kernel launch and nothing else: no NVTX, no copies (pid/tid 1: launch [10, 20] -> k [30, 40])."""
    b = SyntheticExport().thread(1, 1, "python3")
    b.on(1, 1).launch(10, 20, 1, "k", 30, 40)
    return b


def no_cuda() -> SyntheticExport:
    """NVTX and OS runtime only (captured with --trace=nvtx,osrt): no CUPTI tables, no GPU.

        pid/tid 300: phase PushPop [100, 600], phase PushPop [700, 900]
        OSRT: read [150,250], read [300,330], poll [400,900], and a zero-length OSRT-start
        marker (eventClass 31) at 50 that is not a call.
    """
    b = SyntheticExport().thread(300, 300, "python3")
    b.range("phase", 100, 600, tid=300, pid=300)
    b.range("phase", 700, 900, tid=300, pid=300)
    b.osrt("pthread_create", 50, 50, tid=300, pid=300, event_class=CLASS_OSRT_START, nesting_level=None)
    b.osrt("read", 150, 250, tid=300, pid=300)
    b.osrt("read", 300, 330, tid=300, pid=300)
    b.osrt("poll", 400, 900, tid=300, pid=300)
    return b


def overlapping_startend() -> SyntheticExport:
    """Two StartEnd ranges on one thread that overlap without nesting (legal for start/end ranges).

        A StartEnd [1000, 5000]   rowid 1
        B StartEnd [3000, 8000]   rowid 2   (not inside A: it ends after A)
        corr 3 cudaLaunchKernel [2000,2050] -> k_a_only [2100,2150]   (inside A only)
        corr 1 cudaLaunchKernel [4000,4050] -> k_both   [4100,4200]   (inside A and B)
        corr 2 cudaLaunchKernel [6000,6050] -> k_b_only [6100,6300]   (inside B only)
    """
    b = SyntheticExport().thread(P, T, "python3")
    b.range("A", 1000, 5000, tid=T, pid=P, style="StartEnd")
    b.range("B", 3000, 8000, tid=T, pid=P, style="StartEnd")
    b.launch(start=2000, end=2050, tid=T, pid=P, correlation_id=3, kernel=("k_a_only", 2100, 2150, 7, 0))
    b.launch(start=4000, end=4050, tid=T, pid=P, correlation_id=1, kernel=("k_both", 4100, 4200, 7, 0))
    b.launch(start=6000, end=6050, tid=T, pid=P, correlation_id=2, kernel=("k_b_only", 6100, 6300, 7, 0))
    return b


def graph_launch() -> SyntheticExport:
    """A CUDA graph launch: one API call, three kernels sharing its correlationId.

        graph_step PushPop [100, 2000]                                  rowid 1
          corr 5 cudaGraphLaunch_v10000 [200,260] -> g1 [300,400], g2 [400,550], g3 [600,650]
          corr 6 cudaLaunchKernel       [300,320] -> k_single [700,800]
    """
    b = SyntheticExport().thread(P, T, "python3")
    b.range("graph_step", 100, 2000, tid=T, pid=P)
    b.runtime("cudaGraphLaunch_v10000", 200, 260, tid=T, pid=P, correlation_id=5)
    for name, start, end in (("g1", 300, 400), ("g2", 400, 550), ("g3", 600, 650)):
        b.kernel(name, start, end, pid=P, correlation_id=5)
    b.launch(start=300, end=320, tid=T, pid=P, correlation_id=6, kernel=("k_single", 700, 800, 7, 0))
    return b


def not_nsys() -> ForeignSQLite:
    """A SQLite file with an unrelated table."""
    return ForeignSQLite()


def not_sqlite() -> TextFile:
    """A text (CSV) file named .sqlite."""
    return TextFile()


CASES = {f.__name__: f for f in (
    nested_ranges, unterminated_range, unterminated_range_late_mark, range_crossing_threads,
    kernel_without_runtime, two_processes_same_correlation, no_cuda, overlapping_startend,
    graph_launch, not_nsys, not_sqlite,
)}


def write_cases(cases: dict, description: str, argv: list[str] | None = None) -> int:
    """The command line of a case script: write each case (`cases`: name -> a function giving its
    SyntheticExport), or those named with --case, into OUTDIR as <case>.sqlite."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("outdir", type=Path, help="directory to write <case>.sqlite files into (created)")
    parser.add_argument("--case", action="append", choices=sorted(cases), help="only this case (repeatable)")
    args = parser.parse_args(argv)
    args.outdir.mkdir(parents=True, exist_ok=True)
    for name in args.case or cases:
        print(cases[name]().write(args.outdir / f"{name}.sqlite"))
    return 0


def main(argv: list[str] | None = None) -> int:
    return write_cases(CASES, "Write synthetic nsys-like SQLite exports for edge cases.", argv)


if __name__ == "__main__":
    sys.exit(main())


# ---------------------------------------------------------------------------------------------
# Steps (nsysql steps): not in CASES, since the CLI above is done by the time these are defined;
# tests/test_steps.py builds them directly.
# ---------------------------------------------------------------------------------------------
AUTOGRAD_TID = 101


def training_process() -> tuple[SyntheticExport, OnThread, OnThread]:
    """An export with a python3 process (pid 100): its main thread (tid 100) and PyTorch's autograd thread (101)."""
    b = SyntheticExport().thread(P, T, "python3").thread(P, AUTOGRAD_TID, "pt_autograd_0", process_name="python3")
    return b, b.on(P, T), b.on(P, AUTOGRAD_TID)


def steps_pattern() -> SyntheticExport:
    """No step-named range: top-level forward_pass, backward_pass, optimizer_step repeat on the main
    thread (tid 100); PyTorch's autograd thread (tid 101, pt_autograd_0) launches the backward kernels
    and has its own repeating top-level user range `grad_hook`, which must not make steps.

        tid 100 top level: warmup [100,900], forward_pass [1000,1900], backward_pass [2000,2900],
          optimizer_step [3000,3500], forward_pass [4000,4900], backward_pass [5000,5900],
          optimizer_step [6000,6500], checkpoint [7000,7200]
        => anchor forward_pass: step 1 = [1000,3500] (wall 2500), step 2 = [4000,7200] (wall 3200,
           checkpoint joins the last step)
        tid 101 top level: grad_hook [2050,2060], [2070,2080], [5050,5060], [5070,5080];
          op marker `autograd::engine::evaluate_function: MmBackward0` [2100,2800] and [5100,5800]
        corr 1  tid 100 [200,250]   -> k_warm   [300,800]     (warm-up: no step)
        corr 2  tid 100 [1100,1150] -> k_fwd    [1200,1500]   step 1
        corr 3  tid 101 [2200,2250] -> k_bwd_a  [2300,2700]   step 1, off thread
        corr 4  tid 101 [2300,2350] -> k_bwd_b  [2600,2900]   step 1, off thread, overlaps k_bwd_a (stream 8)
        corr 5  tid 100 [3100,3150] -> k_opt    [3200,3400]   step 1
        corr 6  tid 100 [3700,3750] -> k_gap    [3800,3850]   between steps: no step
        corr 7  tid 100 [4100,4150] -> HtoD 1024 B [4200,4300]  step 2 (memcpy)
        corr 8  tid 100 [4400,4450] -> k_fwd    [4500,4800]   step 2
        corr 9  tid 101 [5200,5250] -> k_bwd_a  [5300,5700]   step 2, off thread
        corr 10 tid 100 [6100,6150] -> k_opt    [6200,6400]   step 2
        step 1: 4 ops (4 kernels, 2 off thread), busy 300 + 600 + 200 = 1100
        step 2: 4 ops (3 kernels, 1 off thread), busy 100 + 300 + 400 + 200 = 1000
    """
    b, main, autograd = training_process()
    main.range("warmup", 100, 900)
    for base in (0, 3000):
        main.range("forward_pass", 1000 + base, 1900 + base)
        main.range("backward_pass", 2000 + base, 2900 + base)
        main.range("optimizer_step", 3000 + base, 3500 + base)
        autograd.range("grad_hook", 2050 + base, 2060 + base)
        autograd.range("grad_hook", 2070 + base, 2080 + base)
        autograd.range("autograd::engine::evaluate_function: MmBackward0", 2100 + base, 2800 + base)
    main.range("checkpoint", 7000, 7200)
    main.launch(200, 250, 1, "k_warm", 300, 800)
    main.launch(1100, 1150, 2, "k_fwd", 1200, 1500)
    autograd.launch(2200, 2250, 3, "k_bwd_a", 2300, 2700)
    autograd.launch(2300, 2350, 4, "k_bwd_b", 2600, 2900, stream=8)
    main.launch(3100, 3150, 5, "k_opt", 3200, 3400)
    main.launch(3700, 3750, 6, "k_gap", 3800, 3850)
    b.memcpy(4200, 4300, 1024, pid=P, correlation_id=7, api_start=4100, api_end=4150, tid=T)
    main.launch(4400, 4450, 8, "k_fwd", 4500, 4800)
    autograd.launch(5200, 5250, 9, "k_bwd_a", 5300, 5700)
    main.launch(6100, 6150, 10, "k_opt", 6200, 6400)
    return b


def steps_named() -> SyntheticExport:
    """Step-named top-level ranges, a step-named range nested inside one, and a repeating pattern
    that is ignored because named steps exist.

        tid 100: warmup [100,900] with forward_pass [150,400], forward_pass [500,800] inside
                 ProfilerStep#1 [1000,3000]   (step 1)
                   step [1100,1300]           (nested step name: not a step of its own)
                 ProfilerStep#2 [3000,5000]   (step 2)
                 Iteration 7 [6000,7000]      (step 3; case-insensitive)
        corr 1 tid 100 [1150,1160] -> k1 [1200,1600]             step 1
        corr 2 tid 101 [2000,2010] -> k2 [2100,2400]             step 1 (autograd thread, off thread)
        corr 3 tid 100 [3000,3010] -> k3 [3050,3150]             step 2 (call starts exactly at the step's start)
        corr 4 tid 100 [4990,5010] -> k4 [5020,5100]             no step: the call ends after step 2 ends
        corr 5 tid 100 [6500,6510] -> k5 [6600,6700], corr 5 -> k5b [6650,6900]  step 3, a graph-like
               launch with two kernels on two streams: busy 300
        corr 6 tid 100 [200,210]   -> k0 [220,260]               warm-up: no step
    """
    b, main, autograd = training_process()
    main.range("warmup", 100, 900)
    main.range("forward_pass", 150, 400)
    main.range("forward_pass", 500, 800)
    main.range("ProfilerStep#1", 1000, 3000)
    main.range("step", 1100, 1300)
    main.range("ProfilerStep#2", 3000, 5000)
    main.range("Iteration 7", 6000, 7000)
    main.launch(1150, 1160, 1, "k1", 1200, 1600)
    autograd.launch(2000, 2010, 2, "k2", 2100, 2400)
    main.launch(3000, 3010, 3, "k3", 3050, 3150)
    main.launch(4990, 5010, 4, "k4", 5020, 5100)
    b.runtime("cudaGraphLaunch_v10000", 6500, 6510, tid=T, pid=P, correlation_id=5)
    b.kernel("k5", 6600, 6700, pid=P, correlation_id=5, stream=7)
    b.kernel("k5b", 6650, 6900, pid=P, correlation_id=5, stream=9)
    main.launch(200, 210, 6, "k0", 220, 260)
    return b


def no_steps() -> SyntheticExport:
    """Top-level ranges that never repeat (setup, train_once): no steps."""
    b = SyntheticExport().thread(P, T, "python3")
    main = b.on(P, T)
    main.range("setup", 100, 200)
    main.range("train_once", 300, 900)
    main.launch(400, 410, 1, "k", 500, 600)
    return b


def two_ranks() -> SyntheticExport:
    """Two processes, each with its own steps at the same time, as `torchrun --nproc-per-node 2` under one
    `nsys profile` gives (one rank per GPU, gradients all-reduced by NCCL). Synthetic because no real capture of
    that shape exists here: the 2-GPU machine was not lent when per-process step numbering was built, and the
    fixtures' other processes (DataLoader workers, torch.compile's compile workers) have no NVTX ranges. Each rank
    numbers its own steps 1-3 (`nsysql steps` has a pid column; (pid, step) names a step).

        rank 0: pid 100, tid 100, GPU 0: profiled_step [1000,2000], [2000,3000], [3000,4000]
        rank 1: pid 200, tid 200, GPU 1: profiled_step [1100,2100], [2100,3100], [3100,4200]
        in step k (b = 1000 * (k - 1)), corr 10k+1 and 10k+2 of each process:
          rank 0: call [b+1010,b+1020] -> k_compute [b+1050,b+1450] (stream 7);
                  call [b+1300,b+1310] -> ncclDevKernel_AllReduce_Sum_f32_RING_LL [b+1400,b+1800] (stream 20)
                  compute 400, comm 400, overlap 50, exposed 350, busy 750
          rank 1: call [b+1110,b+1120] -> k_compute [b+1150,b+1650];
                  call [b+1500,b+1510] -> ncclDevKernel_AllReduce_Sum_f32_RING_LL [b+1600,b+1900]
                  compute 500, comm 300, overlap 50, exposed 250, busy 750
        each step: rank 1 arrives 200 ns after rank 0 at the all-reduce (the straggler); rank 0 waits [b+1400,b+1600]
    """
    b = SyntheticExport()
    for pid, device, shift in ((100, 0, 0), (200, 1, 100)):
        b.thread(pid, pid, "python3")
        for k in (1, 2, 3):
            base = 1000 * (k - 1)
            end = base + 2000 + shift + (100 if (pid, k) == (200, 3) else 0)
            b.range("profiled_step", base + 1000 + shift, end, tid=pid, pid=pid)
            compute = 400 if pid == 100 else 500
            b.launch(start=base + 1010 + shift, end=base + 1020 + shift, tid=pid, pid=pid, correlation_id=10 * k + 1,
                     kernel=("k_compute", base + 1050 + shift, base + 1050 + shift + compute, 7, device))
            call, start, length = (1300, 1400, 400) if pid == 100 else (1500, 1600, 300)
            b.launch(start=base + call, end=base + call + 10, tid=pid, pid=pid, correlation_id=10 * k + 2,
                     kernel=("ncclDevKernel_AllReduce_Sum_f32_RING_LL", base + start, base + start + length, 20,
                             device))
    return b


def library_ranges() -> SyntheticExport:
    """Libraries' NVTX ranges on one thread (pid 100, tid 100), none of the user's: TensorRT inference as trtexec
    runs it, NCCL set-up calls and nvFuser's executor. Synthetic because no capture of TensorRT or nvFuser can be
    made here (the GPU machine has neither; NCCL's domain is in fixtures/cnn-nccl-1gpu). The ranges follow what
    these libraries document and their source shows: TensorRT marks one range per engine layer in its domain
    `TensorRT`, named by the layer (fused layers joined by ` + `, reformatting layers `Reformatting CopyNode for
    ...`, with ProfilingVerbosity kDETAILED a JSON object whose "Name" is the layer's name), inside its API call's
    range (`ExecutionContext::enqueueV3`); nvFuser pushes ranges in the default domain named by its C++ scopes
    (FUSER_PERF_SCOPE: `FusionExecutorCache::runFusionWithInputs` around `KernelExecutor::runFusion` around
    `prepareRuntimeOrder`); NCCL names its calls in domain `NCCL` (`ncclCommInitRank`, `ncclCommCount`).

        NCCL:ncclCommInitRank [100,900]
        three inferences, b = 1000 + 2000 * i (i = 0, 1, 2), each repeating the same ranges at top level:
          TensorRT:ExecutionContext::enqueueV3 [b,b+1000] (an API range: no layer)
            TensorRT:conv1 + relu1 [b+100,b+400]: call [b+110,b+120] -> conv_kernel [b+150,b+350]
            TensorRT:{"Name": "fc1", "LayerType": "CaskGemm", ...} [b+400,b+700]: call [b+410,b+420]
              -> gemm_kernel [b+450,b+650]
            TensorRT:Reformatting CopyNode for Output Tensor 0 to fc1 [b+700,b+800]: call [b+710,b+720]
              -> copy_kernel [b+750,b+780]
          :FusionExecutorCache::runFusionWithInputs [b+1200,b+1800]
            :KernelExecutor::runFusion [b+1300,b+1700]
              :prepareRuntimeOrder [b+1350,b+1400]: call [b+1360,b+1370] -> nvfuser_pointwise [b+1500,b+1560]
          NCCL:ncclCommCount [b+1900,b+1950]
        => no step (the repeating top-level names are all libraries'); user ranges: the 9 TensorRT layer ranges
           only, layers `conv1 + relu1`, `fc1`, `Reformatting CopyNode for Output Tensor 0 to fc1` (3 kernels each,
           fprop); nvFuser's kernels: direction other, layer '?'
    """
    b = SyntheticExport().thread(P, T, "trtexec")
    b.domain("NCCL", 10, pid=P)
    b.domain("TensorRT", 20, pid=P)
    b.range("ncclCommInitRank", 100, 900, tid=T, pid=P, domain="NCCL")
    detailed = '{"Name": "fc1", "LayerType": "CaskGemm", "Inputs": [{"Name": "x", "Dimensions": [8,64]}]}'
    corr = 0
    for i in range(3):
        base = 1000 + 2000 * i
        b.range("ExecutionContext::enqueueV3", base, base + 1000, tid=T, pid=P, domain="TensorRT")
        for layer, start, kernel, (ks, ke) in (("conv1 + relu1", 100, "conv_kernel", (150, 350)),
                                               (detailed, 400, "gemm_kernel", (450, 650)),
                                               ("Reformatting CopyNode for Output Tensor 0 to fc1", 700,
                                                "copy_kernel", (750, 780))):
            b.range(layer, base + start, base + start + (100 if start == 700 else 300), tid=T, pid=P,
                    domain="TensorRT")
            corr += 1
            b.launch(start=base + start + 10, end=base + start + 20, tid=T, pid=P, correlation_id=corr,
                     kernel=(kernel, base + ks, base + ke, 7, 0))
        b.range("FusionExecutorCache::runFusionWithInputs", base + 1200, base + 1800, tid=T, pid=P)
        b.range("KernelExecutor::runFusion", base + 1300, base + 1700, tid=T, pid=P)
        b.range("prepareRuntimeOrder", base + 1350, base + 1400, tid=T, pid=P)
        corr += 1
        b.launch(start=base + 1360, end=base + 1370, tid=T, pid=P, correlation_id=corr,
                 kernel=("nvfuser_pointwise", base + 1500, base + 1560, 7, 0))
        b.range("ncclCommCount", base + 1900, base + 1950, tid=T, pid=P, domain="NCCL")
    return b


# ---------------------------------------------------------------------------------------------
# Export schema versions (tests/test_schema_versions.py): not in CASES, since nsysql refuses some
# of them by design and CASES are all opened by tests/test_synthetic.py.
# ---------------------------------------------------------------------------------------------
class SchemaVersionExport(SyntheticExport):
    """A SyntheticExport whose metadata claims another export schema version.

    `metadata_table` is where the version is kept: "META_DATA_EXPORT" as nsys 2025.x writes it,
    "EXPORT_META_DATA" as nsys 2022.4 does, or None for no metadata table at all. Only the
    metadata differs from a 3.20.3 export; the other tables keep their 3.20.3 columns.
    """

    def __init__(self, schema_version: str, *, product_version: str = "0.0.0",
                 metadata_table: str | None = "META_DATA_EXPORT") -> None:
        super().__init__()
        self.schema_version = schema_version
        self.product_version = product_version
        self.metadata_table = metadata_table

    def write(self, path: str | os.PathLike) -> Path:
        path = super().write(path)
        parts = (self.schema_version.split(".") + ["", "", ""])[:3]
        con = sqlite3.connect(path)
        try:
            for name, value in (("EXPORT_SCHEMA_VERSION", self.schema_version), ("EXPORT_SCHEMA_VERSION_MAJOR", parts[0]),
                                ("EXPORT_SCHEMA_VERSION_MINOR", parts[1]), ("EXPORT_SCHEMA_VERSION_MICRO", parts[2]),
                                ("EXPORT_PRODUCT_VERSION", self.product_version)):
                con.execute("UPDATE META_DATA_EXPORT SET value = ? WHERE name = ?", (value, name))
            if self.metadata_table is None:
                con.execute("DROP TABLE META_DATA_EXPORT")
            elif self.metadata_table != "META_DATA_EXPORT":
                con.execute(f"ALTER TABLE META_DATA_EXPORT RENAME TO {self.metadata_table}")
            con.commit()
        finally:
            con.close()
        return path


def schema_version_case(schema_version: str, *, product_version: str = "0.0.0",
                        metadata_table: str | None = "META_DATA_EXPORT") -> SchemaVersionExport:
    """One NVTX range and one OS runtime call under the given export schema version.

        pid/tid 400: phase PushPop [100, 600]; OSRT read [150, 250]
    """
    b = SchemaVersionExport(schema_version, product_version=product_version, metadata_table=metadata_table)
    b.thread(400, 400, "python3")
    b.range("phase", 100, 600, tid=400, pid=400)
    b.osrt("read", 150, 250, tid=400, pid=400)
    return b


# ---------------------------------------------------------------------------------------------
# Kernel attribution (nsysql kernels / layers): built directly by tests/test_attribution.py.
# ---------------------------------------------------------------------------------------------
MAIN, AUTOGRAD = T, AUTOGRAD_TID  # the main thread and PyTorch's autograd thread, as above


def cross_thread_backward() -> SyntheticExport:
    """A training step whose backward runs on PyTorch's autograd thread (pid 100).

        tid 100 "python3":
          profiled_step [0, 10000]
            forward_pass [100, 3000]
              layer_0 [200, 2900]
                aten::linear, seq = 7, op_id = 1, sizes = [[8, 256], [256, 768], []]   [300, 1000]
                  aten::t, seq = 7, op_id = 2, sizes = [[256, 768]]                    [310, 400]
                  aten::addmm, seq = 8, op_id = 3, sizes = [[768], [8, 256], [256, 768]] [500, 900]
                    corr 1 launch [600, 650] -> gemm_fwd [700, 1200]
            backward_pass [3000, 8000]       (the main thread waits in backward())
            optimizer_step [8000, 9500]
              Optimizer.step#SGD.step [8100, 9400]
                corr 4 launch [8200, 8250] -> sgd_kernel [8300, 8600]
        tid 101 "pt_autograd_0":
          autograd::engine::evaluate_function: AddmmBackward0, op_id = 10   [3100, 4000]
            AddmmBackward0, seq = 8, op_id = 11, sizes = [[8, 768]]           [3110, 3990]
              aten::mm, op_id = 12, sizes = [[8, 768], [768, 256]]            [3200, 3900]
                corr 2 launch [3300, 3350] -> gemm_bwd [3400, 3800]
          CCCL:cub::DeviceRadixSort [4100, 4500]  (a library's range: transparent)
            autograd::engine::evaluate_function: TBackward0, op_id = 13      [4150, 4450]
              TBackward0, seq = 7, op_id = 14, sizes = [[256, 768]]           [4160, 4440]
                corr 3 launch [4200, 4250] -> t_bwd [4300, 4600]
          corr 5 launch [5000, 5050] -> lone_bwd [5100, 5200]   (no marker: borrows backward_pass)
          autograd::engine::evaluate_function: MulBackward0, op_id = 20      [6000, 6500]
            MulBackward0, seq = 99, op_id = 21, sizes = [[8]]                 [6010, 6490]
              corr 6 launch [6100, 6150] -> mul_bwd [6200, 6300]  (seq 99 has no forward op)
        kernel orphan [9600, 9700] with correlationId 77 (no API call)
    """
    b, main, autograd = training_process()
    main.range("profiled_step", 0, 10000)
    main.range("forward_pass", 100, 3000)
    main.range("layer_0", 200, 2900)
    main.range("aten::linear, seq = 7, op_id = 1, sizes = [[8, 256], [256, 768], []]", 300, 1000)
    main.range("aten::t, seq = 7, op_id = 2, sizes = [[256, 768]]", 310, 400)
    main.range("aten::addmm, seq = 8, op_id = 3, sizes = [[768], [8, 256], [256, 768]]", 500, 900)
    main.launch(600, 650, 1, "gemm_fwd", 700, 1200)
    main.range("backward_pass", 3000, 8000)
    main.range("optimizer_step", 8000, 9500)
    main.range("Optimizer.step#SGD.step", 8100, 9400)
    main.launch(8200, 8250, 4, "sgd_kernel", 8300, 8600)
    autograd.range("autograd::engine::evaluate_function: AddmmBackward0, op_id = 10", 3100, 4000)
    autograd.range("AddmmBackward0, seq = 8, op_id = 11, sizes = [[8, 768]]", 3110, 3990)
    autograd.range("aten::mm, op_id = 12, sizes = [[8, 768], [768, 256]]", 3200, 3900)
    autograd.launch(3300, 3350, 2, "gemm_bwd", 3400, 3800)
    b.domain("CCCL", 50, pid=P, tid=AUTOGRAD)
    autograd.range("cub::DeviceRadixSort", 4100, 4500, domain="CCCL")
    autograd.range("autograd::engine::evaluate_function: TBackward0, op_id = 13", 4150, 4450)
    autograd.range("TBackward0, seq = 7, op_id = 14, sizes = [[256, 768]]", 4160, 4440)
    autograd.launch(4200, 4250, 3, "t_bwd", 4300, 4600)
    autograd.launch(5000, 5050, 5, "lone_bwd", 5100, 5200)
    autograd.range("autograd::engine::evaluate_function: MulBackward0, op_id = 20", 6000, 6500)
    autograd.range("MulBackward0, seq = 99, op_id = 21, sizes = [[8]]", 6010, 6490)
    autograd.launch(6100, 6150, 6, "mul_bwd", 6200, 6300)
    b.kernel_without_runtime("orphan", 9600, 9700, pid=P, correlation_id=77)
    return b


def ambiguous_waiting_threads() -> SyntheticExport:
    """No op markers; a helper thread launches while TWO other threads of its process are in ranges.

        tid 100: work_a [0, 1000];  tid 102: work_b [0, 1000]
        tid 101 (no ranges): corr 1 launch [100, 150] -> k_amb [200, 300]   -> layer '?', never a guess
        tid 100: corr 2 launch [2000, 2050] -> k_out [2100, 2200]            -> outside every range: other
    """
    b = SyntheticExport().thread(P, MAIN, "python3").thread(P, AUTOGRAD, "worker").thread(P, 102, "loader")
    main, loader, autograd = b.on(P, MAIN), b.on(P, 102), b.on(P, AUTOGRAD)
    main.range("work_a", 0, 1000)
    loader.range("work_b", 0, 1000)
    autograd.launch(100, 150, 1, "k_amb", 200, 300)
    main.launch(2000, 2050, 2, "k_out", 2100, 2200)
    return b


def annotated_backward() -> SyntheticExport:
    """nsysql.annotate's ranges, no op markers but one node with a seq link (pid 100).

        tid 100 "python3":
          warmup [0, 900]
            model/layers.0/mlp [100, 800]                          (an older forward of the same module)
          profiled_step [1000, 10000]
            forward_pass [1100, 3000]
              layer_0 [1150, 2900]                                 (the model's own range)
                model/layers.0 [1200, 2800]
                  attention_sublayer [1250, 1500]
                    model/layers.0/attn [1300, 1450]
                      corr 1 launch [1350, 1360] -> attn_fwd [1400, 1500]
                  model/layers.0/mlp [1600, 2700]
                    aten::mm, seq = 9, op_id = 1, sizes = [[4, 8], [8, 8]] [1650, 1800]
                      corr 2 launch [1700, 1750] -> mlp_fwd [1800, 2200]
            backward_pass [3000, 8000]
            optimizer_step [8000, 9500]
              corr 9 launch [8100, 8150] -> adam [8200, 8300]
        tid 101 "pt_autograd_0":
          corr 3 launch [3100, 3150] -> loss_bwd [3200, 3300]       (outside annotated ranges: borrows)
          model/layers.0 [backward] [3400, 6000]
            model/layers.0/mlp [backward] [3500, 4000]
              corr 4 launch [3600, 3650] -> mlp_bwd [3700, 3900]
            model/layers.0/attn [backward] [4100, 5000]
              corr 5 launch [4200, 4250] -> attn_bwd [4300, 4700]
              autograd::engine::evaluate_function: MmBackward0 [4800, 4990]
                MmBackward0, seq = 9, op_id = 2 [4810, 4980]
                  corr 6 launch [4850, 4860] -> mm_bwd [4900, 4950]  (seq link to mlp's forward op wins)
            corr 7 launch [5100, 5150] -> block_bwd [5200, 5300]
          model/embed [backward] [6100, 6500]                       (no forward range of that name)
            corr 8 launch [6200, 6250] -> embed_bwd [6300, 6400]
    """
    b, main, autograd = training_process()
    main.range("warmup", 0, 900)
    main.range("model/layers.0/mlp", 100, 800)
    main.range("profiled_step", 1000, 10000)
    main.range("forward_pass", 1100, 3000)
    main.range("layer_0", 1150, 2900)
    main.range("model/layers.0", 1200, 2800)
    main.range("attention_sublayer", 1250, 1500)
    main.range("model/layers.0/attn", 1300, 1450)
    main.launch(1350, 1360, 1, "attn_fwd", 1400, 1500)
    main.range("model/layers.0/mlp", 1600, 2700)
    main.range("aten::mm, seq = 9, op_id = 1, sizes = [[4, 8], [8, 8]]", 1650, 1800)
    main.launch(1700, 1750, 2, "mlp_fwd", 1800, 2200)
    main.range("backward_pass", 3000, 8000)
    main.range("optimizer_step", 8000, 9500)
    main.launch(8100, 8150, 9, "adam", 8200, 8300)
    autograd.launch(3100, 3150, 3, "loss_bwd", 3200, 3300)
    autograd.range("model/layers.0 [backward]", 3400, 6000)
    autograd.range("model/layers.0/mlp [backward]", 3500, 4000)
    autograd.launch(3600, 3650, 4, "mlp_bwd", 3700, 3900)
    autograd.range("model/layers.0/attn [backward]", 4100, 5000)
    autograd.launch(4200, 4250, 5, "attn_bwd", 4300, 4700)
    autograd.range("autograd::engine::evaluate_function: MmBackward0", 4800, 4990)
    autograd.range("MmBackward0, seq = 9, op_id = 2", 4810, 4980)
    autograd.launch(4850, 4860, 6, "mm_bwd", 4900, 4950)
    autograd.launch(5100, 5150, 7, "block_bwd", 5200, 5300)
    autograd.range("model/embed [backward]", 6100, 6500)
    autograd.launch(6200, 6250, 8, "embed_bwd", 6300, 6400)
    return b


OPTIMIZER_NAMES = ("opt", "OPT_STEP", "optStep", "step_optimizer", "Optimizer", "optim_step", "AdamW.step", "sgd",
                   "opt.zero_grad")  # user ranges an optimizer step is known by (macros.is_optimizer_name)
NOT_OPTIMIZER_NAMES = ("option_parsing", "adopt_weights", "OPT-125m forward")  # `opt` inside another word or name


def direction_names() -> SyntheticExport:
    """Directions decided by names (pid 100): optimizer ranges by their usual names, and communication kernels.

        tid 100 "python3", one top-level range per name, i = 0, 1, ... over OPTIMIZER_NAMES then
        NOT_OPTIMIZER_NAMES, b = 1000 * (i + 1):
          <name> [b, b+900]: corr i+1 launch [b+100, b+150] -> k_<i> [b+200, b+300]
            => optim for OPTIMIZER_NAMES, fprop for NOT_OPTIMIZER_NAMES; layer <name>
          in `opt` (i = 0) also: corr 101 launch [1400, 1450]
            -> ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096UL>) [1500, 1600]
            => comm (named like NCCL's: communication, not the optimizer's work), layer opt
        forward_pass [20000, 25000]
          NCCL:ncclAllReduce [20100, 20900]
            corr 102 launch [20200, 20250] -> allreduce_custom [20300, 20800]   => comm (inside NCCL's range)
            corr 103 cudaMemcpyAsync [20400, 20450] -> DtoD 4096 B [20500, 20600] => fprop (a copy is never comm)
          corr 104 launch [21000, 21050] -> void <unnamed>::oneRankReduce<FuncPreMulSum<float>>(void *)
            [21100, 21400]                                                    => comm (NCCL's one-rank reduction)
          corr 105 launch [21500, 21550] -> gemm_fwd [21600, 22000]           => fprop
        tid 101 "pt_autograd_0":
          autograd::engine::evaluate_function: MmBackward0 [22000, 23000]
            corr 106 launch [22100, 22150] -> ncclKernel_Broadcast_RING_LL_Sum_int8_t [22200, 22400]
              => comm (would be bprop), layer: borrowed forward_pass
            corr 107 launch [22500, 22550] -> mm_bwd [22600, 22900]           => bprop
        kernel ncclDevKernel_AllGather_RING_LL [26000, 26100] with correlationId 777 (no API call) => comm, '?'
    """
    b, main, autograd = training_process()
    for i, name in enumerate(OPTIMIZER_NAMES + NOT_OPTIMIZER_NAMES):
        base = 1000 * (i + 1)
        main.range(name, base, base + 900)
        main.launch(base + 100, base + 150, i + 1, f"k_{i}", base + 200, base + 300)
    main.launch(1400, 1450, 101, "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096UL>)",
                1500, 1600)
    main.range("forward_pass", 20000, 25000)
    b.domain("NCCL", 50, pid=P, tid=MAIN)
    main.range("ncclAllReduce", 20100, 20900, domain="NCCL")
    main.launch(20200, 20250, 102, "allreduce_custom", 20300, 20800)
    b.memcpy(20500, 20600, 4096, pid=P, correlation_id=103, copy_kind=DTOD, src_kind=DEVICE, dst_kind=DEVICE,
             api_start=20400, api_end=20450, tid=MAIN)
    main.launch(21000, 21050, 104, "void <unnamed>::oneRankReduce<FuncPreMulSum<float>>(void *)", 21100, 21400)
    main.launch(21500, 21550, 105, "gemm_fwd", 21600, 22000)
    autograd.range("autograd::engine::evaluate_function: MmBackward0", 22000, 23000)
    autograd.launch(22100, 22150, 106, "ncclKernel_Broadcast_RING_LL_Sum_int8_t", 22200, 22400)
    autograd.launch(22500, 22550, 107, "mm_bwd", 22600, 22900)
    b.kernel_without_runtime("ncclDevKernel_AllGather_RING_LL", 26000, 26100, pid=P, correlation_id=777)
    return b


def launch_overhead_copies_gaps() -> SyntheticExport:
    """Launch overhead, copies and GPU idle gaps with numbers worked out by hand (tests/test_overhead.py,
    test_memcpy.py, test_gaps.py). pid 100; tid 100 python3, 101 pt_autograd_0, 102 loader.

        tid 100  step [0, 10000]                                                   rowid 1
                   fwd [100, 4000]                                                 rowid 2
                     aten::linear, op_id = 1, sizes = [] [200, 1900] (op marker)   rowid 3
                       corr 1 launch [300, 400]   -> k1 [450, 500]     device 0
                       corr 2 launch [600, 700]   -> k2 [700, 1700]    device 0
                     corr 3 launch [2000, 2100]   -> k1 [2150, 2200]   device 0
                   corr 8 cudaMemcpy [4100, 4650] -> HtoD Pageable 1000000 B [4200, 4500] (blocking API)
                   opt [5000, 9000]                                                rowid 4
                     corr 4 launch [5100, 5200]   -> k3 [5300, 5400]   device 0
                     corr 5 launch [8000, 8100]   -> k3 [8200, 8300]   device 0
                     aten::copy_, op_id = 5, sizes = [] [8400, 8600] (op marker)   rowid 5
                       corr 9 cudaMemcpyAsync [8500, 8550] -> HtoD Pinned 2000000 B [9200, 9700] stream 14
                   corr 10 cudaMemsetAsync [9160, 9180] -> memset 4096 B [9750, 9800]
                   corr 11 cudaMemcpyAsync [9850, 9990] -> DtoH to Pageable 8 B [9900, 9950] (returns after it)
                 OSRT: poll [5300, 7900] with a nested read [5350, 5380] (nesting level 1)
        tid 101  corr 6 launch [3000, 3050] -> k_bwd [3100, 3600] device 0  (no ranges on this thread)
        tid 102  corr 7 launch [1000, 1010] -> k_dev1 [1500, 3500] device 1; OSRT pthread_cond_wait [2000, 9000]

    Device 0 busy: [450,500] [700,1700] [2150,2200] [3100,3600] [4200,4500] [5300,5400] [8200,8300]
    [9200,9700] [9750,9800] [9900,9950] (2700 ns); gaps 2800 [5400,8200], 900 [2200,3100], 900 [8300,9200],
    800 [4500,5300], 600 [3600,4200], 450 [1700,2150], 200 [500,700], 100 [9800,9900], 50 [9700,9750].
    Device 1 busy [1500, 3500], no gap.
    """
    b = SyntheticExport().thread(P, 100, "python3").thread(P, 101, "pt_autograd_0").thread(P, 102, "loader")
    main, autograd, loader = b.on(P, 100), b.on(P, 101), b.on(P, 102)
    main.range("step", 0, 10000)
    main.range("fwd", 100, 4000)
    main.range("aten::linear, op_id = 1, sizes = []", 200, 1900)
    main.range("opt", 5000, 9000)
    main.range("aten::copy_, op_id = 5, sizes = []", 8400, 8600)
    main.launch(300, 400, 1, "k1", 450, 500)
    main.launch(600, 700, 2, "k2", 700, 1700)
    main.launch(2000, 2100, 3, "k1", 2150, 2200)
    main.launch(5100, 5200, 4, "k3", 5300, 5400)
    main.launch(8000, 8100, 5, "k3", 8200, 8300)
    autograd.launch(3000, 3050, 6, "k_bwd", 3100, 3600)
    loader.launch(1000, 1010, 7, "k_dev1", 1500, 3500, device=1)
    b.memcpy(4200, 4500, 1_000_000, pid=P, correlation_id=8, api="cudaMemcpy_v3020", api_start=4100, api_end=4650,
             tid=main.tid)
    b.memcpy(9200, 9700, 2_000_000, pid=P, correlation_id=9, src_kind=PINNED, stream=14, api_start=8500,
             api_end=8550, tid=main.tid)
    b.memset(9750, 9800, 4096, pid=P, correlation_id=10, api_start=9160, api_end=9180, tid=main.tid)
    b.memcpy(9900, 9950, 8, pid=P, correlation_id=11, copy_kind=DTOH, src_kind=DEVICE, dst_kind=PAGEABLE,
             api_start=9850, api_end=9990, tid=main.tid)
    main.osrt("poll", 5300, 7900)
    main.osrt("read", 5350, 5380, nesting_level=1)
    loader.osrt("pthread_cond_wait", 2000, 9000)
    return b


def efficiency_ops() -> SyntheticExport:
    """PyTorch op markers with recorded shapes around kernels, for `nsysql efficiency` (numbers in
    tests/test_efficiency.py). Main thread tid 100, autograd thread tid 101.

        profiled_step [0, 100000] > forward_pass [100, 50000]:
          aten::linear (sizes [[8,16,32],[64,32],[64]]) [200,2000] > aten::addmm ([[64],[128,32],[32,64],[],[]])
            [300,1900]: ampere_bf16_s16816gemm... [500,1500] (tensor core), splitKreduce_kernel [1500,1600]
          aten::matmul ([[4,8,16],[4,16,2]]) [2100,4000]: its own copy kernel [2200,2300];
            > aten::bmm ([[4,8,16],[4,16,2]]) [2400,3900]: sm80_xmma_gemm_..._ffma_... [2600,3100] (not tensor core)
          aten::conv2d op_id 5 ([[2,3,10,10],[4,3,3,3],[4],...]) [4100,6000] > aten::convolution [4150,5900]
            > aten::cudnn_convolution ([[2,3,10,10],[4,3,3,3],...]) [4200,5800]: ..._tensor16x8x8 [4400,5400]
          aten::relu ([[2,4,8,8]], input_op_ids [(5,0)]: the convolution's output) [6100,6500]: float kernel [6200,6300]
          aten::add ([[8,64],[8,64],[]]) [7000,7500]: BFloat16 kernel [7100,7200]
          aten::copy_ ([[8,64],[8,64],[]]) [7600,7900]: float copy kernel [7700,7800]
        tid 101: evaluate_function: MmBackward0 [60000,65000] > MmBackward0 [60100,64900]
          > aten::mm ([[128,64],[64,32]]) [60200,62000]: nvjet_sm90_tst_... [60400,60800]
        tid 100: Optimizer.step#SGD.step [70000,72000] > aten::_foreach_add_ ([[64],[64]]) [70100,71000]:
          multi_tensor_apply_kernel [70300,70500]
    """
    b, main, autograd = training_process()
    main.range("profiled_step", 0, 100000)
    main.range("forward_pass", 100, 50000)
    corr = iter(range(1, 100))

    def launch(kernel, start, kstart, kend, thread=main):
        thread.launch(start, start + 10, next(corr), kernel, kstart, kend)

    main.range("aten::linear, seq = 10, op_id = 1, sizes = [[8, 16, 32], [64, 32], [64]], "
               "input_op_ids = [(0,-1), (0,-1), (0,-1)]", 200, 2000)
    main.range("aten::addmm, op_id = 2, sizes = [[64], [128, 32], [32, 64], [], []], "
               "input_op_ids = [(0,-1), (0,-1), (0,-1), (0,-1), (0,-1)]", 300, 1900)
    launch("ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_tn", 400, 500, 1500)
    launch("void cublasLt::splitKreduce_kernel<32, 16, int, float, float>(T1 *)", 420, 1500, 1600)
    main.range("aten::matmul, seq = 11, op_id = 3, sizes = [[4, 8, 16], [4, 16, 2]], input_op_ids = [(0,-1), (0,-1)]",
               2100, 4000)
    launch("void at::native::elementwise_kernel<128, 4, at::native::direct_copy_kernel_cuda<float>>(int, T3)",
           2150, 2200, 2300)
    main.range("aten::bmm, op_id = 4, sizes = [[4, 8, 16], [4, 16, 2]], input_op_ids = [(0,-1), (0,-1)]",
               2400, 3900)
    launch("sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_aligna4_alignc4_execute_kernel_trt",
           2500, 2600, 3100)
    main.range("aten::conv2d, seq = 12, op_id = 5, sizes = [[2, 3, 10, 10], [4, 3, 3, 3], [4], [], [], [], []], "
               "input_op_ids = [(0,-1), (0,-1), (0,-1), (0,-1), (0,-1), (0,-1), (0,-1)]", 4100, 6000)
    main.range("aten::convolution, op_id = 6, sizes = [[2, 3, 10, 10], [4, 3, 3, 3], [4], [], [], [], [], [], []], "
               "input_op_ids = [(0,-1), (0,-1), (0,-1), (0,-1), (0,-1), (0,-1), (0,-1), (0,-1), (0,-1)]",
               4150, 5900)
    main.range("aten::cudnn_convolution, op_id = 7, sizes = [[2, 3, 10, 10], [4, 3, 3, 3], [], [], [], [], []], "
               "input_op_ids = [(0,-1), (0,-1), (0,-1), (0,-1), (0,-1), (0,-1), (0,-1)]", 4200, 5800)
    launch("sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize64x64x16_stage4_warpsize2x2x1_g1_tensor16x8x8",
           4300, 4400, 5400)
    main.range("aten::relu, seq = 13, op_id = 8, sizes = [[2, 4, 8, 8]], input_op_ids = [(5,0)]", 6100, 6500)
    launch("void at::native::vectorized_elementwise_kernel<4, at::native::clamp_min_scalar_kernel_impl<float>>(int, T2)",
           6150, 6200, 6300)
    main.range("aten::add, seq = 14, op_id = 9, sizes = [[8, 64], [8, 64], []], input_op_ids = [(0,-1), (0,-1), (0,-1)]",
               7000, 7500)
    launch("void at::native::vectorized_elementwise_kernel<8, at::native::CUDAFunctor_add<c10::BFloat16>>(int, T2)",
           7050, 7100, 7200)
    main.range("aten::copy_, op_id = 10, sizes = [[8, 64], [8, 64], []], input_op_ids = [(0,-1), (9,0), (0,-1)]",
               7600, 7900)
    launch("void at::native::vectorized_elementwise_kernel<4, at::native::direct_copy_kernel_cuda<float>>(int, T2)",
           7650, 7700, 7800)
    autograd.range("autograd::engine::evaluate_function: MmBackward0, op_id = 20", 60000, 65000)
    autograd.range("MmBackward0, seq = 15, op_id = 21, sizes = [[128, 64]], input_op_ids = [(0,-1)]", 60100, 64900)
    autograd.range("aten::mm, op_id = 22, sizes = [[128, 64], [64, 32]], input_op_ids = [(0,-1), (0,-1)]", 60200, 62000)
    launch("nvjet_sm90_tst_64x8_64x16_1x4_h_bz_NNT", 60300, 60400, 60800, thread=autograd)
    main.range("Optimizer.step#SGD.step, op_id = 30", 70000, 72000)
    main.range("aten::_foreach_add_, op_id = 31, sizes = [[64], [64]], input_op_ids = [(0,-1), (0,-1)]", 70100, 71000)
    launch("void at::native::multi_tensor_apply_kernel<TensorListMetadata<2>>(T1, T2)", 70200, 70300, 70500)
    return b
