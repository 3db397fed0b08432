#!/usr/bin/env python3
"""Synthetic Nsight Systems exports shaped like the old export schemas nsysql reads through shims.

Two flavours, each copied from a real export of that era (../shared/samples/external, not in the repository):

- "2022.1": export schema 2.9.1 (Nsight Systems 2022.1.3.3, the DLProf capture `dlprof_2070s`). The metadata
  table is EXPORT_META_DATA with 2022.1's keys (EXPORT_INPUT_FILE, EXPORT_OUTUPT_FILE sic, ...); no ENUM_* tables;
  the CUDA tables lack greenContextId, CUPTI_ACTIVITY_KIND_MEMCPY also copyCount, NVTX_EVENTS binaryData.
- "2021": no metadata table at all (the 2021 capture `mordred_old`): no META_DATA_EXPORT/EXPORT_META_DATA,
  PROCESSES, ANALYSIS_DETAILS or ENUM_* tables; CUPTI_ACTIVITY_KIND_KERNEL lacks mangledName (and greenContextId),
  CUPTI_ACTIVITY_KIND_MEMCPY virtualAddress and copyCount; OSRT_API has a correlationId column after globalTid.
  The real export has no NVTX; a case that adds ranges gets NVTX_EVENTS with 2022.1's columns.

Every other column is as in scripts/make_synthetic.py (2025.3's), in the same order: both real exports list their
columns in that order. Library use (tests import this file by path, as make_synthetic.py):

    b = OldSchemaExport("2021")      # a SyntheticExport: thread(), range(), launch(), memcpy(), ...
    b.write("old.sqlite")

CLI: `python scripts/make_old_exports.py OUTDIR` writes OUTDIR/old_training_<flavour>.sqlite for each flavour.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sqlite3
import sys
from dataclasses import dataclass, field
from pathlib import Path

_spec = importlib.util.spec_from_file_location("make_synthetic", Path(__file__).with_name("make_synthetic.py"))
ms = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ms)

ENUMS = tuple(ms.ENUM_ROWS)


@dataclass(frozen=True)
class Flavour:
    schema_version: str | None  # None: no metadata table
    product_version: str | None
    drop_tables: tuple[str, ...]
    drop_columns: dict[str, tuple[str, ...]]
    add_columns: dict[str, tuple[tuple[str, str, str], ...]] = field(default_factory=dict)  # (after, column, type)


FLAVOURS = {
    "2022.1": Flavour(
        schema_version="2.9.1", product_version="2022.1.3.3", drop_tables=ENUMS,
        drop_columns={"CUPTI_ACTIVITY_KIND_KERNEL": ("greenContextId",),
                      "CUPTI_ACTIVITY_KIND_MEMCPY": ("greenContextId", "copyCount"),
                      "CUPTI_ACTIVITY_KIND_MEMSET": ("greenContextId",),
                      "NVTX_EVENTS": ("binaryData",)}),
    "2021": Flavour(
        schema_version=None, product_version=None, drop_tables=ENUMS + ("PROCESSES", "ANALYSIS_DETAILS"),
        drop_columns={"CUPTI_ACTIVITY_KIND_KERNEL": ("greenContextId", "mangledName"),
                      "CUPTI_ACTIVITY_KIND_MEMCPY": ("greenContextId", "virtualAddress", "copyCount"),
                      "CUPTI_ACTIVITY_KIND_MEMSET": ("greenContextId",),
                      "NVTX_EVENTS": ("binaryData",)},
        add_columns={"OSRT_API": (("globalTid", "correlationId", "INTEGER"),)}),
}


def _ddl(table: str, flavour: Flavour) -> list[tuple[str, str]]:
    """(column, declaration) of `table` in `flavour`, in order."""
    out = []
    for line in ms.DDL[table].strip().splitlines():
        name, decl = line.strip().rstrip(",").split(None, 1)
        if name in flavour.drop_columns.get(table, ()):
            continue
        out.append((name, decl))
        for after, column, decl_added in flavour.add_columns.get(table, ()):
            if after == name:
                out.append((column, decl_added))
    return out


class OldSchemaExport(ms.SyntheticExport):
    """A SyntheticExport written in an old export schema's shape (see the module docstring)."""

    def __init__(self, flavour: str) -> None:
        super().__init__()
        self.flavour_name = flavour
        self.flavour = FLAVOURS[flavour]

    def write(self, path: str | os.PathLike) -> Path:
        path = Path(path)
        if path.exists():
            path.unlink()
        f = self.flavour
        start, stop = self._time_span()
        tables = ["StringIds", "ANALYSIS_DETAILS"] + [t for t in ms.EVENT_TABLES if self.rows[t]]
        tables = [t for t in tables if t not in f.drop_tables]
        con = sqlite3.connect(path)
        try:
            for table in tables:
                columns = _ddl(table, f)
                con.execute(f"CREATE TABLE {table} ({', '.join(f'{c} {d}' for c, d in columns)})")
            con.executemany("INSERT INTO StringIds VALUES (?, ?)", [(i, s) for s, i in self._strings.items()])
            if "ANALYSIS_DETAILS" in tables:
                con.execute("INSERT INTO ANALYSIS_DETAILS VALUES (?, ?, ?, ?)", (ms.VM_ID, stop - start, start, stop))
            for table in tables:
                if table in ms.EVENT_TABLES:
                    cols = [c for c, _ in _ddl(table, f)]
                    con.executemany(f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                                    [tuple(r.get(c) for c in cols) for r in self.rows[table]])
            if f.schema_version is not None:
                major, minor, micro = f.schema_version.split(".")
                con.execute("CREATE TABLE EXPORT_META_DATA (name TEXT NOT NULL, value TEXT)")
                con.executemany("INSERT INTO EXPORT_META_DATA VALUES (?, ?)", [  # 2022.1's keys, OUTUPT sic
                    ("EXPORT_PRODUCT_NAME", "NVIDIA Nsight Systems"), ("EXPORT_PRODUCT_VERSION", f.product_version),
                    ("EXPORT_SCHEMA_VERSION", f.schema_version), ("EXPORT_SCHEMA_VERSION_MAJOR", major),
                    ("EXPORT_SCHEMA_VERSION_MINOR", minor), ("EXPORT_SCHEMA_VERSION_MICRO", micro),
                    ("EXPORT_INPUT_FILE", "old.nsys-rep"), ("EXPORT_OUTUPT_FILE", "old.sqlite"),
                    ("EXPORT_LAZY", "true"), ("EXPORT_SYNTHETIC", "scripts/make_old_exports.py"),
                ])
            con.commit()
        finally:
            con.close()
        return path


P, T = 300, 300
GEMM = "void gemm<float>(float const*, float*, int)"


def old_training(flavour: str) -> OldSchemaExport:
    """Two steps of CUDA work on pid/tid 300, with NVTX step ranges unless the flavour is "2021" (whose real
    export has no NVTX), an OS runtime call, copies both ways and a memset. Hand-worked answers:

        OSRT read [500, 800]                                                      -> osrt_sum read: 300 ns
        step 1 [1000, 5000]  (NVTX, not in "2021")
          cudaLaunchKernel_v7000 [1100, 1200] corr 1 -> gemm [1300, 2300]
          cudaMemcpyAsync_v3020 [2350, 2450] corr 2 -> Host-to-Device 4096 B, Pageable -> Device [2400, 2600]
        step 2 [6000, 10000] (NVTX, not in "2021")
          cudaLaunchKernel_v7000 [6100, 6200] corr 3 -> gemm [6300, 7300]
          cudaMemsetAsync_v3020 [7350, 7380] corr 4 -> memset 1024 B on Device [7400, 7500]
          cudaMemcpy_v3020 [7550, 7850] corr 5 -> Device-to-Host 2048 B, Device -> Pageable [7600, 7800]

    cuda_gpu_kern_sum: gemm, 2 instances, 2000 ns; cuda_gpu_mem_time_sum: Host-to-Device 200 ns, Device-to-Host
    200 ns, memset 100 ns; cuda_api_sum: 5 calls in 4 names; nvtx_sum: :step, 2 instances, 8000 ns.
    """
    b = OldSchemaExport(flavour)
    b.thread(P, T, "python3")
    b.osrt("read", 500, 800, tid=T, pid=P)
    nvtx = flavour != "2021"
    if nvtx:
        b.range("step", 1000, 5000, tid=T, pid=P)
    b.launch(start=1100, end=1200, tid=T, pid=P, correlation_id=1, kernel=(GEMM, 1300, 2300, 7, 0))
    b.memcpy(2400, 2600, 4096, pid=P, correlation_id=2, api_start=2350, api_end=2450, tid=T)
    if nvtx:
        b.range("step", 6000, 10000, tid=T, pid=P)
    b.launch(start=6100, end=6200, tid=T, pid=P, correlation_id=3, kernel=(GEMM, 6300, 7300, 7, 0))
    b.memset(7400, 7500, 1024, pid=P, correlation_id=4, api_start=7350, api_end=7380, tid=T)
    b.memcpy(7600, 7800, 2048, pid=P, correlation_id=5, copy_kind=ms.DTOH, src_kind=ms.DEVICE, dst_kind=ms.PAGEABLE,
             api="cudaMemcpy_v3020", api_start=7550, api_end=7850, tid=T)
    return b


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write synthetic exports in old Nsight Systems export schemas.")
    parser.add_argument("outdir", type=Path, help="directory to write old_training_<flavour>.sqlite into (created)")
    args = parser.parse_args(argv)
    args.outdir.mkdir(parents=True, exist_ok=True)
    for flavour in FLAVOURS:
        print(old_training(flavour).write(args.outdir / f"old_training_{flavour}.sqlite"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
