"""`nsysql.Export`, what `nsysql.open` returns, the one class by that name: the query API (nsysql/query/queries.py:
one catalogued query per method: reports, rules, declared analyses, SQL) plus, here, the answers that combine
several queries (sanity warnings, diff, overview, findings, communication, standalone copies, the HTML report),
each a one-line delegation to its module under nsysql/answers/.

The answer modules take the handle and never import this module, so imports run downhill (tests/test_layers.py)."""
from __future__ import annotations

import os
from pathlib import Path

import polars as pl

from nsysql.query import queries


class Export(queries.Queries):
    """One nsys SQLite export, opened read-only. Use `nsysql.open(path)`."""

    def __init__(self, path: str | os.PathLike, *, cache_dir: str | os.PathLike | None = None,
                 use_cache: bool = True, build_all: bool = False, answer_ahead: bool = False):
        """`answer_ahead`: when this open built the cache, answer the common commands ahead (nsysql/answers/ahead.py:
        in a process of its own once this one exits, as NSYSQL_AHEAD says), as every command of the CLI does; this
        process then holds the cache's busy mark until it exits, so that run gives way to it."""
        super().__init__(path, cache_dir=cache_dir, use_cache=use_cache, build_all=build_all, busy_mark=answer_ahead)
        if answer_ahead and self.store.keeps_answers and not self.cache_hit:  # not into a private temporary cache
            from nsysql.answers.ahead import after_build
            after_build(self, summary=not build_all)  # summarize (build_all) computes its own sections at once

    def sanity(self) -> list[str]:
        """Warnings about rows no profiler writes (end before start, duplicated rows, a missing or duplicated
        StringIds), one line each naming the raw table and the count; empty for a sound export."""
        from nsysql.answers.sanity import check
        return check(self)

    def diff(self, other: queries.Queries, by: str = "range", match: str = "exact") -> pl.DataFrame:
        """This export (A) against `other` (B) per range path, kernel or layer: times, B - A, biggest change first.

        `match="base"` (kernels only) matches kernels by base name, e.g. all GEMMs as `gemm*` across dtypes.
        """
        from nsysql.answers.diff import diff
        return diff(self, other, by=by, match=match)

    def gate(self, other: queries.Queries, metric: str = "step", fail_above: str | float = 5.0) -> dict:
        """`other` (NEW) against this export (BASE) as a regression gate (docs/ci.md): the change of `metric`
        (`step`, `kernel:GLOB`, `layer:GLOB`, `finding:RULE`), its 95 % interval from the steps' spread, and the
        verdict (regression, pass or inconclusive) at the threshold `fail_above` (a percentage: 5 or '5%')."""
        from nsysql.answers.gate import gate
        return gate(self, other, metric=metric, fail_above=fail_above)

    def overview(self):
        """The steady-state overview: step time and its breakdown, GPU utilization, SM efficiency, occupancy,
        tensor-core share, top operators, kernels and CUDA calls (an `nsysql.answers.overview.Overview`)."""
        from nsysql.answers.overview import build
        return build(self)

    def findings(self, top: int | None = None, **params) -> pl.DataFrame:
        """What to fix first (nsysql/answers/findings.py): per rule of queries/findings/, rule, title, where, evidence, action
        and recoverable_ns (an upper bound of wall time, over the analysed steady-state steps), largest first."""
        from nsysql.answers.findings import run_findings
        return run_findings(self, top=top, **params)

    def critical_path(self, step: int | None = None, pid: int | None = None, items: bool = False,
                      tracks: bool = False) -> pl.DataFrame:
        """What bounds each step (docs/critical-path.md): per analysed step (or step `step`) wall_ns, path_ns and the
        path's time by kind (cpu, launch, gpu_compute, copy, sync_wait, comm_transfer, comm_wait; adding up to
        path_ns); `items=True`: the path's items in time order (kind, name, layer, start_ns, end_ns); `tracks=True`
        (with items): also the track each ran on (tid and thread_name, or device_id and stream_id), as
        `nsysql.plot.timeline(..., critical_path=True)` draws them."""
        from nsysql.answers import critical_path
        if tracks:
            return critical_path.item_tracks(self, step, pid)
        return (critical_path.item_rows if items else critical_path.composition)(self, step, pid)

    def what_if(self, scales: list[str], step: int | None = None, pid: int | None = None, *, check: bool = True,
                matched: bool = False) -> pl.DataFrame:
        """Each analysed step's (or step `step`'s) measured_ns and predicted_ns when the graph of critical_path is
        replayed with `scales` (`TARGET:PATTERN=FACTOR`, e.g. `kernel:*gemm*=0.5`, `range:dataloader=0`). A scale
        that matches nothing is an error naming the closest targets (`check=False`: a replay without it);
        `matched=True` adds a `matched` column: per step, each scale's items and ns."""
        from nsysql.answers import what_if
        return what_if.step_times(self, [what_if.parse(s) for s in scales], step, pid, check=check, matched=matched)

    def recipe(self, recipe_name: str, /, **options):
        """NVIDIA's recipe `nsys recipe NAME` on this export (nvtx_pace, nvtx_gpu_proj_pace, cuda_gpu_kern_pace,
        cuda_gpu_kern_hist, cuda_gpu_time_util_map, nccl_gpu_time_util_map), options by NVIDIA's names (name=,
        bins=, cumulative=, filter_nvtx=, filter_time=, ...): a RecipeResult; `.rows` the recipe's rows, `.people()`
        what `nsysql recipe` shows, `.write(DIR)` NVIDIA's Parquet files."""
        from nsysql.answers.recipes import run_one
        return run_one(self, recipe_name, **options)

    def html(self, path: str | os.PathLike, *, steps: str | None = None) -> Path:
        """Write summarize's answer as one self-contained HTML page (charts, tables, findings, a timeline of the
        median step), as `nsysql html` does; returns its path. `steps`: the steps whose timelines it carries
        (`"3,5-7"`, `"all"`; default: the median analysed step, then others while the page stays small)."""
        from nsysql.answers.html_report import write
        return write([self], Path(path), steps=steps)

    # -- standalone copies (logic in nsysql/answers/dataset.py) ------------------------------------------
    def to_duckdb(self, path: str | os.PathLike, *, force: bool = False):
        """Write a DuckDB file: the normalized tables plus every report and analysis as a documented view."""
        from nsysql.answers import dataset
        return dataset.write_duckdb(self, Path(path), force=force)

    def to_parquet(self, directory: str | os.PathLike, *, name: str | None = None, force: bool = False):
        """Write the normalized tables as a Parquet dataset: DIR/<table>/export=<name>/part-0.parquet."""
        from nsysql.answers import dataset
        return dataset.write_parquet(self, Path(directory), name=name, force=force)


class Job:
    """The exports of one multi-GPU job, one per rank, put on one clock with their collectives matched
    (nsysql/answers/job.py): the answers one export of the whole job gives. Use `nsysql.open_job(paths)`."""

    def __init__(self, exports: list[Export], alignment):
        self.exports = exports
        self.alignment = alignment  # nsysql.answers.job.Alignment: the shift of each export and what is left of it

    def comm(self) -> pl.DataFrame:
        """analysis.comm of every rank, the straggler of each step decided over all of them."""
        from nsysql.answers.job_views import comm
        return comm(self.exports)

    def critical_path(self, step: int | None = None, items: bool = False) -> pl.DataFrame:
        """Each rank's critical path (as Export.critical_path), an `export` column first. The ranks' graphs are
        merged on the job's clock: a rank that waited for a late rank goes on through the late rank's work, and the
        items (`items=True`) say in `on_export` which rank ran them; times are on each export's own clock."""
        from nsysql.answers import critical_path_job
        from nsysql.answers.multi import labels
        how = critical_path_job.item_rows if items else critical_path_job.composition
        return how(self.exports, labels([ex.path for ex in self.exports]), step)

    def what_if(self, scales: list[str], step: int | None = None, *, check: bool = True,
                matched: bool = False) -> pl.DataFrame:
        """Each rank's steps predicted with `scales` (as Export.what_if), the ranks replayed together on their merged
        graph: a change on one rank reaches the others through their collectives. An `export` column first."""
        from nsysql.answers import what_if
        from nsysql.answers.multi import labels
        return what_if.job_step_times(self.exports, labels([ex.path for ex in self.exports]),
                                      [what_if.parse(s) for s in scales], step, check=check, matched=matched)

    def findings(self, **params) -> pl.DataFrame:
        """The job's findings: one per rule, the straggler first (as `nsysql findings A B`)."""
        from nsysql.answers.job_views import findings
        return findings(self.exports, **params)

    def overview(self):
        """The job's overview (an `nsysql.answers.overview.Overview`), as `nsysql overview A B`."""
        from nsysql.answers.job_views import overview
        return overview(self.exports)

    def html(self, path: str | os.PathLike, *, steps: str | None = None) -> Path:
        """The job's page (as `nsysql html A B`): one self-contained HTML file, the ranks side by side; `steps` as
        Export.html's."""
        from nsysql.answers.html_report import write
        return write(self.exports, Path(path), title=f"{len(self.exports)} exports of one job", steps=steps)

    def close(self) -> None:
        for ex in self.exports:
            ex.close()

    def __enter__(self) -> Job:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
