"""nsysql: exact, fast answers about where GPU time went in an Nsight Systems export.

The heavy imports (DuckDB, Polars) happen on first use, so `nsysql capture` runs where only
torch and nsys are installed, and `nsysql.annotate` where only torch is (it imports torch when called).
"""
from .annotate import annotate
from .errors import MissingDataError, NsysqlError

__version__ = "0.1.0"


def open(path, *, cache_dir=None, use_cache=True):  # noqa: A001
    """Open an Nsight Systems SQLite export (.sqlite or .sqlite.xz), read-only. Returns an `Export`."""
    from .api import Export
    return Export(path, cache_dir=cache_dir, use_cache=use_cache)


def open_job(paths, *, cache_dir=None, use_cache=True):
    """Open the exports of one multi-GPU job, one per rank (one nsys per rank), as one job: their clocks aligned and
    their collectives matched. Returns a `Job`; raises NsysqlError when they are not the ranks of one job."""
    from .api import Export, Job
    from .job import link
    exports = [Export(p, cache_dir=cache_dir, use_cache=use_cache) for p in paths]
    alignment = link(exports)
    if alignment is None:
        for ex in exports:
            ex.close()
        raise NsysqlError("these exports are not the ranks of one job (each needs NCCL kernels, and their captures "
                          "must overlap in time)")
    return Job(exports, alignment)


def reports() -> list[str]:
    """Names of the reports identical to NVIDIA's: `nsys stats` reports, and nccl_gpu_overlap_trace, the
    rank_trace.csv of the recipe `nsys recipe nccl_gpu_overlap_trace`."""
    from . import catalog
    return [q.name for q in catalog.group("reports")]


def __getattr__(name):
    if name == "Export":
        from .api import Export
        return Export
    raise AttributeError(name)


__all__ = ["Export", "annotate", "open", "open_job", "reports", "NsysqlError", "MissingDataError", "__version__"]
