"""The `nsysql` command line: parse arguments, call the library, render. Nothing else."""
from __future__ import annotations

import importlib
import shutil
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from typer.core import TyperGroup

try:  # newer typer vendors click as typer._click; older ones use click itself
    from typer._click import exceptions as click_errors
except ImportError:  # pragma: no cover
    from click import exceptions as click_errors

from . import catalog
from .commands.common import (CacheDirOpt, DebugOpt, ExportsArg, NoCacheOpt, OutputOpt, gather, open_export,
                              query_decimals, user_errors)
from .errors import NsysqlError
from .formats import Format

class OneLineErrors(TyperGroup):
    """Usage errors (a missing option, a bad choice, a value out of range) as one line and exit code 1,
    like every other nsysql error, instead of click's boxed usage text and exit code 2."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click_errors.NoArgsIsHelpError as exc:
            typer.echo(exc.ctx.get_help() if exc.ctx else exc.format_message())
            sys.exit(0)
        except click_errors.UsageError as exc:
            where = exc.ctx.command_path if exc.ctx else "nsysql"
            typer.echo(f"Error: {exc.format_message().rstrip('.')}; see `{where} --help`", err=True)
            sys.exit(1)
        except click_errors.ClickException as exc:
            typer.echo(f"Error: {exc.format_message()}", err=True)
            sys.exit(1)
        except click_errors.Abort:
            typer.echo("Aborted.", err=True)
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)


app = typer.Typer(
    cls=OneLineErrors,
    name="nsysql",
    help="Exact, fast answers about where GPU time went in an Nsight Systems SQLite export.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _open(export: Path, cache_dir: Optional[Path], no_cache: bool):
    return open_export(export, cache_dir, no_cache)


@app.command("reports")
def list_reports() -> None:
    """List the reports that reproduce `nsys stats` exactly."""
    for q in catalog.group("reports"):
        typer.echo(f"{q.name:24} v{q.version}  {q.purpose}")


@app.command("report")
def report(
    name: Annotated[str, typer.Argument(help="Report name; `nsysql reports` lists them.", show_default=False)],
    exports: ExportsArg,
    fmt: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format.table,
    output: OutputOpt = None,
    cache_dir: CacheDirOpt = None,
    no_cache: NoCacheOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Run one report; `--format csv` is identical to `nsys stats -r NAME -f csv` (one export)."""
    from .render import emit
    with user_errors(debug):
        if f"reports.{name}" not in catalog.all_queries():
            raise NsysqlError(f"no report named {name!r}; `nsysql reports` lists them")
        df = gather(exports, lambda ex: ex.report(name), cache_dir, no_cache)
        emit(df, fmt, decimals=query_decimals(f"reports.{name}"), output=output, title=name)


@app.command("summarize")
def summarize(
    exports: ExportsArg,
    fmt: Annotated[Format, typer.Option("--format", "-f", help="table, markdown or json.")] = Format.table,
    top: Annotated[int, typer.Option("--top", min=1, help="Rows in each top-N section.")] = 10,
    deviation: Annotated[float, typer.Option(
        "--deviation", min=0, help="Several exports: flag those whose GPU busy time is more than this many "
                                   "percent from the median.")] = 10.0,
    output: OutputOpt = None,
    cache_dir: CacheDirOpt = None,
    no_cache: NoCacheOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Where the GPU time went: busy vs wall, top ranges and kernels, launch overhead, copies, coverage.
    With several exports: per-export totals and deviating ones, per-range spread, slowest export per step."""
    from types import SimpleNamespace

    from . import multi, summary
    with user_errors(debug):
        if fmt not in (Format.table, Format.markdown, Format.json):
            raise NsysqlError(f"summarize prints table, markdown or json, not {fmt.value}")
        paths = multi.expand(exports)
        tty = output is None and sys.stdout.isatty()
        width = shutil.get_terminal_size().columns if tty else 200
        if len(paths) == 1:
            with _open(paths[0], cache_dir, no_cache) as ex:
                sections = summary.build(ex, top=top)
                text = summary.render(ex, sections, fmt, color=tty, width=width)
        else:
            from . import summary_many
            sections = summary_many.build(paths, lambda p: _open(p, cache_dir, no_cache), top=top,
                                          deviation_pct=deviation)
            title = SimpleNamespace(path=Path(f"{len(paths)} exports ({', '.join(multi.labels(paths))})"))
            text = summary.render(title, sections, fmt, color=tty, width=width)
        if output is None:
            sys.stdout.write(text)
        else:
            output.write_text(text, encoding="utf-8")


# Commands in their own modules: nsysql/commands/<name>.py, each with `register(app)`.
# A module that cannot be imported (e.g. capture where torch-only tools are trimmed) is skipped.
COMMAND_MODULES = (
    "capture",
    "attribution",
    "steps",
    "diff",
    "plot",
    "efficiency",
    "db",
    "sql",
    "parquet",
    "overhead",
    "memcpy",
    "gaps",
)


def _register_commands() -> None:
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"{__package__}.commands.{name}")
        except ImportError:
            continue
        module.register(app)


_register_commands()


def main() -> None:
    app()


if __name__ == "__main__":
    main()
