"""Marks of the commands at work on a cache, so that the background run answering ahead for it (nsysql/answers/ahead.py)
waits for them between its queries instead of sharing the machine's cores with them: each command marks the
caches it opens (`mark_busy`, a `.busy-PID` file in the cache's answers directory, removed when the process
exits), and the background run waits while a live process holds one (`wait_for_commands`)."""
from __future__ import annotations

import atexit
import os
import time
from pathlib import Path

from nsysql.store import stored as answers

_busy: list[Path] = []  # this process's marks, removed when it exits
BUSY_PREFIX = ".busy-"


def mark_busy(cache_path: Path) -> None:
    """A command of this process works on the cache `cache_path` until the process exits: a background run
    answering ahead for it waits meanwhile (an unwritable cache directory only costs that)."""
    mark = answers.directory(cache_path) / f"{BUSY_PREFIX}{os.getpid()}"
    try:
        mark.parent.mkdir(exist_ok=True)
        mark.touch()
    except OSError:
        return
    if not _busy:
        atexit.register(_unmark)
    _busy.append(mark)


def _unmark() -> None:
    for mark in _busy:
        try:
            mark.unlink()
        except OSError:
            pass
    _busy.clear()


def wait_for_commands(cache_path: Path, *, poll_s: float = 0.1, limit_s: float = 600.0) -> None:
    """Return once no other live process's command works on the cache (its mark, `mark_busy`), or after
    `limit_s` (a command left waiting on a pager, say). A mark whose process is gone is removed."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if not command_running(cache_path):
            return
        time.sleep(poll_s)


def command_running(cache_path: Path) -> bool:
    """Whether another live process's command works on the cache now (its mark, `mark_busy`)."""
    return any(_live(mark) for mark in answers.directory(cache_path).glob(BUSY_PREFIX + "*"))


def _live(mark: Path) -> bool:
    """Whether the mark names another process that is still running (a stale one is removed)."""
    try:
        pid = int(mark.name.removeprefix(BUSY_PREFIX))
    except ValueError:
        return False
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
        alive = not _ended(pid)
    except ProcessLookupError:
        alive = False
    except PermissionError:  # another user's process: alive
        alive = True
    if not alive:
        try:
            mark.unlink()
        except OSError:
            pass
    return alive


def _ended(pid: int) -> bool:
    """Whether the process has ended but not been reaped yet (a zombie, state Z in /proc; where there is no /proc
    it counts as running): its parent may be slow to reap it, or be a container's init that never does."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2:].startswith("Z")
