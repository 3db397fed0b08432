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


def try_line(path: Path, query: str) -> str:
    """How to query the file with what is installed: the DuckDB shell where `duckdb` is a command (the `shell`
    extra brings it), else Python's duckdb, which every install of nsysql has."""
    import json
    import shlex
    import shutil
    if shutil.which("duckdb"):
        return f"try: duckdb {shlex.quote(str(path))} {shlex.quote(query)}"
    # JSON strings are Python strings: double quotes, so that the shell's single quotes wrap the line once
    code = f"import duckdb; duckdb.connect({json.dumps(str(path))}, read_only=True).sql({json.dumps(query)}).show()"
    return (f"try: python -c {shlex.quote(code)}\n"
            "(the DuckDB shell, `duckdb FILE`, comes with: pip install 'nsysql[shell]')")


def db(exports: ExportsArg, output: DbOutOpt, force: ForceOpt = False, src: Source = SOURCE) -> None:
    """Write a DuckDB database: the normalized tables, every report and analysis as a documented view,
    and table nsysql_views describing them. Open it with `duckdb OUT.duckdb` (the DuckDB shell: pip install
    'nsysql[shell]'), or duckdb.connect("OUT.duckdb") in Python; it needs no export.

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
                       f"{len(written.views) - len(skipped)} views")
            typer.echo(try_line(written.path, "SELECT * FROM nsysql_views"))
        else:
            from nsysql.answers.dataset_schemas import write_duckdb_schemas
            many = write_duckdb_schemas(paths, src.open, output, force=force)
            skipped = many.skipped
            typer.echo(f"wrote {many.path}: {len(many.exports)} exports, one schema each "
                       f"({', '.join(e.schema for e in many.exports)}) with {many.tables} tables and "
                       f"{len(many.views) - len(skipped)} views")
            typer.echo(try_line(many.path, "SELECT * FROM nsysql_exports"))
        for v in skipped:
            typer.echo(f"note: {v.query.id}: {v.note}", err=True)


def register(app: typer.Typer) -> None:
    add_commands(app, db=db)
