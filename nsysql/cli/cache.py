"""`nsysql cache list|clear|prune`: what the cache directory holds, and emptying it (nsysql/store/hygiene.py)."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Optional

import typer

from nsysql.cli.common import CACHE_SOURCE, CacheDirOpt, CacheSource, DebugOpt, add_commands, user_errors
from nsysql.store import inputs

SizeOpt = Annotated[Optional[str], typer.Option(
    "--cache-size", help="Keep the cache under this size (500M, 10G, unlimited) [default: $NSYSQL_CACHE_SIZE "
                         "or 10G].", show_default=False)]


def _directory(cache_dir: Optional[Path]) -> Path:
    from nsysql.store.cache import default_cache_dir
    return Path(cache_dir).expanduser() if cache_dir else default_cache_dir()


def _mb(n: int) -> str:
    return f"{n / 1e6:,.1f} MB"


def list_(src: CacheSource = CACHE_SOURCE) -> None:
    """List the cached exports, least recently used first, with the total and the cap.

    One line each: size, last use, kind, file. Leftovers of killed runs are counted (the next run removes
    them)."""
    from nsysql.store import hygiene
    with src.errors():
        directory = _directory(src.cache_dir)
        found = hygiene.entries(directory) if directory.is_dir() else []
        for e in found:
            used = time.strftime("%Y-%m-%d %H:%M", time.localtime(e.used))
            kind = "unpacked .xz" if e.paths[0].suffix == ".sqlite" else "normalized"
            typer.echo(f"{_mb(e.size):>12}  {used}  {kind:12}  {e.name}")
        limit = hygiene.cap()
        left = hygiene.leftovers(directory) if directory.is_dir() else []
        total = sum(e.size for e in found)
        typer.echo(f"{len(found)} entries, {_mb(total)} in {directory} (cap {_mb(limit) if limit else 'none'})"
                   + (f"; {len(left)} leftover(s) of killed runs" if left else ""))


def _report(done, directory: Path) -> None:
    """What a clear or prune removed (stdout), and what it could not (a warning; an error, exit 1, when it could
    remove none of what it meant to)."""
    from nsysql.errors import NsysqlError
    if done.removed or not done.failed:
        typer.echo(f"removed {len(done.removed)} entries, {_mb(done.freed)} from {directory}")
    if not done.failed:
        return
    shown = ", ".join(f"{inputs.text(e.name)} ({why})" for e, why in done.failed[:3])
    more = f" and {len(done.failed) - 3} more" if len(done.failed) > 3 else ""
    size = _mb(sum(e.size for e, _ in done.failed))
    if done.removed:
        typer.echo(inputs.printable(f"warning: could not remove {len(done.failed)} entries ({size}) from "
                                    f"{directory}: {shown}{more}"), err=True)
        return
    raise NsysqlError(f"could not remove any of the {len(done.failed)} entries ({size}) in {directory}: "
                      f"{shown}{more}; check that the directory can be written")


def clear(src: CacheSource = CACHE_SOURCE) -> None:
    """Remove every cached export and every leftover of a killed run.

    Files that a live run is writing stay. Says what it removed, and what it could not (exit 1 when it could
    remove none)."""
    from nsysql.store import hygiene
    with src.errors():
        directory = _directory(src.cache_dir)
        if not directory.is_dir():
            typer.echo(f"{directory}: no cache")
            return
        done = hygiene.pruned(directory, 0, in_use_s=0)
        hygiene.sweep(directory, again=True)
        _report(done, directory)


def prune(cache_dir: CacheDirOpt = None, cache_size: SizeOpt = None, debug: DebugOpt = False) -> None:
    """Remove the least recently used exports until the cache is under its cap.

    Every run that adds to the cache does this itself; exports used in the last minute are kept. Says what it
    removed, and what it could not (exit 1 when it could remove none)."""
    from nsysql.store import hygiene
    with user_errors(debug):
        directory = _directory(cache_dir)
        limit = hygiene.parse_size(cache_size) if cache_size else hygiene.cap()
        done = hygiene.pruned(directory, limit) if directory.is_dir() else hygiene.Pruned([], [])
        _report(done, directory)


def register(app: typer.Typer) -> None:
    cache = typer.Typer(help="Show or empty the cache of normalized exports (and unpacked .xz exports).",
                        no_args_is_help=True)
    add_commands(cache, list=list_, clear=clear, prune=prune)
    app.add_typer(cache, name="cache")
