"""The background run that answers the common commands ahead for a cache another command just built
(nsysql/answers/ahead.py starts it once that command has answered): a module of the command layer, since it opens the
export as a command does."""
from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import duckdb

from nsysql import open as open_export
from nsysql.answers.ahead import answer_ahead, running_marker
from nsysql.errors import NsysqlError
from nsysql.store.busy import command_running, wait_for_commands
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
                with GiveWay(cache, export.store.interrupt) as give_way:  # ... and within one
                    answer_ahead(export, summary=summary == "1", gave_way=give_way.gave_way,
                                 background=True)
    except (NsysqlError, duckdb.Error, OSError):
        pass
    finally:
        try:
            if marker.read_text().strip() == str(os.getpid()):  # not a later run's mark
                marker.unlink()
        except OSError:
            pass


class GiveWay:
    """While the run answers, a thread that watches for commands on the cache (nsysql/store/busy.py): when one
    starts, the statement running here is stopped (`interrupt`), so that the command has the cores and the
    memory to itself instead of a nice-19 share of a statement that may take seconds; the output is then started
    again once the commands are done (answer_ahead's `gave_way`)."""

    def __init__(self, cache: Path, interrupt: Callable[[], object], poll_s: float = 0.05):
        self.cache, self.interrupt, self.poll_s = cache, interrupt, poll_s
        self._stopped, self._done = threading.Event(), threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self) -> GiveWay:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._done.set()
        self._thread.join()

    def gave_way(self) -> bool:
        """Whether a statement was stopped for a command since the last call."""
        stopped = self._stopped.is_set()
        self._stopped.clear()
        return stopped

    def _watch(self) -> None:
        while not self._done.wait(self.poll_s):
            if command_running(self.cache):
                self._stopped.set()  # before the interrupt: the failing statement finds it set
                self.interrupt()
                while command_running(self.cache) and not self._done.wait(self.poll_s):
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
