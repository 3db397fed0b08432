"""Commands over several exports that may have nothing to show for some: gather the rows, skip the
empty exports with a note on stderr, and fail only when none has anything."""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Optional

import polars as pl
import typer

from nsysql.cli.common import open_export


def gather_nonempty(exports: list[Path], analysis: Callable, cache_dir: Optional[Path], no_cache: bool, *,
                    missing: str, single_error: Optional[Callable[[Path], str]] = None,
                    none_error: Optional[str] = None, step_range: Optional[str] = None) -> pl.DataFrame:
    """`analysis(export)` over every export, as nsysql.answers.multi.gather does.

    One export: its frame unchanged, or `single_error(path)` when it is empty (the command's own error).
    Several: rows with `export`/`rank`; exports giving no rows are named on stderr (`missing` says what they
    lack); when all are empty, `none_error` is raised, or the empty frame returned when it is None.
    Errors inside one export's analysis are prefixed with its label, so one knows which export failed.
    """
    from nsysql.answers import multi
    from nsysql.errors import NsysqlError

    paths = multi.expand(exports)
    opener = lambda p: open_export(p, cache_dir, no_cache, step_range=step_range)  # noqa: E731
    if len(paths) == 1:
        df = multi.gather(paths, analysis, opener)
        if df.is_empty() and single_error is not None:
            raise NsysqlError(single_error(paths[0]))
        return df
    names = dict(zip(paths, multi.labels(paths)))

    def labelled(ex):
        try:
            return analysis(ex)
        except NsysqlError as exc:
            raise type(exc)(f"{names[ex.path]}: {exc}") from None

    df = multi.gather(paths, labelled, opener)
    present = set(df["export"].to_list())
    skipped = [name for name in names.values() if name not in present]
    if len(skipped) == len(paths) and none_error is not None:
        raise NsysqlError(none_error)
    if skipped:
        typer.echo(f"note: {missing} in {', '.join(skipped)}; skipped", err=True)
    return df
