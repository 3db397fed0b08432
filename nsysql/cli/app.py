"""The `nsysql` command line: parse arguments, call the library, render. Nothing else."""
from __future__ import annotations

import importlib
import os
import re
import sys
import traceback
from pathlib import Path
from typing import Annotated, Optional

import typer
from typer.core import TyperGroup

from nsysql.answers.gate import REGRESSION_EXIT
from nsysql.cli.common import (
    OUTPUT,
    SOURCE,
    ExportFilesArg,
    ExportsArg,
    Output,
    OutputOpt,
    Source,
    TimeOrigins,
    add_commands,
)
from nsysql.cli.tables import add_declared
from nsysql.core import signals
from nsysql.core.formats import Format, TextFormat
from nsysql.errors import NsysqlError, cli_text
from nsysql.sql import catalog
from nsysql.store import inputs


class WholeCommandHelp(TyperGroup):
    """`--help`'s list of commands with each one's first sentence whole and wrapped, as click cuts it with `...` at
    the terminal's width."""

    def format_commands(self, ctx, formatter):
        rows = [(name, cmd.get_short_help_str(limit=1 << 16)) for name in self.list_commands(ctx)
                if (cmd := self.get_command(ctx, name)) is not None and not cmd.hidden]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


class GroupedCommandHelp(WholeCommandHelp):
    """`nsysql --help`: one line per command, grouped by what a user wants (nsysql/cli/index.py); each
    command's own --help says the rest."""

    def format_commands(self, ctx, formatter):
        from nsysql.cli.index import sections
        described = {name: cmd.get_short_help_str(limit=1 << 16) for name in self.list_commands(ctx)
                     if (cmd := self.get_command(ctx, name)) is not None and not cmd.hidden}
        groups = sections(described, formatter.width)
        longest = max((len(name) for _, rows in groups for name, _ in rows), default=0)
        for heading, rows in groups:  # one column of names across the groups, as git's
            with formatter.section(heading):
                formatter.write_dl([(name.ljust(longest), line) for name, line in rows])
        formatter.write_paragraph()
        formatter.write_text("`nsysql COMMAND --help` says what a command does, its options and its columns.")


class OneLineErrors(GroupedCommandHelp):
    """The CLI's one error boundary. Usage errors (a missing option, a bad choice, a value out of range) as one
    line and exit code 1, like every other nsysql error, instead of click's boxed usage text and exit code 2.
    Anything else a command raises is caught in `invoke`, before typer's own handling (which differs between
    typer versions): one `Error:` line and exit 1 (`--debug` or NSYSQL_DEBUG: the real traceback instead);
    Ctrl-C / SIGTERM / SIGHUP: one line and 128 + the signal; a closed stdout pipe: quiet, 141 (nsysql/core/signals.py)."""

    _debug = False

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):  # type: ignore[override]
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        words = sys.argv[1:] if args is None else list(args)
        self._debug = "--debug" in words or bool(os.environ.get("NSYSQL_DEBUG"))
        try:  # a file name that is not UTF-8 is printed back as the bytes it is, as ls and find do
            sys.stdout.reconfigure(errors="surrogateescape")  # type: ignore[union-attr]
        except (AttributeError, ValueError):
            pass
        with signals.handled():
            try:
                code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
            except (Exception, KeyboardInterrupt) as exc:  # usage errors, or raised outside a command
                kind = _click_kind(exc)
                ctx = getattr(exc, "ctx", None)
                if kind == "NoArgsIsHelpError":
                    typer.echo(ctx.get_help() if ctx else exc.format_message())  # type: ignore[union-attr]
                    sys.exit(0)
                option = getattr(exc, "option_name", None) or ""
                if kind == "UsageError" and option.startswith("-") and any(c.isspace() for c in option):
                    # SQL beginning with a `-- comment` (or any value starting with '-') reads as an option
                    typer.echo(f"Error: {option.split()[0]} … is a value, not an option; put -- before values "
                               "that start with '-', e.g. nsysql sql EXPORT -- \"-- note ...\"", err=True)
                    sys.exit(1)
                named = [w for w in words if option and w.startswith(option) and os.path.lexists(w)]
                if kind == "UsageError" and named:  # a file whose name starts with '-' reads as an option too
                    _say(f"Error: {inputs.text(named[0])} is a file, but reads as an option; write "
                         f"./{inputs.text(named[0])}, or put -- before it")
                    sys.exit(1)
                if kind == "UsageError":
                    where = ctx.command_path if ctx else "nsysql"
                    _say(f"Error: {exc.format_message().rstrip('.')}; "  # type: ignore[union-attr]
                         f"see `{where} --help`")
                    sys.exit(1)
                if kind == "ClickException":
                    _say(f"Error: {exc.format_message()}")  # type: ignore[union-attr]
                    sys.exit(1)
                sys.exit(self._fail(exc))
        sys.exit(code if isinstance(code, int) else 0)

    def invoke(self, ctx):
        try:
            result = super().invoke(ctx)
            sys.stdout.flush()  # a reader that went away shows up here at the latest
            return result
        except (typer.Exit, typer.Abort):
            raise  # typer's own control flow
        except (Exception, KeyboardInterrupt) as exc:
            if _click_kind(exc):
                raise  # a usage error: one line in main
            raise SystemExit(self._fail(exc)) from None

    def _fail(self, exc: BaseException) -> int:
        """Report `exc` on stderr and return the exit status."""
        if isinstance(exc, BrokenPipeError):
            signals.quiet_stdout()
            return signals.BROKEN_PIPE_EXIT
        if signals.received() or isinstance(exc, KeyboardInterrupt):
            _say(signals.message())
            return signals.exit_code(exc)
        if self._debug:
            traceback.print_exception(exc)
            return 1
        if isinstance(exc, NsysqlError):
            _say(f"Error: {cli_text(exc)}")  # arguments named as options: --force, not force=True
            return 1
        what = str(exc).splitlines()[0] if str(exc).strip() else type(exc).__name__
        _say(f"Error: {what} ({type(exc).__name__}); rerun with --debug for the traceback")
        return 1


def _click_kind(exc: BaseException) -> str | None:
    """Which of click's usage exceptions `exc` is, found by class name: typer vendors click in some versions and
    not in others, and its vendored module is private, so the boundary names no module of theirs."""
    names = [cls.__name__ for cls in type(exc).__mro__]
    for kind in ("NoArgsIsHelpError", "UsageError", "ClickException"):
        if kind in names and hasattr(exc, "format_message"):
            return kind
    return None


def _say(line: str) -> None:
    try:
        typer.echo(inputs.printable(line), err=True)  # one line, whatever a file name holds
    except OSError:  # stderr closed too: the exit status must say it
        pass


def _print_version(value: bool) -> None:
    if value:
        from nsysql import __version__
        typer.echo(f"nsysql {__version__}")
        raise typer.Exit()


def _options(version: Annotated[bool, typer.Option(
        "--version", callback=_print_version, is_eager=True, help="Print nsysql's version and exit.")] = False,
        cache_size: Annotated[Optional[str], typer.Option(
        "--cache-size", help="Keep the cache directory under this size, least recently used exports removed first "
                             "(500M, 10G, unlimited) [default: $NSYSQL_CACHE_SIZE or 10G].",
        show_default=False)] = None) -> None:
    """Exact, fast answers about where GPU time went in an Nsight Systems export (.nsys-rep, SQLite, Parquet or Arrow)."""
    from nsysql.store import hygiene
    if cache_size is not None:
        hygiene.parse_size(cache_size)  # a typo fails now, not after the analysis
    hygiene.size_override = cache_size


def list_reports() -> None:
    """List the reports that reproduce NVIDIA's exactly: each as `nsys stats -r NAME` of Nsight Systems 2025.3, or, marked
    [recipe], as the CSV of the multi-report recipe `nsys recipe NAME`."""
    from nsysql.present.render import middle, table_width
    width = table_width()
    for q in catalog.group("reports"):
        what = q.purpose.split(", identical to")[0].rstrip(".")  # identical to nsys stats -r NAME, or a recipe's CSV
        if "`nsys recipe " in q.purpose:
            what = "[recipe] " + what
        if q.args or catalog.valued_args(q):  # NVIDIA's report arguments, e.g. [:nvtx-name] [:base] [:mangled]
            what += "; args " + arg_usage(q)
        line = f"{q.name:24} v{q.version}  "
        typer.echo(line + middle(what, max(width - len(line), 20)))


def arg_usage(q: catalog.Query) -> str:
    """A report's arguments as NVIDIA's usage writes them: `[:nvtx-name][:base|:mangled]` (those that set the same
    $param exclude each other)."""
    groups: dict[tuple, list[str]] = {}
    for arg, sets in q.args.items():
        groups.setdefault(tuple(sorted(sets)), []).append(f":{arg}")
    return "".join(f"[{'|'.join(g)}]" for g in groups.values()) + "".join(f"[:{n}=N]" for n in catalog.valued_args(q))


# Report tables: the statistics hidden (first ones first) when the terminal is too narrow; --wide shows them.
_STATS = ("StdDev", "Min", "Max", "Med")
REPORT_TEXT_MIN = {"Name": 30, "Kernel Name": 30, "Range": 30, "NVTX Range": 24, "Operation": 30, "Event": 24}


def report_layout(name: str) -> tuple[list[str | tuple[str, ...]], list[list[str]]]:
    """(optional columns, unit groups) of a report's table: its spread statistics are optional (StdDev first,
    then Min, Max, Med), then the report's own (its header's `optional:`; a tuple goes together), and its time columns
    share one unit: totals one, per-instance statistics another."""
    q = catalog.get(f"reports.{name}")
    cols = [c.name for c in q.columns]
    own = q.optional
    listed = {n for o in own for n in ((o,) if isinstance(o, str) else o)}
    optional: list[str | tuple[str, ...]] = [c for stat in _STATS for c in cols
                                             if c.split(" (")[0].endswith(stat) and c not in listed]
    optional += list(own)
    timed = [c for c in cols if c.endswith("(ns)")]
    totals = [c for c in timed if c.startswith("Total")]
    return optional, [totals, [c for c in timed if c not in totals]]


def report(
    name: Annotated[str, typer.Argument(
        help="Report name, with NVIDIA's report arguments after it as in `nsys stats -r` (cuda_gpu_kern_sum:base, "
             "cuda_gpu_kern_sum:nvtx-name:mangled); `nsysql reports` lists them.", show_default=False)],
    exports: ExportsArg,
    out: Output = OUTPUT,
    src: Source = SOURCE,
) -> None:
    """Run one report; `--format csv` is identical to `nsys stats -r NAME[:arg...] -f csv` (one export), or for a
    recipe's report (nccl_gpu_overlap_trace) to the CSV `nsys recipe NAME --csv` writes (its rank_trace.csv).

    Table and markdown show the times in ms or µs (the unit under the column name; totals share one unit, the
    per-instance statistics another; a trace's start times as ms since the capture's first event) and hide the
    spread statistics (a trace's ids and launch geometry) when the terminal is narrow (--wide shows them); the table
    shows the first 40 rows and says how many more there are; csv, json and parquet keep every row, NVIDIA's
    nanoseconds and headers."""
    from nsysql.present.render import TABLE_ROWS
    with src.errors():
        q = catalog.report_query(name)  # NAME[:arg...], as `nsys stats -r`; a bad name or argument fails before any work
        catalog.report_params(q, catalog.split_report_spec(name)[1])
        origins = TimeOrigins(out.for_people and any(c.unit == "ns timestamp" for c in q.columns))
        df = src.gather(exports, origins.wrap(lambda ex: ex.report(name)))
        optional, groups = report_layout(q.name)
        notes = [q.meta["empty"]] if df.is_empty() and "empty" in q.meta else []  # what no rows means
        out.emit(df, columns=q.columns, title=name, optional=optional, unit_groups=groups, max_rows=TABLE_ROWS,
                 text_min={**REPORT_TEXT_MIN, **q.text_min}, origin=origins.origin(exports),
                 notes=notes)


def summarize(
    exports: ExportFilesArg,
    text_fmt: Annotated[TextFormat, typer.Option("--format", "-f", help="table, markdown or json.")] = TextFormat.table,
    top: Annotated[int, typer.Option("--top", min=1, help="Rows in each top-N table.")] = 5,
    full: Annotated[bool, typer.Option(
        "--full", help="Add the capture-wide detail tables (ranges, kernels, launch overhead, copies, gaps, steps, "
                       "layers, coverage) before the findings.")] = False,
    wide: Annotated[bool, typer.Option("--wide", help="Show every column, however wide the table gets.")] = False,
    deviation: Annotated[float, typer.Option(
        "--deviation", min=0, help="Several exports: flag those whose GPU busy time is more than this many "
                                   "percent from the median.")] = 10.0,
    output: OutputOpt = None,
    open_page: Annotated[bool, typer.Option(
        "--open", help="Write the answer as an HTML page (as `nsysql html`) to a temporary file, open it in the "
                       "browser where there is one, and print its path.")] = False,
    src: Source = SOURCE,
) -> None:
    """Where the time went in the steady-state steps (warm-up left out): step time and its breakdown, GPU
    utilization, SM efficiency, occupancy, tensor cores, top operators, kernels and CUDA calls, then the top
    findings with the time each could recover. Times in tables are durations; `--format json` keeps exact ns.
    Several exports of one job (one per rank, their capture sessions overlapping): the same summary as one export
    of the whole job, the ranks first. Several separate runs: per-export totals and deviating ones, per-range
    spread, slowest export per step."""
    from nsysql.answers import multi, summary
    from nsysql.present.render import table_width, use_color, write_text
    if open_page:
        from nsysql.cli.html import open_report
        open_report(exports, src)
        return
    with src.errors():
        fmt = Format(text_fmt.value)  # the formats summarize prints (its --help lists no other)
        paths = multi.expand(exports)
        width, color = table_width(output), use_color(output)
        if len(paths) == 1:
            with src.open(paths[0], answer_summary=False) as ex:  # summarize answers them itself
                result = summary.build_summary(ex, top=top, full=full)
                text = summary.render_summary(result, fmt, width=width, color=color, top=top, wide=wide)
        elif (job := multi.open_job(paths, src.open)) is not None:
            from nsysql.answers import job_views
            opened, names = job
            try:
                result = job_views.summary(opened, f"{len(names)} exports of one job ({', '.join(names)})")
                text = summary.render_summary(result, fmt, width=width, color=color, top=top, wide=wide)
            finally:
                for ex in opened:
                    ex.close()
        else:
            from nsysql.answers import summary_many
            sections = summary_many.build(paths, src.open, top=top,
                                          deviation_pct=deviation)
            title = f"{len(paths)} exports ({', '.join(multi.labels(paths))})"
            text = summary.render_sections(title, sections, fmt, color=color, width=width)
        write_text(text, output)


# Commands in their own modules: nsysql/cli/<name>.py, each with `register(app)`, in the order of `nsysql
# --help`; the table commands of the declared analyses (nsysql/sql/analyses.py) join after the command each follows.
# A module that fails to import is an error, not a command missing from --help; only `capture` is left out where
# the capture package (the optional torch side, shipped beside nsysql) is not installed.
_ORDER = (
    "overview",
    "capture",
    "attribution",
    "diff",
    "plot",
    "html",
    "perfetto",
    "db",
    "sql",
    "parquet",
    "findings",
    "comm",
    "cache",
    "analyze",
    "recipe",
)


def command_modules() -> tuple[str, ...]:
    """Every module of this folder with a `register(app)`: those of _ORDER in its order, then any other (a new
    command is one module; its line in `nsysql --help` comes from nsysql/cli/index.py, else under "More")."""
    here = Path(__file__).parent
    found = sorted(p.stem for p in here.glob("*.py") if re.search(r"^def register\(", p.read_text(encoding="utf-8"), re.M))
    return tuple(n for n in _ORDER if n in found) + tuple(n for n in found if n not in _ORDER)


COMMAND_MODULES = command_modules()


def register_commands(target: typer.Typer, names: tuple[str, ...] = COMMAND_MODULES) -> None:
    for name in names:
        try:
            module = importlib.import_module(f"{__package__}.{name}")
        except ModuleNotFoundError as exc:
            if name == "capture" and exc.name == "capture":
                continue
            raise
        module.register(target)
        add_declared(target)  # the declared analyses that follow its commands


def _plain_help(typer_app: typer.Typer) -> None:
    """Help as click's plain text, for the app and every sub-app (`cache`): rich markup would read a help text's
    `[default: …]` as a style tag and drop it, and would keep a docstring's line breaks mid-sentence; plain text
    shows every default and rewraps each paragraph to the terminal."""
    typer_app.rich_markup_mode = None
    for group in typer_app.registered_groups:
        if group.typer_instance is not None:
            group.typer_instance.info.cls = WholeCommandHelp
            _plain_help(group.typer_instance)


def make_app() -> typer.Typer:
    """The `nsysql` command line with every command: the built-in ones and the analyses declared so far."""
    made = typer.Typer(
        cls=OneLineErrors,
        name="nsysql",
        help="Exact, fast answers about where GPU time went in an Nsight Systems export (.nsys-rep, SQLite, Parquet or Arrow).",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,  # plain help: see _plain_help
    )
    made.callback()(_options)
    add_commands(made, reports=list_reports, report=report, summarize=summarize)
    register_commands(made)
    add_declared(made, rest=True)  # analyses declared outside nsysql, or after no command
    _plain_help(made)
    return made


app = make_app()


def main() -> None:
    ended_well = False
    try:
        app()
        ended_well = True
    except SystemExit as end:
        ended_well = end.code in (0, None, REGRESSION_EXIT)  # a gate's verdict is an answer, not a failure
        raise
    finally:
        if not ended_well:  # the answers ahead start when the process exits (nsysql/answers/ahead.py), not after a failure
            from nsysql.answers.ahead import forget_pending
            forget_pending()


if __name__ == "__main__":
    main()
