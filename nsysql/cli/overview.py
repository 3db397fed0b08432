"""``nsysql overview EXPORT``: the steady-state overview, the first part of `summarize`."""
from __future__ import annotations

from typing import Annotated

import typer

from nsysql.cli.common import SOURCE, ExportsArg, FormatOpt, OutputOpt, Source, WideOpt, add_commands
from nsysql.core.formats import Format
from nsysql.errors import NsysqlError


def overview(
    exports: ExportsArg,
    fmt: FormatOpt = Format.table,
    top: Annotated[int, typer.Option("--top", min=1, help="Rows in each top-N table.")] = 5,
    output: OutputOpt = None,
    wide: WideOpt = False,
    src: Source = SOURCE,
) -> None:
    """The steady state at a glance: which steps are analysed (warm-up left out), step time and its breakdown
    (Kernel, Memcpy, Memset, CUDA Runtime, DataLoader, CPU Exec, Other), GPU utilization, estimated SM efficiency
    and achieved occupancy, tensor-core share, top operators, kernels and CUDA API calls.

    `-f json` gives summarize's `overview` object; `-f csv`/`parquet` one row per analysed step with its
    breakdown in exact nanoseconds. Several exports of one job (one per rank): the overview of the whole job.
    """
    from nsysql.answers import job_views, summary
    from nsysql.present.render import emit, table_width, use_color, write_text
    from nsysql.sql import catalog
    with src.errors():
        with src.job(exports) as (opened, title):
            ex = opened[0]
            ov = ex.overview() if title is None else job_views.overview(opened)
            if fmt in (Format.csv, Format.parquet):
                names = ov.windows.select("step", "pid", "name")  # (pid, step) names a step: numbered per process
                frame = (names.join(ov.breakdown, on=["step", "pid"], how="inner") if ov.breakdown.height
                         else ov.breakdown)
                emit(frame, fmt, columns=catalog.get("analysis.step_breakdown").columns, output=output)
                return
            if fmt is Format.json:
                import json
                text = json.dumps(ov.to_json(top), indent=1, default=str) + "\n"
            else:
                facts = ex.run("analysis.capture_facts").row(0, named=True) if title is None else job_views.capture(opened)
                result = summary.Summary(ex, facts, ov, None, title=title)
                if fmt is Format.markdown:
                    text = summary.render_markdown(result, top)
                else:
                    text = summary.render_text(result, width=table_width(output), color=use_color(output), top=top,
                                               wide=wide)
        if not text.strip():
            raise NsysqlError("nothing to show")
        write_text(text, output)


def register(app: typer.Typer) -> None:
    add_commands(app, overview=overview)
