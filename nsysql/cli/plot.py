"""``nsysql plot timeline|layers|kernels EXPORT... -o FILE.png|.svg``: pictures of an export (one per export)."""
from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from nsysql.cli.common import SOURCE, DepthOpt, ExportFilesArg, MergeRepeatsOpt, Source, add_commands


class Kind(str, Enum):
    timeline = "timeline"
    layers = "layers"
    kernels = "kernels"


def plot(
    kind: Annotated[Kind, typer.Argument(help="timeline: NVTX ranges per thread above GPU ops per stream, "
                                              "coloured by direction; layers: forward/backward/optimizer/"
                                              "communication GPU time per layer; "
                                              "kernels: the kernels with the most GPU time.", show_default=False)],
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
        "--top", min=1, help="layers, kernels: how many bars [default: 25 layers, 20 kernels].",
        show_default=False)] = None,
    depth: DepthOpt = 0,
    merge_repeats: MergeRepeatsOpt = False,
    src: Source = SOURCE,
) -> None:
    """Draw a timeline, per-layer bars or the top kernels of an export into a PNG, SVG or PDF file.

    With several exports, one file per export: -o out.png writes out_<export>.png for each."""
    from nsysql.answers import multi
    from nsysql.errors import NsysqlError
    from nsysql.present import plot as plots
    with src.errors():
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
