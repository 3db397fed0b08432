"""The `nsysql` command line: parse arguments, call the library, render. Nothing else."""
from __future__ import annotations

import os
import shutil
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Optional

import typer

from . import catalog
from .errors import NsysqlError
from .formats import Format

app = typer.Typer(
    name="nsysql",
    help="Exact, fast answers about where GPU time went in an Nsight Systems SQLite export.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

ExportArg = Annotated[Path, typer.Argument(help="An nsys SQLite export (nsys export --type sqlite REPORT.nsys-rep).",
                                           show_default=False)]
CacheDirOpt = Annotated[Optional[Path], typer.Option(
    "--cache-dir", help="Where normalized exports are cached [default: $NSYSQL_CACHE_DIR or ~/.cache/nsysql].",
    show_default=False)]
NoCacheOpt = Annotated[bool, typer.Option("--no-cache", help="Normalize into a temporary file and discard it.")]
OutputOpt = Annotated[Optional[Path], typer.Option("-o", "--output", help="Write to this file instead of stdout.",
                                                   show_default=False)]
DebugOpt = Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")]


@contextmanager
def user_errors(debug: bool):
    """Turn nsysql errors into one line on stderr and exit code 1 (tracebacks only with --debug)."""
    try:
        yield
    except NsysqlError as exc:
        if debug or os.environ.get("NSYSQL_DEBUG"):
            raise
        typer.echo(f"Error: {exc}", err=True)
        raise typer.Exit(1) from None
    except OSError as exc:  # e.g. -o into a missing or read-only directory
        if debug or os.environ.get("NSYSQL_DEBUG"):
            raise
        where = f"{exc.filename}: " if exc.filename else ""
        typer.echo(f"Error: {where}{exc.strerror or exc}; check the path and its permissions", err=True)
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        raise typer.Exit(130) from None


def _open(export: Path, cache_dir: Optional[Path], no_cache: bool):
    from . import open as open_export
    return open_export(export, cache_dir=cache_dir, use_cache=not no_cache)


@app.command("reports")
def list_reports() -> None:
    """List the reports that reproduce `nsys stats` exactly."""
    for q in catalog.group("reports"):
        typer.echo(f"{q.name:24} v{q.version}  {q.purpose}")


@app.command("report")
def report(
    name: Annotated[str, typer.Argument(help="Report name; `nsysql reports` lists them.", show_default=False)],
    export: ExportArg,
    fmt: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format.table,
    output: OutputOpt = None,
    cache_dir: CacheDirOpt = None,
    no_cache: NoCacheOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Run one report; `--format csv` is identical to `nsys stats -r NAME -f csv`."""
    from .render import emit
    with user_errors(debug):
        if f"reports.{name}" not in catalog.all_queries():
            raise NsysqlError(f"no report named {name!r}; `nsysql reports` lists them")
        with _open(export, cache_dir, no_cache) as ex:
            df = ex.report(name)
            q = catalog.get(f"reports.{name}")
            emit(df, fmt, decimals={c.name: c.decimals for c in q.columns if c.decimals is not None},
                 output=output, title=name)


@app.command("summarize")
def summarize(
    export: ExportArg,
    fmt: Annotated[Format, typer.Option("--format", "-f", help="table, markdown or json.")] = Format.table,
    top: Annotated[int, typer.Option("--top", min=1, help="Rows in each top-N section.")] = 10,
    output: OutputOpt = None,
    cache_dir: CacheDirOpt = None,
    no_cache: NoCacheOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Where the GPU time went: busy vs wall, top ranges and kernels, launch overhead, copies, coverage."""
    from . import summary
    with user_errors(debug):
        if fmt not in (Format.table, Format.markdown, Format.json):
            raise NsysqlError(f"summarize prints table, markdown or json, not {fmt.value}")
        with _open(export, cache_dir, no_cache) as ex:
            sections = summary.build(ex, top=top)
            tty = output is None and sys.stdout.isatty()
            width = shutil.get_terminal_size().columns if tty else 200
            text = summary.render(ex, sections, fmt, color=tty, width=width)
        if output is None:
            sys.stdout.write(text)
        else:
            output.write_text(text, encoding="utf-8")


def _register_capture() -> None:
    try:
        from .commands.capture import capture
    except ImportError:  # the capture command module is optional in a trimmed install
        return
    app.command("capture", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})(capture)


_register_capture()


def main() -> None:
    app()


if __name__ == "__main__":
    main()
