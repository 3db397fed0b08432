"""NVIDIA's pacing, histogram and heatmap recipes (`nsys recipe NAME`, Nsight Systems 2025.3) from SQLite exports:
`nvtx_pace`, `nvtx_gpu_proj_pace`, `cuda_gpu_kern_pace`, `cuda_gpu_kern_hist`, `cuda_gpu_time_util_map`,
`nccl_gpu_time_util_map` (and `nvtx_cpu_topdown`, which says what its captures lack).

What a recipe computes per report is one SQL file each (queries/recipes/NAME.sql); what it does over the reports
(NVIDIA's reducer: ranks in file-name order, session alignment, the statistics over ranks) is SQL too
(queries/recipes/_pace_*.sql), run here on the reports' rows put together. This module holds the recipes' option
rules and the order of work; nsysql/answers/recipe_files.py writes NVIDIA's Parquet files from the result.

As NVIDIA's recipes: each input is one rank (a report with several processes is still one), ranked by its report's
file name; a report with nothing to show is left out (named on stderr), and the others keep their ranks in order.
"""
from __future__ import annotations

import math
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import polars as pl

from nsysql.errors import MissingDataError, NsysqlError
from nsysql.sql import catalog
from nsysql.sql.engine import connect, quote_literal, to_polars
from nsysql.store.open_many import open_all

PACE, HIST, UTIL, TOPDOWN = "pace", "hist", "util", "topdown"


@dataclass(frozen=True)
class Recipe:
    name: str
    kind: str
    options: frozenset[str]  # the options NVIDIA's recipe takes besides --input
    what: str  # one line: what it shows
    index_name: str = ""  # pacing: the name of stats.parquet's index (NVIDIA's title-cased name column)


_FILTERS = frozenset({"filter_nvtx", "filter_time", "start", "end"})
RECIPES = {r.name: r for r in (
    Recipe("nvtx_pace", PACE, _FILTERS | {"name"}, "each instance of an NVTX range: start, duration, delta", "Text"),
    Recipe("nvtx_gpu_proj_pace", PACE, _FILTERS | {"name", "filter_projected_nvtx"},
           "each instance of an NVTX range projected onto the GPU: start, duration, delta", "Text"),
    Recipe("cuda_gpu_kern_pace", PACE, _FILTERS | {"name"},
           "each instance of a CUDA kernel: start, duration, delta", "Shortname"),
    Recipe("cuda_gpu_kern_hist", HIST, _FILTERS, "every kernel's duration, for histograms"),
    Recipe("cuda_gpu_time_util_map", UTIL, _FILTERS | {"bins", "cumulative", "disable_alignment"},
           "GPU time utilization of kernels per time bin, per process and GPU"),
    Recipe("nccl_gpu_time_util_map", UTIL, _FILTERS | {"bins", "disable_alignment"},
           "utilization of NCCL and compute kernels and their overlap per time bin"),
    Recipe("nvtx_cpu_topdown", TOPDOWN, frozenset(), "CPU topdown metrics per NVTX range (NVIDIA Grace CPUs)"),
)}
OPTION_FLAGS = {"name": "--name", "bins": "--bins", "cumulative": "--cumulative",
                "disable_alignment": "--disable-alignment", "filter_nvtx": "--filter-nvtx",
                "filter_projected_nvtx": "--filter-projected-nvtx", "filter_time": "--filter-time",
                "start": "--start", "end": "--end"}
PMU_TABLE = "PERF_EVENT_SOC_OR_CPU_RAW_EVENT"


@dataclass(frozen=True)
class Options:
    """A recipe's options by NVIDIA's names (None: not given)."""
    name: str | None = None
    bins: int | None = None
    cumulative: bool = False
    disable_alignment: bool = False
    filter_nvtx: str | None = None
    filter_projected_nvtx: str | None = None
    filter_time: str | None = None
    start: int | None = None
    end: int | None = None

    def given(self) -> list[str]:
        return [k for k in OPTION_FLAGS if getattr(self, k) not in (None, False)]


def recipe(name: str) -> Recipe:
    if name not in RECIPES:
        raise NsysqlError(f"no recipe named {name!r}; nsysql gives {', '.join(RECIPES)} (docs/commands/recipes.md)")
    return RECIPES[name]


def check(r: Recipe, o: Options) -> None:
    """NVIDIA's option rules for recipe `r`, each broken one as one line."""
    wrong = [OPTION_FLAGS[k] for k in o.given() if k not in r.options]
    if wrong:
        takes = ", ".join(OPTION_FLAGS[k] for k in OPTION_FLAGS if k in r.options and k not in ("start", "end"))
        verb = "is" if len(wrong) == 1 else "are"
        raise NsysqlError(f"{', '.join(wrong)} {verb} no option of {r.name} (it takes {takes or 'no options'})")
    if r.kind == PACE and not o.name:
        what = "CUDA kernel's short name" if r.name.startswith("cuda") else "NVTX range"
        raise NsysqlError(f"{r.name} needs `name=`: the {what} whose instances delimit the iterations")
    exclusive = [OPTION_FLAGS[k] for k in ("filter_time", "filter_nvtx", "filter_projected_nvtx") if getattr(o, k)]
    if len(exclusive) > 1:
        raise NsysqlError(f"{' and '.join(exclusive)} exclude each other (as in NVIDIA's recipe); give one")
    if o.bins is not None and o.bins < 1:
        raise NsysqlError(f"`bins={o.bins}`: the number of bins is 1 or more")
    nvtx_filter(o.filter_nvtx or o.filter_projected_nvtx)
    time_window(o)


def nvtx_filter(text: str | None) -> tuple[str | None, str | None, int | None]:
    """`range[@domain][/index]` as NVIDIA's recipes read it (nsys_recipe/lib/args.py): (range, domain, index);
    a backslash escapes `@` and `/` in names; no domain: the default one, `*`: any."""
    if text is None:
        return None, None, None

    def split(value: str, sep: str) -> tuple[str, str]:
        at = [m.start() for m in re.finditer(r"(?<!\\)" + re.escape(sep), value)]
        if not at:
            return value, ""
        if len(at) > 1:
            raise NsysqlError(f"`filter_nvtx=` {text!r}: only one '{sep}'; escape one in a name with a backslash")
        return value[:at[0]].replace("\\" + sep, sep), value[at[0] + 1:].replace("\\" + sep, sep)

    before_at, after_at = split(text, "@")
    before_slash, after_slash = split(after_at if after_at else before_at, "/")
    name, domain = (before_slash, None) if not after_at else (before_at, before_slash)
    if after_slash and not after_slash.isdigit():
        raise NsysqlError(f"`filter_nvtx=` {text!r}: the index after '/' is a whole number (0 = the first range)")
    return name, domain, int(after_slash) if after_slash else None


def time_window(o: Options) -> tuple[int | None, int | None]:
    """(time_from, time_to) of --filter-time `[start]/[end]` (ns), else of --start/--end (NVIDIA's older names for
    it); without either (0, None): NVIDIA always leaves out what ends before the session."""
    if o.filter_time is not None:
        parts = o.filter_time.split("/")
        try:
            if len(parts) != 2:
                raise ValueError
            lo, hi = (int(p) if p.strip() else None for p in parts)
        except ValueError:
            raise NsysqlError(f"`filter_time=` {o.filter_time!r}: write [start]/[end] in whole ns, e.g. 1000000/2000000 "
                              "or 1000000/") from None
        if lo is None and hi is None:
            raise NsysqlError("`filter_time=`: give a start, an end or both ([start]/[end])")
        if lo is not None and hi is not None and lo >= hi:
            raise NsysqlError(f"`filter_time={o.filter_time}`: the start must come before the end")
        return lo, hi
    if o.start is not None or o.end is not None:
        return o.start, o.end
    return 0, None


@dataclass
class RecipeResult:
    """A recipe over its reports: `rows` the per-report rows of its query (a `rank` column first), `files`/`labels`
    the ranks' report names and export labels, and what the reducer made of them."""
    recipe: Recipe
    options: Options
    files: list[str]
    labels: list[str]
    rows: pl.DataFrame
    facts: list[dict]  # per rank: recipes._session's row
    skipped: list[tuple[str, str]] = field(default_factory=list)
    stats: pl.DataFrame | None = None  # pacing: recipes._pace_stats
    delta_stats: pl.DataFrame | None = None  # pacing: recipes._pace_delta_stats
    float_ranks: frozenset[int] = frozenset()  # pacing: ranks whose end-based values NVIDIA holds as floats
    bin_size: int | None = None  # heatmaps

    @property
    def kind(self) -> str:
        return self.recipe.kind

    def write(self, directory: str | Path, *, force: bool = False) -> list[Path]:
        """NVIDIA's Parquet files of this result into `directory` (nsysql/answers/recipe_files.py)."""
        from nsysql.answers.recipe_files import write
        return write(self, Path(directory), force=force)

    def people(self) -> tuple[pl.DataFrame, tuple[catalog.Column, ...]]:
        """The rows nsysql shows people (recipes._pace_people, _hist_people, _util_people) and their header."""
        if self.kind == PACE:
            q = catalog.get("recipes._pace_people")
            df = reduce_sql(q, pace_instance=self.rows)
        elif self.kind == HIST:
            q = catalog.get("recipes._hist_people")
            df = reduce_sql(q, hist_kernel=self.rows.select("rank", "name", "duration_ns"))
        else:
            q = catalog.get("recipes._util_people")
            df = reduce_sql(q, util_bin=util_long(self.rows))
        return df, q.columns


def util_long(rows: pl.DataFrame) -> pl.DataFrame:
    """A heatmap's rows as (rank, pid, device_id, kind, kind_order, bin, pct), one row per kind of kernels."""
    kinds = [(c, n) for c, n in (("kernel_pct", "Kernel"), ("all_pct", "All"), ("nccl_pct", "NCCL"),
                                 ("compute_pct", "Compute"), ("overlap_pct", "Overlap")) if c in rows.columns]
    numbered = rows.with_columns(pl.int_range(pl.len()).over("rank", "pid", "device_id").alias("bin"))
    return pl.concat([numbered.select("rank", "pid", "device_id", pl.lit(name).alias("kind"),
                                      pl.lit(i).alias("kind_order"), "bin", pl.col(col).alias("pct"))
                      for i, (col, name) in enumerate(kinds)])


def reduce_sql(q: catalog.Query, **tables: pl.DataFrame) -> pl.DataFrame:
    """Run the reducer query `q` over frames, each a table of its name, in a DuckDB of its own."""
    con = connect()
    with tempfile.TemporaryDirectory(prefix="nsysql-recipe-") as tmp:
        for name, frame in tables.items():
            path = Path(tmp) / f"{name}.parquet"
            frame.write_parquet(path)
            con.execute(f"CREATE TEMP TABLE {name} AS SELECT * FROM read_parquet({quote_literal(str(path))})")
        try:
            return to_polars(con.sql(q.sql))
        finally:
            con.close()


# -- running a recipe over its exports ----------------------------------------------------------------------------
def run(name: str, paths: list[Path], labels: list[str], opener: Callable, options: Options,
        on_skip: Callable[[str, str], None] | None = None, close: bool = True) -> RecipeResult:
    """Recipe `name` over the exports at `paths` (labelled `labels`), each opened with `opener` (and closed after,
    unless not `close`). One export: its reason for having nothing to show is the error; several: such exports are
    left out, each named through `on_skip(label, reason)`, and the error says why when none is left."""
    r = recipe(name)
    check(r, options)
    opened = open_all(paths, labels, opener)
    reasons: list[tuple[str, str]] = []
    good = []
    try:
        for label, ex in zip(labels, opened):
            if isinstance(ex, NsysqlError):
                reasons.append((label, str(ex).removeprefix(f"{label}: ")))
                continue
            try:
                facts = ex.run("recipes._session").row(0, named=True)
            except MissingDataError as exc:
                reasons.append((label, str(exc)))
                continue
            good.append((label, ex, facts))
        if r.kind == TOPDOWN:
            raise NsysqlError(topdown_reason(good[0][1] if good else None, labels[0]))
        results, layout = [], _layout(r, options, good)
        for label, ex, facts in good:
            try:
                frame = _one(r, options, ex, layout.get(label, {}))
            except MissingDataError as exc:
                reasons.append((label, str(exc)))
                continue
            if isinstance(frame, str):
                reasons.append((label, frame))
                continue
            results.append((facts["report"] or label, label, facts, frame))
    finally:
        for ex in opened if close else []:
            if not isinstance(ex, NsysqlError):
                ex.close()
    if not results:
        if len(paths) == 1 and reasons:
            raise NsysqlError(said(*reasons[0]))
        raise NsysqlError("every export failed: " + "; ".join(f"{n}: {why}" for n, why in reasons))
    for label, why in reasons if len(paths) > 1 else []:
        (on_skip or _note)(label, why)
    results.sort(key=lambda t: t[0])  # NVIDIA's ranks: reports in name order (a stable sort: ties as given)
    bin_size = next(iter(layout.values()))["bin_size"] if layout else None
    return _reduce(r, options, results, reasons, bin_size)


def run_one(ex, recipe_name: str, /, **options) -> RecipeResult:
    """Recipe `name` on the open export `ex` (Export.recipe), options by NVIDIA's names (name=, bins=, ...)."""
    from nsysql.answers.multi import label
    return run(recipe_name, [ex.path], [label(ex.path)], lambda _: ex, options_of(**options), close=False)


def options_of(**given) -> Options:
    """Options from keyword arguments by NVIDIA's names; an unknown one is one clear error."""
    unknown = sorted(set(given) - set(OPTION_FLAGS))
    if unknown:
        raise NsysqlError(f"{', '.join(unknown)}: no option of NVIDIA's recipes; they take {', '.join(OPTION_FLAGS)}")
    return Options(**given)


def said(label: str, reason: str) -> str:
    """One export's reason as a sentence: `run has no NVTX range 'x'`, `run: no kernel within the filters`."""
    return f"{label} {reason}" if reason.startswith("has ") else f"{label}: {reason}"


def _note(label: str, reason: str) -> None:
    import sys
    print(f"note: skipped {label}: {reason}", file=sys.stderr)


def topdown_reason(ex, label: str) -> str:
    """nvtx_cpu_topdown's one line: what the export lacks and which capture gives it, or that nsysql leaves the
    metrics to NVIDIA's recipe."""
    has_pmu = ex is not None and PMU_TABLE in ex.store.raw_tables
    if has_pmu:
        return (f"{label} has CPU PMU events, but nsysql does not compute CPU topdown metrics; run NVIDIA's "
                "`nsys recipe nvtx_cpu_topdown --input REPORT.nsys-rep` on its report")
    return (f"{label} has no per-core CPU PMU events ({PMU_TABLE}), which nvtx_cpu_topdown needs; capture on an "
            "NVIDIA Grace (Arm) CPU with `nsys profile --event-sample=system-wide --cpu-core-events=...` (NVIDIA's "
            "collect_cpu_topdown.sh takes every event topdown needs), with --trace=nvtx")


def _layout(r: Recipe, o: Options, good: list) -> dict[str, dict]:
    """Heatmaps: each export's session offset and end on the aligned clock and the shared bin size (NVIDIA's
    ProfileInfo: offsets from the earliest session start of all inputs, or 0 with --disable-alignment)."""
    if r.kind != UTIL or not good:
        return {}
    starts = [f["utc_start_ns"] or 0 for _, _, f in good]
    offsets = [0 if o.disable_alignment else s - min(starts) for s in starts]
    ends = [(f["duration_ns"] or 0) + off for (_, _, f), off in zip(good, offsets)]
    bins = o.bins or 30
    bin_size = math.ceil(max(ends) / bins) if max(ends) > 0 else 1
    return {label: {"session_offset": off, "max_duration": end, "bin_size": bin_size, "bins": bins}
            for (label, _, _), off, end in zip(good, offsets, ends)}


def _one(r: Recipe, o: Options, ex, layout: dict) -> pl.DataFrame | str:
    """The recipe's rows of one export, or why it has none (NVIDIA's recipe writes nothing for it)."""
    f_name, f_domain, f_index = nvtx_filter(o.filter_nvtx or o.filter_projected_nvtx)
    time_from, time_to = time_window(o)
    found = ex.run("recipes._check", name=o.name, filter_name=f_name, filter_domain=f_domain).row(0, named=True)
    if f_name is not None:
        flag = "--filter-projected-nvtx" if o.filter_projected_nvtx else "--filter-nvtx"
        if not found["filter_texts"]:
            return f"{flag}: range {f_name!r} not found"
        if not found["filter_in_domain"]:
            where = "the default domain (name one with RANGE@DOMAIN, or RANGE@* for any)" if f_domain is None \
                else f"domain {f_domain!r}"
            return f"{flag}: range {f_name!r} not found in {where}"
        if f_index is not None and f_index >= found["filter_in_domain"]:
            return (f"{flag}: index {f_index} exceeds the number of {f_name!r} ranges ({found['filter_in_domain']}; "
                    "the index counts from 0)")
    params = dict(filter_name=f_name, filter_domain=f_domain, filter_index=f_index, time_from=time_from,
                  time_to=time_to)
    if r.kind == PACE:
        params["name"] = o.name
        if r.name == "nvtx_gpu_proj_pace":
            params["filter_projected"] = bool(o.filter_projected_nvtx)
        named = found["named_kernels" if r.name == "cuda_gpu_kern_pace" else "named_ranges"]
        if not named:
            if r.name == "cuda_gpu_kern_pace":
                return (f"has no kernel whose short name is {o.name!r} (--name takes a kernel's short name as nsys "
                        "prints it, e.g. vectorized_elementwise_kernel)")
            if not ex.has("nvtx_range"):
                return f"has no NVTX ranges at all, so no {o.name!r}; capture with --trace=nvtx"
            return f"has no NVTX range {o.name!r} with an end (--name takes the range's text, without its domain)"
    elif r.kind == UTIL:
        params.update(layout)
        if r.name == "cuda_gpu_time_util_map":
            params["cumulative"] = o.cumulative
        elif not found["nccl_kernels"]:
            return ("has no NCCL kernels (short names starting with nccl), so nothing to map; NVIDIA's recipe "
                    "writes no output for it either")
    df = ex.run(f"recipes.{r.name}", **params)
    if df.is_empty():
        if r.name == "nvtx_gpu_proj_pace":
            return (f"no {o.name!r} range launched a kernel, copy or set within the filters (GPU work in CUDA graphs "
                    "traced at graph level has no kernel rows; capture with --cuda-graph-trace=node to project it)")
        if r.name == "nccl_gpu_time_util_map":
            return "no NCCL kernel within the filters; NVIDIA's recipe writes no output for it"
        what = {"nvtx_pace": f"{o.name!r} range", "cuda_gpu_kern_pace": f"{o.name!r} kernel"}.get(r.name, "kernel")
        return f"no {what} within the filters"
    return df


def _reduce(r: Recipe, o: Options, results: list, reasons: list, bin_size: int | None) -> RecipeResult:
    files = [report for report, _, _, _ in results]
    labels = [label for _, label, _, _ in results]
    facts = [f for _, _, f, _ in results]
    ranked = [df.select(pl.lit(rank, dtype=pl.Int64).alias("rank"), pl.all())
              for rank, (_, _, _, df) in enumerate(results)]
    rows = pl.concat(ranked)
    result = RecipeResult(r, o, files, labels, rows, facts, skipped=reasons, bin_size=bin_size)
    if r.kind != PACE:
        return result
    # NVIDIA aligns the pacing rows by the session starts of the reports that gave rows (pace.apply_time_offset)
    starts = [f["utc_start_ns"] or 0 for f in facts]
    offsets = pl.DataFrame({"rank": range(len(files)), "offset": [s - min(starts) for s in starts]},
                           schema={"rank": pl.Int64, "offset": pl.Int64})
    rows = rows.join(offsets, on="rank").with_columns(pl.col("start_ns") + pl.col("offset"),
                                                      pl.col("end_ns") + pl.col("offset")).drop("offset")
    result.rows = rows
    # pandas reads the NVTX table's end times as floats when any event has none: nvtx_pace's end-based values
    result.float_ranks = frozenset(i for i, f in enumerate(facts) if r.name == "nvtx_pace" and f["nvtx_without_end"])
    stats_in = rows.select("rank", "iteration", "name", pl.col("duration_ns").cast(pl.Float64),
                           pl.col("delta_ns").cast(pl.Float64))
    result.stats = reduce_sql(catalog.get("recipes._pace_stats"), pace_instance=stats_in)
    result.delta_stats = reduce_sql(catalog.get("recipes._pace_delta_stats"), pace_instance=stats_in)
    return result
