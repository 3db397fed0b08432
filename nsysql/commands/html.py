"""``nsysql html EXPORT... -o report.html``: summarize's answer as one self-contained page."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .common import SOURCE, ExportsArg, Source, add_commands


def html(
    exports: ExportsArg,
    output: Annotated[Path, typer.Option("-o", "--output", help="The page to write (.html).", show_default=False)],
    src: Source = SOURCE,
) -> None:
    """Write summarize's answer as one self-contained HTML page: charts, sortable tables, findings with their
    evidence and a zoomable timeline of the median step. It opens from a file with no network.

    Several exports of one job (one per rank): one page for the job, with its ranks."""
    from .. import html_report
    with src.errors():
        with src.job(exports) as (opened, title):
            written = html_report.write(opened, output, title=title)
        typer.echo(f"wrote {written}", err=True)


def register(app: typer.Typer) -> None:
    add_commands(app, html=html)
