"""The table commands generated from the declared analyses (nsysql/sql/analyses.py): `nsysql steps`, `efficiency`,
`overhead`, `memcpy`, `gaps`, `utilization` and every analysis declared since. Each takes EXPORT..., its `--by`
choices and its parameters as declared, then the shared option groups; it gathers the rows of every export, and
writes them with the query's header."""
from __future__ import annotations

import inspect
from enum import Enum
from typing import Annotated, Any, Callable

import typer

from nsysql.cli.common import ExportsArg, Output, Source, TimeOrigins, add_commands
from nsysql.sql import analyses
from nsysql.sql.analyses import Analysis


def table_command(a: Analysis) -> Callable:
    """The command function of analysis `a`, with the signature typer reads its options from."""
    by_enum: Any = Enum(f"{a.name.title()}By", {c: c for c in a.choices}, type=str) if a.choices else None

    def command(exports, out: Output, src: Source, by=None, top=None, **values) -> None:
        from nsysql.cli.several import gather_nonempty
        from nsysql.present.render import TABLE_ROWS
        choice = by.value if by is not None else None
        with src.errors():
            a.check(**values)
            origins = TimeOrigins(a.timestamps and out.for_people)

            def per_export(ex):
                df = analyses.run(ex, a, choice, **values)
                if top is None:
                    return df
                if not a.top_by:
                    return df.head(top)
                first = df.select(list(a.top_by)).unique(maintain_order=True).head(top)
                return df.join(first, on=list(a.top_by), how="semi", maintain_order="left")

            if a.empty is None:
                df = src.gather(exports, origins.wrap(per_export))
            else:
                empty = a.empty
                df = gather_nonempty(exports, origins.wrap(per_export), src.cache_dir, src.no_cache, step_range=src.step_range,
                                     missing=empty.missing, single_error=lambda p: empty.single.format(export=p.name),
                                     none_error=empty.none)
            out.emit(df, columns=a.columns(choice, **values), title=a.caption(choice, **values),
                     optional=a.hidden_first(choice, **values), origin=origins.origin(exports),
                     max_rows=TABLE_ROWS if a.rows_capped and top is None else None, more_hint=a.more_hint,
                     unit_groups=a.unit_groups, text_min=a.text_min)

    params = [inspect.Parameter("exports", inspect.Parameter.KEYWORD_ONLY, annotation=ExportsArg)]
    if by_enum is not None:
        option = typer.Option("--by", help=a.by_help)
        params.append(inspect.Parameter("by", inspect.Parameter.KEYWORD_ONLY, annotation=Annotated[by_enum, option],
                                        default=by_enum(a.default_by)))
    for p in a.params:
        option = typer.Option(p.option, help=p.help, show_default=p.show_default, min=p.min)
        params.append(inspect.Parameter(p.name, inspect.Parameter.KEYWORD_ONLY, annotation=Annotated[p.type, option],
                                        default=a.default(p)))
    params += [inspect.Parameter("out", inspect.Parameter.KEYWORD_ONLY, annotation=Output),
               inspect.Parameter("src", inspect.Parameter.KEYWORD_ONLY, annotation=Source)]
    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in params}
    command.__doc__ = a.help
    command.__name__ = command.__qualname__ = a.name
    return command


def add_declared(app: typer.Typer, *, rest: bool = False) -> None:
    """Add the declared analyses whose `after` command `app` has by now, each right after it (in `nsysql --help`);
    `rest=True`: every declared analysis not yet added (one declared without `after`, or after a missing one)."""
    names = {info.name for info in app.registered_commands}
    while True:
        ready = [a for a in analyses.declared() if a.name not in names and (rest or a.after in names)]
        if not ready:
            return
        add_commands(app, **{ready[0].name: table_command(ready[0])})
        names.add(ready[0].name)
