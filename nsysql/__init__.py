"""nsysql: exact, fast answers about where GPU time went in an Nsight Systems export.

The heavy imports (DuckDB, Polars) happen on first use, so `nsysql capture` runs where only
torch and nsys are installed, and `nsysql.annotate` where only torch is (it imports torch when called).
"""
from nsysql.annotate import annotate
from nsysql.errors import MissingDataError, NsysqlError

__version__ = "0.1.0"


def open(path, *, cache_dir=None, use_cache=True, build_all=False, answer_ahead=False, step_range=None):  # noqa: A001
    """Open an Nsight Systems SQLite export (.sqlite or .sqlite.xz), read-only. Returns an `Export`.
    `build_all`: a first open builds every normalized table at once (what summarize reads), not some on first use;
    `answer_ahead`: a first open answers the common commands ahead, as the command line does (NSYSQL_AHEAD);
    `step_range`: the NVTX range level whose instances are the steps (`Export.choose_step_level`), instead of the
    one nsysql chooses (docs/steps.md)."""
    from nsysql.api import Export
    ex = Export(path, cache_dir=cache_dir, use_cache=use_cache, build_all=build_all, answer_ahead=answer_ahead)
    if step_range is not None:
        try:
            ex.choose_step_level(step_range)
        except BaseException:
            ex.close()
            raise
    return ex


def open_job(paths, *, cache_dir=None, use_cache=True):
    """Open the exports of one multi-GPU job, one per rank (one nsys per rank), as one job: their clocks aligned and
    their collectives matched. Returns a `Job`; raises NsysqlError when they are not the ranks of one job."""
    from nsysql.answers.job import KEEP_OPEN, link
    from nsysql.api import Export, Job
    from nsysql.store.open_many import open_all
    paths = list(paths)

    def opened(path):
        ex = Export(path, cache_dir=cache_dir, use_cache=use_cache)
        if len(paths) > KEEP_OPEN:  # not one DuckDB connection per rank (nsysql/answers/job.py each)
            ex.release()
        return ex
    results = open_all(paths, [str(p) for p in paths], opened)  # first opens several at a time
    exports = [ex for ex in results if not isinstance(ex, NsysqlError)]
    if len(exports) < len(results):
        for ex in exports:
            ex.close()
        raise next(ex for ex in results if isinstance(ex, NsysqlError))
    alignment = link(exports)
    if alignment is None:
        for ex in exports:
            ex.close()
        raise NsysqlError("these exports are not the ranks of one job (each needs NCCL kernels, and their captures "
                          "must overlap in time)")
    return Job(exports, alignment)


def recipe(recipe_name, paths, /, *, cache_dir=None, use_cache=True, **options):
    """NVIDIA's recipe `nsys recipe NAME --input PATHS...` over one or several exports, one rank each, ranked by
    report name as NVIDIA does (nsysql/answers/recipes.py); options by NVIDIA's names (name=, bins=, cumulative=,
    disable_alignment=, filter_nvtx=, filter_projected_nvtx=, filter_time=). Returns a RecipeResult
    (`.write(DIR)`: NVIDIA's Parquet files)."""
    from pathlib import Path

    from nsysql.answers import multi, recipes
    from nsysql.api import Export
    found = multi.expand([Path(p) for p in ([paths] if isinstance(paths, (str, Path)) else paths)])
    return recipes.run(recipe_name, found, multi.labels(found),
                       lambda p: Export(p, cache_dir=cache_dir, use_cache=use_cache), recipes.options_of(**options))


def reports() -> list[str]:
    """Names of the reports identical to NVIDIA's: `nsys stats` reports, and nccl_gpu_overlap_trace, the
    rank_trace.csv of the recipe `nsys recipe nccl_gpu_overlap_trace`."""
    from nsysql.sql import catalog
    return [q.name for q in catalog.group("reports")]


# what users reach by name besides the functions above: the Export class, the plots, and the two extension points
# (`nsysql.catalog.add_queries(DIR)` for one's own query files, `nsysql.analyses.declare(...)` for their commands)
_FACE = {"plot": "nsysql.present.plot", "catalog": "nsysql.sql.catalog", "analyses": "nsysql.sql.analyses"}


def __getattr__(name):
    if name == "Export":
        from nsysql.api import Export
        return Export
    if name in _FACE:
        import importlib
        return importlib.import_module(_FACE[name])
    raise AttributeError(name)


__all__ = ["Export", "annotate", "open", "open_job", "recipe", "reports", "NsysqlError", "MissingDataError", "__version__"]
