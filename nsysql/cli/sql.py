"""`nsysql sql EXPORT... "SELECT ..."`: ad-hoc, read-only SQL over the normalized tables and report views."""
from __future__ import annotations

from typing import Annotated, Optional

import typer

from nsysql.cli.common import OUTPUT, SOURCE, ExportsArg, Output, Source, add_commands

QueryArg = Annotated[str, typer.Argument(
    help="One SELECT over the normalized tables (kernel, runtime, nvtx_range, gpu_op, ...) and the report/analysis "
         "views (nvtx_gpu_proj_sum, ...); use $name for values given with -p.", show_default=False)]
ParamOpt = Annotated[Optional[list[str]], typer.Option(
    "-p", "--param", help="Bind $name: -p name=value (an int if it parses, else a float, else text). Repeatable.",
    show_default=False)]


def sql(exports: ExportsArg, query: QueryArg, out: Output = OUTPUT, param: ParamOpt = None,
        src: Source = SOURCE) -> None:
    """Run ad-hoc SQL (read-only) against an export's normalized tables and the report/analysis views.

    With several exports, the statement runs on each export on its own (ids and joins stay within one
    export) and the rows are concatenated after `export` and `rank` columns; exports giving no rows are
    named on stderr.

    Table output shows the first 40 rows (-f csv or parquet for all) and, when the columns do not fit, hides
    the last ones (--wide shows them); numbers keep their values (ns stay ns), grouped in thousands except
    ids. csv, json and parquet print every value exactly."""
    from nsysql.cli.several import gather_nonempty
    from nsysql.present.render import TABLE_ROWS
    from nsysql.query import adhoc
    with src.errors():
        params = adhoc.parse_params(param or [])
        df = gather_nonempty(exports, lambda ex: adhoc.run(ex, query, params), src.cache_dir, src.no_cache, step_range=src.step_range,
                             missing="no rows")
        out.emit(df, title=None, max_rows=TABLE_ROWS,
                 optional=[c for c in reversed(df.columns[1:]) if c not in ("export", "rank")],
                 more_hint="add LIMIT, or -f csv / -f parquet -o FILE for all")


def register(app: typer.Typer) -> None:
    add_commands(app, sql=sql)
