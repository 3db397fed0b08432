"""The background run that answers the common commands ahead for a cache another command just built
(nsysql/answers/ahead.py starts it once that command has answered): a module of the command layer, since it opens the
export as a command does."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import duckdb

from nsysql import open as open_export
from nsysql.answers.ahead import answer_ahead, running_marker
from nsysql.errors import NsysqlError
from nsysql.store.busy import wait_for_commands
from nsysql.store.cache import cache_file
from nsysql.store.importer import views_version


def main(export_path: str, cache_dir: str, cache_path: str, source: str, summary: str) -> None:
    """Answer ahead for a cache another process built, at the lowest CPU priority, silently; nothing at all when
    the cache is gone or no longer the export's (it never builds one; it adds the tables built on first use that
    the answers read, as any command would)."""
    lowest_priority()
    cache = Path(cache_path)
    marker = running_marker(cache)  # written by the command that started this run, removed here whatever happens
    try:
        if not cache.exists() or cache_file(Path(cache_dir), Path(source), views_version()) != cache:
            return
        with open_export(export_path, cache_dir=cache_dir) as export:
            if export.cache_path == cache:
                export.before_compute = lambda: wait_for_commands(cache)  # commands first, between queries
                answer_ahead(export, summary=summary == "1")
    except (NsysqlError, duckdb.Error, OSError):
        pass
    finally:
        try:
            if marker.read_text().strip() == str(os.getpid()):  # not a later run's mark
                marker.unlink()
        except OSError:
            pass


def lowest_priority() -> None:
    """Nice 19, for this process and for its session's group: with Linux's autogroup scheduling (on by default
    in most distributions) the CPU is shared fairly between sessions whatever their processes' nice values, and
    this run has a session of its own (nsysql/answers/ahead.py starts it so), so nice alone left it an equal share with
    the commands it should give way to."""
    try:
        os.nice(19)
    except OSError:
        pass
    try:
        Path("/proc/self/autogroup").write_text("19")  # the group's nice; only where the kernel has autogroups
    except OSError:
        pass


if __name__ == "__main__":
    main(*sys.argv[1:6])
