"""``nsysql diff A B [--by range|kernel|layer] [--match exact|base] [--fail-above PCT [--metric M]]``: two exports
side by side; with --fail-above, a regression gate (nsysql/answers/gate.py, docs/ci.md): the verdict first, exit 3 on
a regression."""
from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from nsysql.cli.common import OUTPUT, SOURCE, Output, Source, add_commands
from nsysql.errors import NsysqlError


class By(str, Enum):
    range = "range"
    kernel = "kernel"
    layer = "layer"


class Match(str, Enum):
    exact = "exact"
    base = "base"


ExportA = Annotated[Path, typer.Argument(help="Baseline export (A).", show_default=False)]
ExportB = Annotated[Path, typer.Argument(help="Export to compare with it (B).", show_default=False)]


def diff(
    export_a: ExportA,
    export_b: ExportB,
    by: Annotated[Optional[By], typer.Option(
        "--by", help="range: NVTX range paths (wall time); kernel: kernel names (GPU time); layer: attributed layers "
                     "(GPU time) [default: range; with --fail-above, kernel where an export has no NVTX ranges].",
        show_default=False)] = None,
    match: Annotated[Match, typer.Option("--match", help="Kernels: exact full names, or base names (GEMMs of any "
                                                         "dtype/tile as gemm*, dtype and tile tokens dropped).")]
    = Match.exact,
    top: Annotated[Optional[int], typer.Option("--top", min=1, help="Only the N largest changes.",
                                               show_default=False)] = None,
    fail_above: Annotated[Optional[str], typer.Option(
        "--fail-above", metavar="PCT",
        help="Gate: exit 3 when B is slower than A by more than PCT (5%) on the metric, judged on its 95 % "
             "interval from the steps' spread; the verdict (regression, pass or inconclusive) is the first line "
             "(-f json: its keys; csv, parquet: on stderr).", show_default=False)] = None,
    metric: Annotated[Optional[str], typer.Option(
        "--metric", metavar="METRIC",
        help="What --fail-above judges: step (the mean step time), kernel:GLOB (kernel time per step of the "
             "kernels whose full name matches), layer:GLOB (of the layers whose path matches), finding:RULE (the "
             "rule's recoverable time per step; no interval) [default: step].", show_default=False)] = None,
    out: Output = OUTPUT,
    src: Source = SOURCE,
) -> None:
    """Compare two exports: time per range, kernel or layer in A and B, and B - A, largest change first.

    Table output shows the 40 largest changes (--top N shows N); table and markdown show times in ms or µs, csv,
    json and parquet the exact nanoseconds.

    With --fail-above, a regression gate for CI (A the baseline, B the new run): exit 3 when the 95 % interval of the
    change lies above the threshold, 0 when it lies at or below it or holds it (inconclusive: the steps vary too
    much to tell, or a side has fewer than 2 steps); the interval is Welch's t-interval for the difference of the
    per-step means (docs/ci.md)."""
    from nsysql.present.render import TABLE_ROWS
    from nsysql.sql import catalog
    with src.errors():
        if metric is not None and fail_above is None:
            raise NsysqlError("--metric says what --fail-above judges; add --fail-above PCT, e.g. --fail-above 5%")
        if fail_above is not None:  # a bad threshold or metric fails before any export is opened
            from nsysql.answers import gate
            gate.parse_threshold(fail_above)
            gate.parse_metric(metric or "step")
        verdict = None
        with src.open(export_a) as a, src.open(export_b) as b:
            if fail_above is not None:
                verdict = a.gate(b, metric=metric or "step", fail_above=fail_above)
            if by is None:  # the gate's table must not fail where its verdict does not: no NVTX, by kernel
                by = By.kernel if verdict is not None and not (a.has("nvtx_range") and b.has("nvtx_range")) else By.range
            df = a.diff(b, by=by.value, match=match.value)
        if top is not None:
            df = df.head(top)
        query = catalog.get("analysis._diff")
        if verdict is not None:
            _emit_gated(df, verdict, out, query, _title(export_a, export_b, by, match), top)
        else:
            out.emit(df, query=query, title=_title(export_a, export_b, by, match),
                     max_rows=TABLE_ROWS if top is None else None,
                     more_hint="--top N, or -f csv / -f parquet -o FILE for all")
    if verdict is not None and verdict["exit_code"]:
        raise typer.Exit(verdict["exit_code"])


def _title(export_a: Path, export_b: Path, by: By, match: Match) -> str:
    return f"{export_a} (A) vs {export_b} (B) by {by.value}" + (" base name" if match is Match.base else "")


def _emit_gated(df, verdict: dict, out: Output, query, title: str, top: Optional[int]) -> None:
    """The diff with the verdict first: table and markdown, its line and a line of detail above the table; json, an
    object of the verdict's keys with the diff's rows under `rows`; csv and parquet (data only): on stderr."""
    import json

    from nsysql.answers.gate import detail_line
    from nsysql.core.formats import Format
    from nsysql.present.render import TABLE_ROWS, column_meta, header_decimals, table_width, to_json, write_text
    detail = detail_line(verdict)
    if out.fmt in (Format.csv, Format.parquet):
        for line in [verdict["line"], *_wrapped(detail, table_width(errors=sys.stderr, stream=sys.stderr))]:
            typer.echo(line, err=True)
        out.emit(df, query=query)
        return
    if out.fmt is Format.json:
        rows = json.loads(to_json(df, header_decimals(column_meta(query.columns))))
        write_text(json.dumps({**verdict, "rows": rows}, indent=1) + "\n", out.output)
        return
    head = "\n".join([verdict["line"], *_wrapped(detail, table_width(out.output))]) + "\n\n"
    if out.output is None:
        write_text(head)
    out.emit(df, query=query, title=title, max_rows=TABLE_ROWS if top is None else None,
             more_hint="--top N, or -f csv / -f parquet -o FILE for all")
    if out.output is not None:  # the file holds the table only: the verdict goes first
        write_text(head + Path(out.output).read_text(encoding="utf-8"), out.output)


def _wrapped(text: str, width: int) -> list[str]:
    """`text` wrapped at `width`, each line indented two spaces, a number never parted from its unit."""
    import re
    import textwrap
    glued = re.sub(r"(\d) (ns|µs|ms|s|%)(?=\W|$)", "\\1\u00a0\\2", text)
    lines = textwrap.wrap(glued, max(width, 40), initial_indent="  ", subsequent_indent="  ", break_on_hyphens=False)
    return [line.replace("\u00a0", " ") for line in lines]


def register(app: typer.Typer) -> None:
    add_commands(app, diff=diff)
