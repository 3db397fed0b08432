"""``nsysql html EXPORT... -o report.html``: summarize's answer as one self-contained page."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from nsysql.cli.common import SOURCE, ExportsArg, Source, add_commands


def html(
    exports: ExportsArg,
    output: Annotated[Path, typer.Option("-o", "--output", help="The page to write (.html).", show_default=False)],
    src: Source = SOURCE,
) -> None:
    """Write summarize's answer as one self-contained HTML page: charts, sortable tables, findings with their
    evidence and a zoomable timeline of the median step. It opens from a file with no network.

    Several exports of one job (one per rank): one page for the job, with its ranks."""
    from nsysql.answers import html_report
    with src.errors():
        with src.job(exports) as (opened, title):
            written = html_report.write(opened, output, title=title)
        typer.echo(f"wrote {written}", err=True)


def open_report(exports: list[Path], src: Source) -> Path:
    """`summarize --open`: the page in a temporary file (kept: the browser reads it after this process ends),
    opened in the browser where `webbrowser` finds one; the path printed either way."""
    import tempfile
    import webbrowser

    from nsysql.answers import html_report
    with src.errors():
        with src.job(exports) as (opened, title):
            fd, name = tempfile.mkstemp(prefix="nsysql-report-", suffix=".html")
            import os
            os.close(fd)
            written = html_report.write(opened, name, title=title)
    typer.echo(str(written))
    try:
        shown = webbrowser.open(written.resolve().as_uri())
    except webbrowser.Error:
        shown = False
    if not shown:
        typer.echo("note: no browser found here; open the file above in one", err=True)
    return written


def register(app: typer.Typer) -> None:
    add_commands(app, html=html)
