"""Several exports opened at once: the first opens (each a cache build, or a `.nsys-rep` export by nsys) run in
parallel, as many at a time as the cores and the memory allow, under one progress line for all.

Each first open already runs `build_workers()` statements at once, each with DuckDB's memory limit
(nsysql/sql/engine.py), so the number of opens at a time is the cores over the statements one open runs, and the
available memory over what one open may take; NSYSQL_JOBS sets it instead. An open that fails gives its error,
in the order the exports were given, for the caller to skip and name (nsysql/answers/multi.py).
"""
from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from nsysql.core import progress
from nsysql.errors import NsysqlError
from nsysql.sql.engine import DEFAULT_MEMORY_LIMIT_MB
from nsysql.store.build_graph import build_workers

JOBS_ENV = "NSYSQL_JOBS"


def available_memory() -> int | None:
    """Bytes of memory available now (Linux's MemAvailable), None where unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def jobs(count: int) -> int:
    """Exports opened at once, for `count` of them: NSYSQL_JOBS, else what the cores and the memory allow (one at
    least, `count` at most)."""
    wanted = os.environ.get(JOBS_ENV, "").strip()
    if wanted:
        if not wanted.isdigit() or int(wanted) < 1:
            raise NsysqlError(f"{JOBS_ENV}={wanted!r} is not a positive whole number; use e.g. {JOBS_ENV}=2, or unset "
                              "it to open as many exports at once as the cores and memory allow")
        return max(1, min(count, int(wanted)))
    workers = build_workers()
    by_cores = max(1, (os.cpu_count() or 1) // workers)
    memory = available_memory()
    per_open = workers * DEFAULT_MEMORY_LIMIT_MB * 1024 * 1024
    by_memory = max(1, memory // per_open) if memory is not None else by_cores
    return max(1, min(count, by_cores, by_memory))


def open_all(paths: Sequence[Path], names: Sequence[str], opener: Callable[[Path], Any]) -> list[Any]:
    """`opener(path)` for each path, several at a time (`jobs`), under one progress line naming those opening:
    in the order given, each the opened export or the NsysqlError it raised. Other errors are raised once every
    open has ended (the opened ones closed). On Ctrl-C no further open starts and those running finish their
    cache (a whole one, kept for next time: a build's DuckDB work cannot be stopped from another thread, and a
    thread left running would abort the process as it exits), then the interrupt goes on."""
    if len(paths) <= 1 or jobs(len(paths)) == 1:
        return [_one(opener, path, name) for path, name in zip(paths, names)]
    results: list[Any] = []
    unexpected: BaseException | None = None
    with progress.shown(f"opening {len(paths)} exports"), ThreadPoolExecutor(jobs(len(paths))) as pool:
        futures = [pool.submit(_one, opener, path, name) for path, name in zip(paths, names)]
        for future in futures:
            try:
                results.append(future.result())
            except BaseException as exc:  # noqa: BLE001 - an interrupt, or a bug: raised once all have ended
                if unexpected is None:
                    unexpected = exc
                    pool.shutdown(wait=False, cancel_futures=True)  # none of those not started yet
                results.append(None)
    if unexpected is not None:
        for opened in results:
            if opened is not None and not isinstance(opened, NsysqlError):
                opened.close()
        raise unexpected
    return results


def _one(opener: Callable[[Path], Any], path: Path, name: str) -> Any:
    with progress.stage(name):  # the line shows which exports are being opened
        try:
            return opener(path)
        except NsysqlError as exc:
            return exc
