"""What kernel attribution adds to a cold `nsysql` run, on an export replicated N times.

    python bench/bench_attribution.py BASE.sqlite[.xz] --copies 2100 [--workdir DIR] [--skip OSRT_API]

Builds the N-copy export (bench/replicate.py), normalizes it once with nsysql (cold), then,
on a copy of the cached DuckDB file, drops the attribution tables and rebuilds each from its
SQL file with a timer: nvtx_context, user_range, gpu_op_attribution (in that order, each
reading the tables before it). Their sum is what attribution adds to the cold run. With
--warm, also times `layers()` and `kernel_table()` on the warm cache (the latter moves every
row into Python: slow at millions of rows). Prints Markdown rows for docs/ as it goes.
"""
from __future__ import annotations

import argparse
import lzma
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ATTRIBUTION = ("nvtx_context", "user_range", "gpu_op_attribution")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("base", type=Path)
    p.add_argument("--copies", type=int, default=2100)
    p.add_argument("--workdir", type=Path, default=None)
    p.add_argument("--skip", action="append", default=[], help="raw table not to replicate (e.g. OSRT_API)")
    p.add_argument("--warm", action="store_true", help="also time layers() and kernel_table() on the warm cache")
    a = p.parse_args()
    import nsysql
    from nsysql.sql import catalog
    from nsysql.sql.engine import connect

    work = a.workdir or Path(tempfile.mkdtemp(prefix="nsysql-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    base = a.base
    if base.suffix == ".xz":
        base = work / "base.sqlite"
        with lzma.open(a.base) as src, base.open("wb") as dst:
            shutil.copyfileobj(src, dst)
    export = work / f"x{a.copies}.sqlite"
    if not export.exists():
        subprocess.run([sys.executable, str(HERE / "replicate.py"), str(base), str(export), "--copies",
                        str(a.copies)] + [x for t in a.skip for x in ("--skip", t)],
                       check=True, stderr=subprocess.DEVNULL)
    cache = work / "cache"
    shutil.rmtree(cache, ignore_errors=True)
    t = time.perf_counter()
    with nsysql.open(export, cache_dir=cache) as ex:
        cold = time.perf_counter() - t
        sizes = ex.sql("SELECT (SELECT COUNT(*) FROM kernel) AS kernels, (SELECT COUNT(*) FROM runtime) AS runtime, "
                       "(SELECT COUNT(*) FROM nvtx_range) AS ranges").row(0, named=True)
        db = Path(ex.cache_path)
    print(f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"{time.strftime('%Y-%m-%d')}")
    print(f"export: {a.copies} copies of {a.base.name}: {sizes['kernels']} kernels, {sizes['runtime']} runtime calls, "
          f"{sizes['ranges']} NVTX ranges; cold normalize (all tables) {cold:.1f} s")
    print("| step | seconds |")
    print("|---|---:|", flush=True)
    scratch = work / "scratch.duckdb"
    shutil.copy(db, scratch)
    con = connect(scratch)
    for name in reversed(ATTRIBUTION):
        con.execute(f"DROP TABLE {name}")
    total = 0.0
    for name in ATTRIBUTION:
        q = catalog.get(f"normalize.nsys3.{name}")
        t = time.perf_counter()
        con.execute(q.sql)
        took = time.perf_counter() - t
        total += took
        print(f"| normalize {name} | {took:.2f} |", flush=True)
    con.close()
    scratch.unlink()
    print(f"| **attribution added to cold** | **{total:.2f}** |", flush=True)
    if a.warm:
        with nsysql.open(export, cache_dir=cache) as ex:
            for label, fn in (("layers()", ex.layers), ("kernel_table()", ex.kernel_table)):
                t = time.perf_counter()
                fn()
                print(f"| warm {label} | {time.perf_counter() - t:.2f} |", flush=True)
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MiB")


if __name__ == "__main__":
    main()
