"""``nsysql plot timeline|layers|kernels|pace|hist|util-map EXPORT... -o FILE.png|.svg``: pictures of an export (one
per export), and the pictures of NVIDIA's recipe notebooks (one for all the exports, a rank each)."""
from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from nsysql.cli.common import SOURCE, DepthOpt, ExportFilesArg, MergeRepeatsOpt, Source, add_commands
from nsysql.cli.recipe import (
    AlignOpt,
    BinsOpt,
    CumulativeOpt,
    EndOpt,
    FilterNvtxOpt,
    FilterProjectedOpt,
    FilterTimeOpt,
    NameOpt,
    StartOpt,
)


class Kind(str, Enum):
    timeline = "timeline"
    layers = "layers"
    kernels = "kernels"
    pace = "pace"
    hist = "hist"
    util_map = "util-map"


# the recipes each recipe picture draws, its default first
RECIPE_KINDS = {Kind.pace: ("nvtx_pace", "nvtx_gpu_proj_pace", "cuda_gpu_kern_pace"),
                Kind.hist: ("cuda_gpu_kern_hist",),
                Kind.util_map: ("cuda_gpu_time_util_map", "nccl_gpu_time_util_map")}


def plot(
    kind: Annotated[Kind, typer.Argument(help="timeline: NVTX ranges per thread above GPU ops per stream, "
                                              "coloured by direction; layers: forward/backward/optimizer/"
                                              "communication GPU time per layer; "
                                              "kernels: the kernels with the most GPU time; "
                                              "pace, hist, util-map: the pictures of NVIDIA's recipe notebooks "
                                              "(`nsysql recipe`): each iteration's duration and delta, kernel "
                                              "duration histograms, the utilization heatmap.", show_default=False)],
    exports: ExportFilesArg,
    output: Annotated[Path, typer.Option(
        "-o", "--output", help="Image file; .png, .svg or .pdf picks the format. Several exports: one image each, "
                               "FILE's stem + _<export> + suffix (e.g. out_rank0.png).", show_default=False)],
    start_ms: Annotated[Optional[float], typer.Option(
        "--start-ms", help="timeline: window start, ms since the capture's first event [default: that event].",
        show_default=False)] = None,
    end_ms: Annotated[Optional[float], typer.Option(
        "--end-ms", help="timeline: window end, ms since the capture's first event [default: the last event's end].",
        show_default=False)] = None,
    step: Annotated[Optional[int], typer.Option(
        "--step", min=1, help="timeline: the window of step N (1-based, as `nsysql steps` numbers them).",
        show_default=False)] = None,
    pid: Annotated[Optional[int], typer.Option(
        "--pid", help="timeline: the process of --step, when several processes have steps (each numbers its own).",
        show_default=False)] = None,
    op_markers: Annotated[bool, typer.Option(
        "--op-markers", help="timeline: also draw PyTorch op-marker ranges (aten::..., ...Backward0).")] = False,
    critical_path: Annotated[bool, typer.Option(
        "--critical-path", help="timeline: draw the step's critical path above (the analysed steps' in a window), "
                                "coloured by kind, and mark its items on their threads and streams.")] = False,
    top: Annotated[Optional[int], typer.Option(
        "--top", min=1, help="layers, kernels: how many bars [default: 25 layers, 20 kernels]; hist: how many "
                             "kernels get a histogram of their own besides all kernels' [default: 5].",
        show_default=False)] = None,
    depth: DepthOpt = 0,
    merge_repeats: MergeRepeatsOpt = False,
    recipe_name: Annotated[Optional[str], typer.Option(
        "--recipe", help="pace: nvtx_pace (default), nvtx_gpu_proj_pace or cuda_gpu_kern_pace; util-map: "
                         "cuda_gpu_time_util_map (default) or nccl_gpu_time_util_map.", show_default=False)] = None,
    range_name: NameOpt = None,
    bins: BinsOpt = None,
    cumulative: CumulativeOpt = False,
    disable_alignment: AlignOpt = False,
    filter_nvtx: FilterNvtxOpt = None,
    filter_projected_nvtx: FilterProjectedOpt = None,
    filter_time: FilterTimeOpt = None,
    start: StartOpt = None,
    end: EndOpt = None,
    src: Source = SOURCE,
) -> None:
    """Draw a timeline, per-layer bars or the top kernels of an export, or the picture of one of NVIDIA's recipes,
    into a PNG, SVG or PDF file.

    With several exports, timeline, layers and kernels write one file per export: -o out.png writes
    out_<export>.png for each; pace, hist and util-map draw every export in one picture, a rank each (NVIDIA's
    ranks: by report name), with the options of `nsysql recipe`."""
    from nsysql.answers import multi
    from nsysql.errors import NsysqlError
    from nsysql.present import plot as plots
    if kind in RECIPE_KINDS:
        from nsysql.answers import recipes
        with src.errors():
            if given := [f for f, v in (("--start-ms", start_ms), ("--end-ms", end_ms), ("--step", step),
                                        ("--pid", pid), ("--op-markers", op_markers or None),
                                        ("--critical-path", critical_path or None), ("--depth", depth or None),
                                        ("--merge-repeats", merge_repeats or None)) if v is not None]:
                raise NsysqlError(f"{', '.join(given)} {'applies' if len(given) == 1 else 'apply'} to `plot "
                                  "timeline`, `layers` or `kernels`, not to the recipe pictures")
            if kind is not Kind.hist and top is not None:
                raise NsysqlError(f"--top applies to `plot layers`, `kernels` and `hist`, not to `plot {kind.value}`")
            name = recipe_name or RECIPE_KINDS[kind][0]
            if name not in RECIPE_KINDS[kind]:
                raise NsysqlError(f"--recipe {name}: `plot {kind.value}` draws {' or '.join(RECIPE_KINDS[kind])}")
            options = recipes.Options(name=range_name, bins=bins, cumulative=cumulative,
                                      disable_alignment=disable_alignment, filter_nvtx=filter_nvtx,
                                      filter_projected_nvtx=filter_projected_nvtx, filter_time=filter_time,
                                      start=start, end=end)
            recipes.check(recipes.recipe(name), options)
            plots.check_output(output)
            paths = multi.expand(exports)
            result = recipes.run(name, paths, multi.labels(paths), src.open, options)
            typer.echo(f"wrote {draw_recipe(result, output, top)}", err=True)
        return
    with src.errors():
        recipe_only = {"--recipe": recipe_name, "--name": range_name, "--bins": bins, "--cumulative": cumulative or None,
                       "--disable-alignment": disable_alignment or None, "--filter-nvtx": filter_nvtx,
                       "--filter-projected-nvtx": filter_projected_nvtx, "--filter-time": filter_time,
                       "--start": start, "--end": end}
        if wrong := [f for f, v in recipe_only.items() if v is not None]:
            raise NsysqlError(f"{', '.join(wrong)} {'applies' if len(wrong) == 1 else 'apply'} only to the recipe "
                              "pictures (`plot pace`, `hist`, `util-map`)")
        timeline_only = {"--start-ms": start_ms, "--end-ms": end_ms, "--step": step, "--pid": pid,
                         "--op-markers": op_markers or None, "--critical-path": critical_path or None}
        given = [name for name, value in timeline_only.items() if value is not None]
        if kind is not Kind.timeline and given:
            verb = "applies" if len(given) == 1 else "apply"
            raise NsysqlError(f"{', '.join(given)} {verb} only to `plot timeline`")
        if kind is not Kind.layers and (depth or merge_repeats):
            raise NsysqlError("--depth and --merge-repeats only apply to `plot layers`")
        if kind is Kind.timeline and top is not None:
            raise NsysqlError("--top applies to `plot layers` and `plot kernels`")
        plots.check_output(output)
        paths = multi.expand(exports)
        targets = [output] if len(paths) == 1 else per_export_files(output, paths)
        for path, target in zip(paths, targets):
            with src.open(path) as ex:
                if kind is Kind.timeline:
                    written = plots.timeline(ex, target, start_ms=start_ms, end_ms=end_ms, step=step, pid=pid,
                                             op_markers=op_markers, critical_path=critical_path)
                elif kind is Kind.layers:
                    written = plots.layers(ex, target, top=top or 25, depth=depth, merge_repeats=merge_repeats)
                else:
                    written = plots.kernels(ex, target, top=top or 20)
            typer.echo(f"wrote {written}", err=True)


def draw_recipe(result, output: Path, top: int | None) -> Path:
    """The picture of a recipe's result (nsysql/present/recipe_plot.py), titled with the recipe and its exports."""
    from nsysql.answers.recipes import PACE, UTIL, util_long
    from nsysql.present import recipe_plot
    r, o = result.recipe, result.options
    who = result.files[0] if len(result.files) == 1 else f"{len(result.files)} ranks"
    if r.kind == PACE:
        people, _ = result.people()
        return recipe_plot.pace(people, result.stats, output, labels=result.files,
                                title=f"{who}: {r.name} --name {o.name}, each iteration's duration and delta")
    if r.kind == UTIL:
        what = "NCCL and compute kernels" if r.name.startswith("nccl") else "kernels"
        cumulative = ", cumulative" if o.cumulative else ""
        return recipe_plot.util_map(util_long(result.rows), output, bin_size=result.bin_size or 1,
                                    title=f"{who}: GPU time utilization of {what}{cumulative} ({r.name})")
    return recipe_plot.hist(result.rows, output, top=top or 5, title=f"{who}: CUDA kernel durations ({r.name})")


def per_export_files(output: Path, paths: list[Path]) -> list[Path]:
    """out.png -> out_<label>.png for each export; labels made safe for a file name (parent/file -> parent_file)."""
    import re

    from nsysql.answers import multi
    from nsysql.errors import NsysqlError
    safe = [re.sub(r"[^A-Za-z0-9._-]", "_", label) for label in multi.labels(paths)]
    if len(set(safe)) < len(safe):
        raise NsysqlError("two exports would write the same image file; rename one of them")
    return [output.with_name(f"{output.stem}_{label}{output.suffix}") for label in safe]


def register(app: typer.Typer) -> None:
    add_commands(app, plot=plot)
