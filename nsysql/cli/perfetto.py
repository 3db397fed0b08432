"""``nsysql perfetto EXPORT... -o trace.json.gz``: the analysed steps as a Chrome trace-event file (Perfetto UI)."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from nsysql.cli.common import SOURCE, ExportsArg, Source, add_commands

StepsOpt = Annotated[Optional[str], typer.Option(
    "--steps", help="Only these steps, e.g. 3-5 or 4 (numbered per process, as `nsysql steps` does) "
                    "[default: the analysed steps, not the warm-up ones].", show_default=False)]
WindowOpt = Annotated[Optional[str], typer.Option(
    "--window", help="Only this window, START-END in ms since the capture's first event, e.g. 120-180.",
    show_default=False)]


def perfetto(
    exports: ExportsArg,
    output: Annotated[Path, typer.Option(
        "-o", "--output", help="Trace file, .json or .json.gz (ui.perfetto.dev and chrome://tracing open both).",
        show_default=False)],
    steps: StepsOpt = None,
    window: WindowOpt = None,
    src: Source = SOURCE,
) -> None:
    """Write the analysed steps as Chrome trace-event JSON for the Perfetto UI or chrome://tracing.

    A track per thread (NVTX ranges, CUDA API calls) and per GPU stream (kernels, copies, memsets, CUDA graphs),
    an arrow from each launching call to its GPU op, args with layer, direction, op and seq, the steps, and the
    findings as instant events. Several exports of one job (one per rank): side by side on one clock."""
    from nsysql.answers import perfetto as trace
    from nsysql.answers import tracedata
    with src.errors():
        with src.job(exports) as (opened, title):
            chosen = tracedata.choose(opened, steps=steps, window=window)
            findings = _findings(opened)
            from nsysql.answers import multi
            names = multi.labels(multi.expand(exports))
            doc = trace.build(opened, names, chosen, findings)
            written = trace.write(doc, output)
        typer.echo(f"wrote {written}: {len(doc['traceEvents']):,} events, {chosen.what}\n"
                   "open it in ui.perfetto.dev or chrome://tracing", err=True)


def _findings(opened: list):
    from nsysql.answers import job_views
    return opened[0].findings() if len(opened) == 1 else job_views.findings(opened)


def register(app: typer.Typer) -> None:
    add_commands(app, perfetto=perfetto)
