"""``nsysql html EXPORT... -o report.html``: summarize's answer as one self-contained page."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from nsysql.cli.common import SOURCE, ExportsArg, Source, add_commands

StepsOpt = Annotated[str | None, typer.Option(
    "--steps", help="The steps whose timelines the page carries, e.g. 3,5-7, or all (numbered per process, as "
                    "`nsysql steps` does; all can make a large page) [default: the median analysed step, then the "
                    "other analysed ones while the page stays under 5 MB].", show_default=False)]


def html(
    exports: ExportsArg,
    output: Annotated[Path, typer.Option("-o", "--output", help="The page to write (.html).", show_default=False)],
    steps: StepsOpt = None,
    src: Source = SOURCE,
) -> None:
    """Write summarize's answer as one self-contained HTML page: charts, sortable tables, findings with their
    evidence and a zoomable timeline of the median step (others with --steps). It opens from a file with no network.

    Several exports of one job (one per rank): one page for the job, with its ranks."""
    from nsysql.answers import html_report
    with src.errors():
        with src.job(exports) as (opened, title):
            written, timeline = html_report.write_page(opened, output, title=title, steps=steps)
        typer.echo(written_line(written, timeline), err=True)
        size = written.stat().st_size
        from nsysql.answers import html_steps
        if size > html_steps.PAGE_LIMIT:
            typer.echo(f"warning: the page is {size / 1e6:.1f} MB: a browser may take long to open it; "
                       "--steps with fewer steps makes it smaller", err=True)


def written_line(path: Path, timeline: dict) -> str:
    """`wrote report.html (2.3 MB; timelines of steps 2-4 of 1-6)`: what the page carries, at a glance."""
    from nsysql.answers import html_steps
    size = path.stat().st_size
    carried = [s["step"] for s in timeline["steps"] if s.get("carried")]
    numbers = [s["step"] for s in timeline["steps"]]
    what = ""
    if carried and numbers and numbers != [0]:
        what = f"; timelines of step{'s' if len(carried) > 1 else ''} {html_steps.ranges(carried)}"
        if len(carried) < len(numbers):
            what += f" of {html_steps.ranges(numbers)}"
    return f"wrote {path} ({size / 1e6:.1f} MB{what})"


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
