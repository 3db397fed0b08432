"""What every command shares: the EXPORT argument, the option groups, one-line errors, opening, registering.

Options that many commands take come in groups, as sqlite-utils' `output_options`: a parameter annotated with a
group (`out: Output`, `src: Source`) stands for the group's options at that place in the command's `--help`, and
the command receives them as one object:

    def steps(exports: ExportsArg, out: Output, src: Source) -> None:
        with src.errors():
            df = src.gather(exports, lambda ex: ex.steps())
            out.emit(df, columns=catalog.get("analysis.steps").columns, title="Steps")

and the module's `register(app)` adds it: `add_commands(app, steps=steps)`.
"""
from __future__ import annotations

import functools
import inspect
import os
from contextlib import contextmanager
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Annotated, Callable, Optional, get_type_hints

import typer

from nsysql.core import signals
from nsysql.core.formats import Format
from nsysql.errors import NsysqlError, cli_text
from nsysql.store import inputs

ExportArg = Annotated[Path, typer.Argument(
    help="An nsys report or export: .nsys-rep (exported once by your nsys), .sqlite, .sqlite.xz, or a parquetdir or "
         "arrowdir folder (nsys export --type parquetdir|arrowdir).", show_default=False)]
ExportsArg = Annotated[list[Path], typer.Argument(
    help="One or more nsys reports or exports (.nsys-rep, .sqlite, .sqlite.xz, parquetdir or arrowdir folders), or a "
         "quoted glob such as 'runs/rank*.sqlite'; with several, rows carry `export` and `rank` columns.",
    show_default=False)]
# the same, for a command whose output is no table of rows (summarize's text, plot's images)
ExportFilesArg = Annotated[list[Path], typer.Argument(
    help="One or more nsys reports or exports (.nsys-rep, .sqlite, .sqlite.xz, parquetdir or arrowdir folders), or a "
         "quoted glob such as 'runs/rank*.sqlite'.",
    show_default=False)]
CacheDirOpt = Annotated[Optional[Path], typer.Option(
    "--cache-dir", help="Where normalized exports are cached [default: $NSYSQL_CACHE_DIR or ~/.cache/nsysql].",
    show_default=False)]
NoCacheOpt = Annotated[bool, typer.Option("--no-cache", help="Normalize into a temporary file and discard it.")]
NsysOpt = Annotated[Optional[Path], typer.Option(
    "--nsys", help="The nsys that exports a .nsys-rep [default: $NSYS, else nsys on PATH, else "
                   "/opt/nvidia/nsight-systems*/bin or /usr/local/cuda*/bin].", show_default=False)]
OutputOpt = Annotated[Optional[Path], typer.Option("-o", "--output", help="Write to this file instead of stdout.",
                                                   show_default=False)]
FormatOpt = Annotated[Format, typer.Option(
    "--format", "-f", help="Output format. table and markdown are for people: times in ms or µs (timestamps as ms "
                           "since the capture's first event, as `nsysql plot`), sizes in KB/MB/GB, long text shortened "
                           "with … (table); csv, json and parquet keep every value exact (the _ns columns hold "
                           "nanoseconds, timestamps on the export's own clock).")]
WideOpt = Annotated[bool, typer.Option(
    "--wide", help="Table output: show every column and all text, even wider than the terminal (by default a table "
                   "fits the terminal, or $COLUMNS, or 100 columns: long text is shortened and optional columns "
                   "hidden).")]
DebugOpt = Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")]
StepRangeOpt = Annotated[Optional[str], typer.Option(
    "--step-range", metavar="LEVEL",
    help="Take the instances of this NVTX range level as the steps, whatever nsysql would choose: a level of `nsysql "
         "steps --candidates` (`request/decode_step`) or its last part (`decode_step`); docs/steps.md.",
    show_default=False)]
DepthOpt = Annotated[int, typer.Option(  # layers and plot layers
    "--depth", min=0, help="Layer paths: keep their first N components (1 = forward_pass, ...; 0 = whole path).")]
MergeRepeatsOpt = Annotated[bool, typer.Option(
    "--merge-repeats", help="Layer paths: count numbered components together: layer_0, layer_1 ... -> layer_* "
                            "(also MLP_0, Embedding_12).")]


@contextmanager
def user_errors(debug: bool):
    """Turn nsysql errors into one line on stderr and exit code 1 (tracebacks only with --debug). Interrupts,
    a closed stdout pipe and anything unforeseen go on to the CLI's boundary (OneLineErrors in cli.py)."""
    try:
        yield
    except (BrokenPipeError, KeyboardInterrupt):
        raise
    except NsysqlError as exc:
        if debug or os.environ.get("NSYSQL_DEBUG") or signals.received():
            raise  # a signal DuckDB turned into an error (wrapped as NsysqlError) is still an interrupt
        typer.echo(inputs.printable(f"Error: {cli_text(exc)}"), err=True)  # one line, whatever a file name holds
        raise typer.Exit(1) from None
    except OSError as exc:  # e.g. -o into a missing or read-only directory
        if debug or os.environ.get("NSYSQL_DEBUG") or signals.received():
            raise
        where = f"{exc.filename}: " if exc.filename else ""
        line = f"Error: {where}{exc.strerror or exc}; check the path and its permissions"
        typer.echo(inputs.printable(line), err=True)
        raise typer.Exit(1) from None


def open_export(export: Path, cache_dir: Optional[Path], no_cache: bool, *, answer_summary: bool = True,
                step_range: Optional[str] = None):
    """Open an export for a command, through the library as any user does (`nsysql.open`, answering ahead as every
    command does); rows no profiler writes are named on stderr, one `warning:` line each.
    `answer_summary=False`: the command is `summarize`, which reads every table and computes its own answers."""
    import warnings

    import nsysql
    from nsysql.errors import NsysqlWarning

    def warn(line: str) -> None:
        typer.echo(inputs.printable(f"warning: {cli_text(line)}"), err=True)

    # summarize reads every normalized table: its first open builds them all at once, on every core
    with warnings.catch_warnings(record=True) as told:  # what the open said (a cache directory it could not write)
        warnings.simplefilter("always", NsysqlWarning)
        ex = nsysql.open(export, cache_dir=cache_dir, use_cache=not no_cache, build_all=not answer_summary,
                         answer_ahead=True, step_range=step_range)
    for w in told:
        if issubclass(w.category, NsysqlWarning):
            warn(str(w.message))
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    ex.on_notice = warn
    for line in ex.sanity():
        typer.echo(inputs.printable(f"warning: {inputs.text(export.name)}: {line}"), err=True)
    return ex


def gather(exports: list[Path], analysis, cache_dir: Optional[Path], no_cache: bool, step_range: Optional[str] = None):
    """Run `analysis(export)` on every export given (globs expanded); see nsysql.answers.multi.gather."""
    from nsysql.answers import multi
    return multi.gather(multi.expand(exports), analysis,
                        lambda p: open_export(p, cache_dir, no_cache, step_range=step_range))


class TimeOrigins:
    """Each export's first event (the time origin), recorded while an analysis runs over the exports, for render's `origin=`:
    tables and markdown show `ns timestamp` columns as ms since it. Looked up only when `wanted` (a format for
    people, and a table that has such columns).

        origins = TimeOrigins(out.for_people)
        df = src.gather(exports, origins.wrap(lambda ex: ex.steps()))
        out.emit(df, columns=header, origin=origins.origin(exports))
    """

    def __init__(self, wanted: bool = True):
        self.wanted = wanted
        self.by_path: dict = {}

    def wrap(self, analysis):
        def run(ex):
            if self.wanted:
                self.by_path[ex.path] = ex.time_origin()
            return analysis(ex)
        return run

    def origin(self, exports: list[Path]):
        """One export: its origin (int); several: {export label: origin}, as the `export` column names them."""
        if not self.wanted:
            return None
        from nsysql.answers import multi
        paths = multi.expand(exports)
        if len(paths) == 1:
            return self.by_path.get(paths[0])
        return {label: self.by_path.get(p) for p, label in zip(paths, multi.labels(paths))}


# -- option groups ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Output:
    """`-f/--format`, `-o/--output`, `--wide`: where and how a command writes its table."""
    fmt: FormatOpt = Format.table
    output: OutputOpt = None
    wide: WideOpt = False

    def emit(self, df, **how) -> None:
        """`df` in this format, to this file or stdout (nsysql.present.render.emit; `columns=` the result's header)."""
        from nsysql.present.render import emit
        emit(df, self.fmt, output=self.output, wide=self.wide, **how)

    @property
    def for_people(self) -> bool:
        from nsysql.present.render import human_format
        return human_format(self.fmt)


@dataclass(frozen=True)
class Source:
    """`--cache-dir`, `--no-cache`, `--nsys`, `--step-range`, `--debug`: how exports are opened and read, and how
    errors are shown."""
    cache_dir: CacheDirOpt = None
    no_cache: NoCacheOpt = False
    nsys: NsysOpt = None
    step_range: StepRangeOpt = None
    debug: DebugOpt = False

    def __post_init__(self) -> None:
        if self.nsys is not None:  # one command a process: the nsys that exports any .nsys-rep it is given
            from nsysql.store.nsys_rep import choose
            choose(self.nsys)

    def errors(self):
        return user_errors(self.debug)

    def open(self, export: Path, **how):
        return open_export(export, self.cache_dir, self.no_cache, step_range=self.step_range, **how)

    def gather(self, exports: list[Path], analysis):
        return gather(exports, analysis, self.cache_dir, self.no_cache, self.step_range)

    @contextmanager
    def job(self, exports: list[Path]):
        """One export, or the exports of one multi-rank job (nsysql/answers/job.py), opened: yields (exports, title), the
        title None for one export. Several exports that are not one job: one line saying so."""
        from nsysql.answers import multi
        from nsysql.errors import NsysqlError
        paths = multi.expand(exports)
        if len(paths) == 1:
            with self.open(paths[0]) as ex:
                yield [ex], None
            return
        job = multi.open_job(paths, self.open, strict=True)
        if job is None:
            raise NsysqlError("these exports are not the ranks of one job (each needs NCCL kernels, and their captures "
                              "must overlap in time); compare separate runs with `nsysql summarize A B` or `nsysql diff`")
        opened, names = job
        try:
            yield opened, f"{len(names)} exports of one job ({', '.join(names)})"
        finally:
            for ex in opened:
                ex.close()


@dataclass(frozen=True)
class CacheSource:
    """`--cache-dir`, `--debug`: the cache commands' (they open no export)."""
    cache_dir: CacheDirOpt = None
    debug: DebugOpt = False

    def errors(self):
        return user_errors(self.debug)


GROUPS = (Output, Source, CacheSource)
OUTPUT, SOURCE, CACHE_SOURCE = Output(), Source(), CacheSource()  # defaults, so that a group may follow defaults


def with_groups(command: Callable) -> Callable:
    """`command` as typer reads it: each parameter annotated with an option group replaced, at its place, by the
    group's options; called, the command gets the group object back (`out.fmt`, `src.debug`)."""
    hints = get_type_hints(command, include_extras=True)
    params: list[inspect.Parameter] = []
    groups: dict[str, type] = {}
    for p in inspect.signature(command).parameters.values():
        group = hints.get(p.name)
        if group in GROUPS:
            groups[p.name] = group
            inner = get_type_hints(group, include_extras=True)
            params += [inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, annotation=inner[f.name],
                                         default=f.default) for f in fields(group)]
        else:
            params.append(p.replace(annotation=hints.get(p.name, p.annotation), kind=inspect.Parameter.KEYWORD_ONLY))
    if not groups:
        return command

    @functools.wraps(command)
    def run(**given):
        for name, group in groups.items():
            given[name] = group(**{f.name: given.pop(f.name) for f in fields(group)})
        return command(**given)

    run.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    run.__annotations__ = {p.name: p.annotation for p in params}
    return run


def add_commands(app: typer.Typer, **commands: Callable) -> None:
    """The one way commands join the CLI: `add_commands(app, kernels=kernels, layers=layers)` (in this order)."""
    for name, command in commands.items():
        add_command(app, name, command)


def add_command(app: typer.Typer, name: str, command: Callable, **settings) -> None:
    """One command, with click settings (`context_settings=...`)."""
    app.command(name, **settings)(with_groups(command))
