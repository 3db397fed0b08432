"""``nsysql recipe NAME EXPORT...``: NVIDIA's pacing, histogram and heatmap recipes (`nsys recipe NAME`, Nsight
Systems 2025.3), as a table for people or, with `-f parquet -o DIR`, the Parquet files NVIDIA's recipe writes."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from nsysql.cli.common import OUTPUT, SOURCE, ExportsArg, Output, Source, add_commands
from nsysql.core.formats import Format

# The recipes' options, by NVIDIA's names (nsys recipe NAME --help); each recipe takes those NVIDIA's does.
NameOpt = Annotated[Optional[str], typer.Option(
    "--name", help="pace recipes: the NVTX range (nvtx_pace, nvtx_gpu_proj_pace) or the CUDA kernel's short name "
                   "(cuda_gpu_kern_pace) whose instances delimit the iterations.", show_default=False)]
BinsOpt = Annotated[Optional[int], typer.Option(
    "--bins", help="heatmaps: the number of time bins (default 30).", show_default=False)]
CumulativeOpt = Annotated[bool, typer.Option(
    "--cumulative", help="cuda_gpu_time_util_map: add up the utilization of all kernels in each bin (above 100 % "
                         "when kernels run concurrently).")]
AlignOpt = Annotated[bool, typer.Option(
    "--disable-alignment", help="heatmaps, several exports: each on its own clock (from its session's start) "
                                "instead of aligned by the sessions' start times.")]
FilterNvtxOpt = Annotated[Optional[str], typer.Option(
    "--filter-nvtx", metavar="RANGE[@DOMAIN][/INDEX]",
    help="Keep only what overlaps these NVTX ranges (directly or through other events overlapping them, as "
         "NVIDIA's recipe groups them): the ranges named RANGE in the default domain, or DOMAIN (* for any); INDEX "
         "(from 0) picks one of them. Escape @ and / in names with a backslash.", show_default=False)]
FilterProjectedOpt = Annotated[Optional[str], typer.Option(
    "--filter-projected-nvtx", metavar="RANGE[@DOMAIN][/INDEX]",
    help="nvtx_gpu_proj_pace: as --filter-nvtx, with the ranges' projections onto the GPU.", show_default=False)]
FilterTimeOpt = Annotated[Optional[str], typer.Option(
    "--filter-time", metavar="[START]/[END]",
    help="Keep only what runs within this window: ns on the export's clock (from its session's start).",
    show_default=False)]
StartOpt = Annotated[Optional[int], typer.Option("--start", hidden=True, help="NVIDIA's older --filter-time START/.")]
EndOpt = Annotated[Optional[int], typer.Option("--end", hidden=True, help="NVIDIA's older --filter-time /END.")]
ForceOpt = Annotated[bool, typer.Option("--force", help="-f parquet: replace NVIDIA's files already in -o DIR.")]


def recipe(
    name: Annotated[str, typer.Argument(
        help="nvtx_pace, nvtx_gpu_proj_pace, cuda_gpu_kern_pace, cuda_gpu_kern_hist, cuda_gpu_time_util_map, "
             "nccl_gpu_time_util_map or nvtx_cpu_topdown, as `nsys recipe NAME`.", show_default=False)],
    exports: ExportsArg,
    range_name: NameOpt = None,
    bins: BinsOpt = None,
    cumulative: CumulativeOpt = False,
    disable_alignment: AlignOpt = False,
    filter_nvtx: FilterNvtxOpt = None,
    filter_projected_nvtx: FilterProjectedOpt = None,
    filter_time: FilterTimeOpt = None,
    start: StartOpt = None,
    end: EndOpt = None,
    force: ForceOpt = False,
    out: Output = OUTPUT,
    src: Source = SOURCE,
) -> None:
    """Run one of NVIDIA's pacing, histogram or heatmap recipes (`nsys recipe NAME`, Nsight Systems 2025.3):
    `-f parquet -o DIR` writes the files NVIDIA's recipe writes there (files.parquet, stats.parquet,
    pace_*.parquet or analysis.parquet), the same columns, types, values and pandas index, so that a notebook reading
    NVIDIA's files reads these.

    Each export is one rank, numbered as NVIDIA does: by its report's name. Several exports' sessions are aligned by
    their start times. An export with nothing to show (no such range, no NCCL kernel) is left out and named; alone,
    it is an error (NVIDIA's recipe writes no output for it).

    Table and markdown: pace recipes show the duration statistics, then each instance's start (since the session's
    start), duration and delta, with outliers of its rank marked; cuda_gpu_kern_hist each kernel's durations;
    the heatmaps one line of shades per process and GPU. csv and json keep every row in ns."""
    from nsysql.answers import multi, recipes
    from nsysql.cli.common import open_export
    with src.errors():
        options = recipes.Options(name=range_name, bins=bins, cumulative=cumulative,
                                  disable_alignment=disable_alignment, filter_nvtx=filter_nvtx,
                                  filter_projected_nvtx=filter_projected_nvtx, filter_time=filter_time,
                                  start=start, end=end)
        recipes.check(recipes.recipe(name), options)  # a bad name or option fails before any export is opened
        if out.fmt is Format.parquet and out.output is None:
            from nsysql.errors import NsysqlError
            raise NsysqlError("-f parquet writes NVIDIA's files into a directory; give it with -o DIR")
        paths = multi.expand(exports)
        result = recipes.run(name, paths, multi.labels(paths),
                             lambda p: open_export(p, src.cache_dir, src.no_cache), options)
        if out.fmt is Format.parquet:
            written = result.write(Path(out.output or "."), force=force)
            typer.echo(f"wrote {len(written)} files to {out.output}: {', '.join(p.name for p in written)}", err=True)
            return
        several = len(paths) > 1
        if out.for_people:
            _people(result, out, several)
        else:
            rows = _labelled(result, result.rows, several)
            q = _query(result)
            out.emit(rows, columns=q.columns, title=name)


def _query(result):
    from nsysql.sql import catalog
    return catalog.get(f"recipes.{result.recipe.name}")


def _labelled(result, df, several: bool):
    """Several exports: `export` (each rank's label) first; one export: no rank column."""
    import polars as pl
    if not several:
        return df.drop("rank")
    labels = pl.DataFrame({"rank": range(len(result.labels)), "export": result.labels},
                          schema={"rank": pl.Int64, "export": pl.String})
    return df.join(labels, on="rank", how="left").select("export", pl.all().exclude("export"))


def _people(result, out: Output, several: bool) -> None:
    """The table(s) for people: pace recipes their statistics and then the instances; the others one table."""
    from nsysql.answers.recipes import PACE, UTIL
    from nsysql.present.render import TABLE_ROWS, table_width, to_markdown, to_table, use_color, write_text
    from nsysql.sql import catalog
    df, columns = result.people()
    df = _labelled(result, df, several)
    if result.recipe.name == "cuda_gpu_time_util_map":
        df = df.drop("kind")  # one kind of kernels: the column would say Kernel on every row
        columns = tuple(c for c in columns if c.name != "kind")
    r, o = result.recipe, result.options
    width, color = table_width(out.output), use_color(out.output)
    blocks: list[tuple] = []
    if r.kind == PACE:
        stats_q = catalog.get("recipes._pace_stats")
        stats = result.stats
        ranks = f" over {len(result.files)} ranks" if several else ""
        count = int(stats["count"].sum()) if stats is not None else 0
        blocks.append((stats, stats_q.columns, f"{o.name}: {count:,} instances{ranks} ({r.name}), duration",
                       ("sum_ns", ("q1_ns", "q3_ns"), "std_ns"),
                       ["std, Q1, median, Q3: approximated over ranks as NVIDIA does"] if several else []))
        flagged = df.filter(df["outlier"] != "").height
        blocks.append((df, columns, "Instances (start: since the session's start)", (),
                       [f"{flagged} of {df.height} instances are outliers of their rank (Tukey's fences: beyond "
                        "1.5 IQR from Q1/Q3; the first delta, from the session's start, is not judged)"]))
    elif r.kind == UTIL:
        bins = o.bins or 30
        size = (result.bin_size or 0) / 1e6
        note = (f"bins: one shade per time bin ({bins} of {size:,.1f} ms from the aligned start), ' ' idle to '█' "
                "busy (100 %), '·' outside the session" + ("; --wide shows every bin" if bins > 30 else ""))
        blocks.append((df, columns, f"{r.name}: GPU time utilization", (), [note]))
    else:
        blocks.append((df, columns, f"{r.name}: kernel durations per name, most GPU time first", (),
                       ["every kernel's duration is in -f csv / -f parquet -o DIR (analysis.parquet)"]))
    texts = []
    shared = [["mean_ns", "std_ns", "min_ns", "q1_ns", "median_ns", "q3_ns", "max_ns"]]  # statistics: one unit
    for frame, cols, title, optional, notes in blocks:
        if out.fmt is Format.markdown:
            texts.append(f"**{title}**\n\n" + to_markdown(frame, columns=cols, unit_groups=shared)
                         + "".join(f"\n_{n}_\n" for n in notes))
        else:
            texts.append(to_table(frame, title=title, columns=cols, width=width, color=color, wide=out.wide,
                                  max_rows=TABLE_ROWS, optional=optional, notes=notes,
                                  text_min={"name": 24, "bins": o.bins or 30}, unit_groups=shared,
                                  more_hint="-f csv shows every row"))
    write_text("\n".join(texts), out.output)


def register(app: typer.Typer) -> None:
    add_commands(app, recipe=recipe)
