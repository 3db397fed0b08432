"""`nsysql parquet EXPORT... -o DIR`: the normalized tables as a Hive-partitioned Parquet dataset (one partition
per export)."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from nsysql.cli.common import SOURCE, ExportsArg, Source, add_commands

DirOpt = Annotated[Path, typer.Option("-o", "--output", help="The dataset directory (created if missing).",
                                      show_default=False)]
NameOpt = Annotated[Optional[str], typer.Option(
    "--name", help="Partition name of this export [default: its file name without .sqlite/.xz]; one export only.",
    show_default=False)]
ForceOpt = Annotated[bool, typer.Option("--force", help="Replace an export's partition if the dataset has it.")]


def parquet(exports: ExportsArg, output: DirOpt, name: NameOpt = None, force: ForceOpt = False,
            src: Source = SOURCE) -> None:
    """Write the normalized tables as DIR/<table>/export=<name>/part-0.parquet; other exports in DIR stay.
    DuckDB, Polars, Spark and Dask read it directly (the docs' cluster cookbook). Several exports: one partition each,
    named after its file (parent/file where two files share a name)."""
    from nsysql.answers import multi
    from nsysql.answers.dataset import check_parquet_target, export_name
    from nsysql.errors import NsysqlError
    with src.errors():
        paths = multi.expand(exports)
        if len(paths) == 1:
            names = [name or export_name(paths[0])]
        elif name is not None:
            raise NsysqlError(f"--name names one export, but {len(paths)} were given; "
                              "drop --name (each export's partition is named after its file)")
        else:
            names = partition_names(paths)
        for part in names:  # every target checked before any export is normalized
            check_parquet_target(output, part, force)
        for path, part in zip(paths, names):
            with src.open(path) as ex:
                written = ex.to_parquet(output, name=part if len(paths) > 1 else name, force=force)
            typer.echo(f"wrote {len(written.tables)} tables to "
                       f"{written.directory}/<table>/export={written.export}/")


def partition_names(paths: list[Path]) -> list[str]:
    """Partition names for several exports: their unique labels, made safe as for one export's file name."""
    from nsysql.answers import multi
    from nsysql.answers.dataset import export_name
    from nsysql.errors import NsysqlError
    names = [export_name(Path(label.replace("/", "_"))) for label in multi.labels(paths)]
    clash = sorted({n for n in names if names.count(n) > 1})
    if clash:
        raise NsysqlError(f"several exports would share the partition name {clash[0]!r}; rename the files, "
                          "or write them one at a time with --name")
    return names


def register(app: typer.Typer) -> None:
    add_commands(app, parquet=parquet)
