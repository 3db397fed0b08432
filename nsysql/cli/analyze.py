"""``nsysql analyze RULE EXPORT...`` (NVIDIA's expert rules, as `nsys analyze -r RULE`) and ``nsysql rules``."""
from __future__ import annotations

from typing import Annotated, Optional

import typer

from nsysql.cli.common import OUTPUT, SOURCE, ExportsArg, Output, Source, TimeOrigins, add_commands
from nsysql.core.formats import Format

# The rules' options, by NVIDIA's names; each rule takes the ones its SQL header's params list (nsysql/sql/rules.py).
GapOpt = Annotated[Optional[int], typer.Option(
    "--gap", help="gpu_gaps: report GPU gaps longer than this many milliseconds (default 500).", show_default=False)]
ThresholdOpt = Annotated[Optional[int], typer.Option(
    "--threshold", help="gpu_time_util: report stretches where the GPU is in use less than this percentage of the "
                        "time (default 50).", show_default=False)]
ChunksOpt = Annotated[Optional[int], typer.Option(
    "--chunks", min=1, max=1000, help="gpu_time_util: equal-duration chunks each process and device's span is cut "
                                      "into, 1 to 1000 (default 30).", show_default=False)]
RowsOpt = Annotated[Optional[int], typer.Option(
    "--rows", help="Rows shown, as NVIDIA's rows=N: the first N by the rule's order; -1 for all (default 50).",
    show_default=False)]


def list_rules() -> None:
    """List the expert rules that reproduce `nsys analyze` exactly (each as `nsys analyze -r NAME` of Nsight
    Systems 2025.3), with their options besides --rows (every rule takes --rows, 50 by default)."""
    from nsysql.present.render import middle, table_width
    from nsysql.sql import catalog, rules
    width = table_width()
    for q in catalog.group("rules"):
        what = q.purpose.split(", identical to")[0].rstrip(".")
        opts = " ".join(f"--{o.name} {o.default}" for o in rules.options(q.name).values() if o.name != "rows")
        line = f"{q.name:20} v{q.version}  "
        typer.echo(line + middle(f"{what} [{opts}]" if opts else what, max(width - len(line), 20)))


def analyze(
    rule: Annotated[str, typer.Argument(help="Rule name; `nsysql rules` lists them.", show_default=False)],
    exports: ExportsArg,
    gap: GapOpt = None,
    threshold: ThresholdOpt = None,
    chunks: ChunksOpt = None,
    rows: RowsOpt = None,
    out: Output = OUTPUT,
    src: Source = SOURCE,
) -> None:
    """Run one of NVIDIA's expert rules; `--format csv` is identical to `nsys analyze -r RULE -f csv` (one
    export), options included (`--gap 200` as NVIDIA's `-r gpu_gaps:gap=200`). A rule that finds nothing prints
    nothing in csv, as NVIDIA does; an export without the data a rule needs is one line naming it.

    Table and markdown show durations in ms or µs and start times as ms since the capture's first event; csv, json and
    parquet keep NVIDIA's nanoseconds and headers."""
    from nsysql.sql import rules as rule_options
    with src.errors():
        given = {"gap": gap, "threshold": threshold, "chunks": chunks, "rows": rows}
        query = rule_options.query(rule)
        rule_options.params(rule, given)  # an option the rule does not take fails before any export is opened
        origins = TimeOrigins(out.for_people)
        df = src.gather(exports, origins.wrap(lambda ex: ex.analyze(rule, **given)))
        if df.height == 0 and out.fmt is Format.csv:  # NVIDIA writes nothing at all, not even the header
            if out.output is None:
                return
            out.output.write_text("", encoding="utf-8")
            return
        out.emit(df, query=query, title=rule, origin=origins.origin(exports))  # hints: the rule's header


def register(app: typer.Typer) -> None:
    add_commands(app, rules=list_rules, analyze=analyze)
