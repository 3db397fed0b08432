"""``nsysql findings EXPORT``: what to fix first, each finding with the wall time it could recover at most."""
from __future__ import annotations

import json
from typing import Annotated, Optional

import polars as pl
import typer

from nsysql.cli.common import SOURCE, ExportsArg, OutputOpt, Source, add_commands
from nsysql.core.formats import Format


def findings(
    exports: ExportsArg,
    fmt: Annotated[Format, typer.Option(
        "--format", "-f", help="table (a numbered list that fits the terminal), markdown, json (the list of "
                               "findings, exact ns), csv or parquet (the frame).")] = Format.table,
    output: OutputOpt = None,
    top: Annotated[Optional[int], typer.Option("--top", min=1, help="Only the N findings that could recover the "
                                                                   "most time.", show_default=False)] = None,
    src: Source = SOURCE,
) -> None:
    """Findings on the steady-state steps (warm-up left out), largest first: pageable copies, synchronization
    inside steps, GPU idle and what the CPU did meanwhile, launch-bound threads, fp32 GEMMs without tensor cores,
    waiting for data, short kernels, outlier steps, exposed communication. Each says where, the evidence, what to
    do, and `up to`: an upper bound of the wall time it could recover, summed over the analysed steps (findings
    overlap: do not add them up). Thresholds and formulas: the headers of queries/findings/*.sql. Several exports
    of one job (one per rank): the findings of the whole job, one per rule, the straggler first."""
    from nsysql.answers import findings as rules
    from nsysql.answers import job_views
    from nsysql.errors import NsysqlError
    from nsysql.present.render import table_width, write_text
    with src.errors():
        with src.job(exports) as (opened, title):
            if title is None:
                df = rules.run_findings(opened[0], top=top)
                steps = rules.analysed_steps(opened[0])
            else:
                df = job_views.findings(opened)
                df = df.head(top) if top is not None else df
                steps = pl.concat([rules.analysed_steps(ex) for ex in opened], how="diagonal_relaxed")
            header = f"Findings on {title or exports[0]}. " + rules.describe_steps(steps)
        if fmt is Format.table:
            text = rules.render_text(df, table_width(output), header=header + " \"up to\": the most wall time a "
                                     "fix could save over these steps (findings overlap: do not add them up); "
                                     "\"what-if\": what the critical-path replay saves with the cause removed "
                                     "(docs/critical-path.md).")
        elif fmt is Format.markdown:
            text = rules.render_markdown(df, header=header)
        elif fmt is Format.json:
            text = json.dumps(rules.to_records(df), indent=1, ensure_ascii=False) + "\n"
        elif fmt is Format.csv:
            text = df.write_csv()
        else:  # parquet
            if output is None:
                raise NsysqlError("parquet output is binary; give a file with -o FILE.parquet")
            df.write_parquet(output)
            return
        write_text(text, output)


def register(app: typer.Typer) -> None:
    add_commands(app, findings=findings)
