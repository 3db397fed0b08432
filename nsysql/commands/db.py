"""`nsysql db EXPORT -o OUT.duckdb`: a DuckDB database of the normalized tables and every report/analysis view."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .common import CacheDirOpt, DebugOpt, ExportArg, NoCacheOpt, open_export, user_errors

DbOutOpt = Annotated[Path, typer.Option("-o", "--output", help="The DuckDB file to write (e.g. run.duckdb).",
                                        show_default=False)]
ForceOpt = Annotated[bool, typer.Option("--force", help="Replace OUT if it exists.")]


def register(app: typer.Typer) -> None:
    @app.command("db")
    def db(
        export: ExportArg,
        output: DbOutOpt,
        force: ForceOpt = False,
        cache_dir: CacheDirOpt = None,
        no_cache: NoCacheOpt = False,
        debug: DebugOpt = False,
    ) -> None:
        """Write a DuckDB database: the normalized tables, every report and analysis as a documented view,
        and table nsysql_views describing them. Open it with `duckdb OUT.duckdb`; it needs no export."""
        from ..dataset import check_duckdb_target
        with user_errors(debug):
            check_duckdb_target(output, force)  # before normalizing, which can take a while
            with open_export(export, cache_dir, no_cache) as ex:
                written = ex.to_duckdb(output, force=force)
            skipped = written.skipped
            typer.echo(f"wrote {written.path}: {len(written.tables)} tables, "
                       f"{len(written.views) - len(skipped)} views; try: duckdb {written.path} "
                       f"\"SELECT * FROM nsysql_views\"")
            for v in skipped:
                typer.echo(f"note: {v.query.id}: {v.note}", err=True)
