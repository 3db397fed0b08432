"""`nsysql parquet EXPORT -o DIR`: the normalized tables as a Hive-partitioned Parquet dataset (one partition per export)."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from .common import CacheDirOpt, DebugOpt, ExportArg, NoCacheOpt, open_export, user_errors

DirOpt = Annotated[Path, typer.Option("-o", "--output", help="The dataset directory (created if missing).",
                                      show_default=False)]
NameOpt = Annotated[Optional[str], typer.Option(
    "--name", help="Partition name of this export [default: its file name without .sqlite/.xz].", show_default=False)]
ForceOpt = Annotated[bool, typer.Option("--force", help="Replace this export's partition if the dataset has it.")]


def register(app: typer.Typer) -> None:
    @app.command("parquet")
    def parquet(
        export: ExportArg,
        output: DirOpt,
        name: NameOpt = None,
        force: ForceOpt = False,
        cache_dir: CacheDirOpt = None,
        no_cache: NoCacheOpt = False,
        debug: DebugOpt = False,
    ) -> None:
        """Write the normalized tables as DIR/<table>/export=<name>/part-0.parquet; other exports in DIR stay.
        DuckDB, Polars, Spark and Dask read it directly (see the README)."""
        from ..dataset import check_parquet_target, export_name
        with user_errors(debug):
            check_parquet_target(output, name or export_name(export), force)  # before normalizing
            with open_export(export, cache_dir, no_cache) as ex:
                written = ex.to_parquet(output, name=name, force=force)
            typer.echo(f"wrote {len(written.tables)} tables to {written.directory}/<table>/export={written.export}/")
