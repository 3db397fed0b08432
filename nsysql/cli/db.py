"""`nsysql db EXPORT... -o OUT.duckdb`: a DuckDB database of the normalized tables and every report/analysis view
(several exports: one schema each)."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from nsysql.cli.common import SOURCE, ExportsArg, Source, add_commands

DbOutOpt = Annotated[Path, typer.Option("-o", "--output", help="The DuckDB file to write (e.g. run.duckdb).",
                                        show_default=False)]
ForceOpt = Annotated[bool, typer.Option("--force", help="Replace OUT if it exists.")]


def db(exports: ExportsArg, output: DbOutOpt, force: ForceOpt = False, src: Source = SOURCE) -> None:
    """Write a DuckDB database: the normalized tables, every report and analysis as a documented view,
    and table nsysql_views describing them. Open it with `duckdb OUT.duckdb`; it needs no export.

    Several exports: one schema per export (named after its file, e.g. rank0) holding all of that, and
    table nsysql_exports (schema_name, export, rank, path); query e.g. rank0.nvtx_gpu_proj_sum."""
    from nsysql.answers import multi
    from nsysql.answers.dataset import check_duckdb_target
    with src.errors():
        check_duckdb_target(output, force)  # before normalizing, which can take a while
        paths = multi.expand(exports)
        if len(paths) == 1:
            with src.open(paths[0]) as ex:
                written = ex.to_duckdb(output, force=force)
            skipped = written.skipped
            typer.echo(f"wrote {written.path}: {len(written.tables)} tables, "
                       f"{len(written.views) - len(skipped)} views; try: duckdb {written.path} "
                       f"\"SELECT * FROM nsysql_views\"")
        else:
            from nsysql.answers.dataset_schemas import write_duckdb_schemas
            many = write_duckdb_schemas(paths, src.open, output, force=force)
            skipped = many.skipped
            first = many.exports[0].schema
            typer.echo(f"wrote {many.path}: {len(many.exports)} exports, one schema each "
                       f"({', '.join(e.schema for e in many.exports)}) with {many.tables} tables and "
                       f"{len(many.views) - len(skipped)} views; try: duckdb {many.path} "
                       f"\"SELECT * FROM nsysql_exports\" or \"SELECT * FROM {first}.nsysql_views\"")
        for v in skipped:
            typer.echo(f"note: {v.query.id}: {v.note}", err=True)


def register(app: typer.Typer) -> None:
    add_commands(app, db=db)
