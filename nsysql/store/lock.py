"""The build lock of a cache: one process at a time builds or changes a cache file (a first open's build, tables
built on first use, a damaged cache built again), and says who it is, so that the others can say whom they wait for.

The lock is an exclusive `flock` on `<cache>.answers/.building.lock` (released when its process ends, however it
ends). Its holder writes into the file its pid, host, command and since when it holds it. A process that waits
for the lock tells so after NOTICE_AFTER_S, once, on stderr (a `note:` line, on a terminal or a pipe alike), naming
the holder; it waits as long as the holder makes progress (its CPU time, with its child processes', or its
`.building-` files grow) and gives up when the holder has made none for `NSYSQL_LOCK_STALL_S` seconds (a stopped or
hung process): one line saying who holds the lock and that `--no-cache` does without the cache."""
from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import shlex
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from nsysql.core.owner import host
from nsysql.errors import NsysqlError

LOCK_NAME = ".building.lock"
NOTICE_AFTER_S = 2.0
STALL_ENV = "NSYSQL_LOCK_STALL_S"
DEFAULT_STALL_S = 60.0
POLL_S = 0.05
PROGRESS_EVERY_S = 0.5  # how often the holder's progress is looked at while waiting


def lock_file(answers_directory: Path) -> Path:
    return answers_directory / LOCK_NAME


def stall_s() -> float:
    """NSYSQL_LOCK_STALL_S: how long a lock holder may make no progress before a waiter gives up."""
    wanted = os.environ.get(STALL_ENV, "").strip()
    if not wanted:
        return DEFAULT_STALL_S
    try:
        value = float(wanted)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise NsysqlError(f"{STALL_ENV}={wanted!r} is not a positive number of seconds; unset it for the default "
                          f"({DEFAULT_STALL_S:.0f})")
    return value


def note(line: str) -> None:
    from nsysql.store.inputs import printable
    print(printable(f"note: {line}"), file=sys.stderr, flush=True)


def command_line() -> str:
    """This process's command, as a person would have typed it (`nsysql summarize run.sqlite`), shortened."""
    argv = list(sys.argv) or ["python"]
    first = Path(argv[0]).name
    if first in ("__main__.py", "app.py", "nsysql", "-c") or argv[0].endswith(("nsysql/__main__.py",
                                                                               "nsysql/cli/app.py")):
        first = "nsysql"
    text = shlex.join([first] + argv[1:])
    return text if len(text) <= 120 else text[:119] + "…"


class Claim:
    """The lock as held by this process: `discard()` removes the lock file and, if nothing else is left in it, the
    answers directory (a first build that failed leaves nothing behind)."""

    def __init__(self, path: Path | None):
        self.path = path
        self.discarded = False

    def discard(self) -> None:
        if self.path is not None:
            with contextlib.suppress(OSError):
                self.path.unlink()
            self.discarded = True


_held: dict[str, int] = {}  # lock files this process holds (a nested `held` of the same cache does not wait)


@contextlib.contextmanager
def held(answers_directory: Path, what: str, *, on_wait: Callable[[str], None] = note,
         stall: float | None = None) -> Iterator[Claim]:
    """Hold the build lock of the cache whose answers live in `answers_directory` while the block runs; `what`
    names the cache for the lines a wait prints (`the cache of run.sqlite`). OSError when the lock file cannot be
    made (an unwritable cache directory): the caller decides what to do without it."""
    limit = stall_s() if stall is None else stall  # a bad setting is said at once, not only when waiting
    path = lock_file(answers_directory)
    key = os.path.abspath(path)
    if key in _held:  # this process holds it already (a damaged cache found while tables are added)
        _held[key] += 1
        try:
            yield Claim(None)
        finally:
            _held[key] -= 1
        return
    while True:
        answers_directory.mkdir(parents=True, exist_ok=True)
        f = path.open("a+", encoding="utf-8")
        try:
            if not _try_lock(f):
                _wait(f, path, what, on_wait, limit)
            if _same_file(f, path):
                break
        except BaseException:
            f.close()
            raise
        f.close()  # the holder before removed the file (its build failed): lock the one there now
    claim = Claim(path)
    _held[key] = 1
    try:
        _claim(f)
        yield claim
    finally:
        del _held[key]
        if not claim.discarded:
            with contextlib.suppress(OSError):  # the next holder writes its own; a waiter reads none meanwhile
                f.truncate(0)
        f.close()  # releases the lock
        if claim.discarded:
            with contextlib.suppress(OSError):
                answers_directory.rmdir()  # only when empty


def _same_file(f: IO[str], path: Path) -> bool:
    """Whether the locked file is still the one at `path` (not removed or replaced by the holder before)."""
    try:
        st = path.stat()
    except OSError:
        return False
    mine = os.fstat(f.fileno())
    return (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino)


def _try_lock(f: IO[str]) -> bool:
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return False
        raise
    return True


def _claim(f: IO[str]) -> None:
    """Say who holds the lock now (the file's only content)."""
    record = {"pid": os.getpid(), "host": host(), "command": command_line(), "since": time.time()}
    with contextlib.suppress(OSError):
        f.seek(0)
        f.truncate(0)
        f.write(json.dumps(record))
        f.flush()


def holder(path: Path) -> dict[str, Any] | None:
    """Who holds the lock, as it wrote (None when it wrote nothing readable: an older nsysql, or not yet)."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or not isinstance(record.get("pid"), int):
        return None
    return record


def describe(record: dict[str, Any] | None) -> str:
    """`pid 1234 (nsysql summarize run.sqlite, since 12:03:05)`, or `another process` when it said nothing."""
    if record is None:
        return "another process"
    since = record.get("since")
    when = ""
    if isinstance(since, (int, float)):
        same_day = time.strftime("%Y-%m-%d", time.localtime(since)) == time.strftime("%Y-%m-%d")
        when = time.strftime("%H:%M:%S" if same_day else "%Y-%m-%d %H:%M:%S", time.localtime(since))
    where = f" on {record['host']}" if record.get("host") not in (None, host()) else ""
    parts = [str(record.get("command") or "")] + ([f"since {when}"] if when else [])
    return f"pid {record['pid']}{where} ({', '.join(p for p in parts if p)})"


def _wait(f: IO[str], path: Path, what: str, on_wait: Callable[[str], None], stall: float) -> None:
    started = time.monotonic()
    told = False
    seen: object = None
    last_progress = started
    next_look = started
    while True:
        time.sleep(POLL_S)
        if _try_lock(f):
            return
        now = time.monotonic()
        if now < next_look:
            continue
        next_look = now + PROGRESS_EVERY_S
        record = holder(path)
        mark = _progress(record, path.parent.parent)
        if mark != seen:
            seen, last_progress = mark, now
        if not told and now - started >= NOTICE_AFTER_S:
            told = True
            on_wait(f"waiting for {what}: {describe(record)} is building it")
        if now - last_progress >= stall:
            state = "is stopped" if record is not None and _state(record) == "T" else "looks hung"
            pid = record["pid"] if record is not None else None
            end = f"resume or end it (kill {pid})" if pid is not None else "end it"
            raise NsysqlError(f"gave up waiting for {what}: {describe(record)}, which holds its build lock, {state} "
                              f"(no progress for {stall:.0f} s); {end}, or run without the cache (`use_cache=False`)")


def _state(record: dict[str, Any]) -> str | None:
    """The holder's process state letter (R, S, D, T, Z...) where /proc tells it, on this host."""
    if record.get("host") != host():
        return None
    try:
        stat = Path(f"/proc/{record['pid']}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rindex(")") + 2:][:1]


def _cpu_ticks(pid: int) -> int | None:
    """CPU time of the process and of its live children (SQLite's check runs in one), in clock ticks."""
    total = 0
    found = False
    pids = [pid]
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        pids += [int(c) for c in children]
    except (OSError, ValueError):
        pass
    for p in pids:
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime
            found = True
        except (OSError, ValueError, IndexError):
            continue
    return total if found else None


def _progress(record: dict[str, Any] | None, directory: Path) -> tuple:
    """What changes while the holder works: who it is, its CPU time (on this host), and the sizes and times of the
    build files in the cache directory (its own, when it said who it is)."""
    prefix = ".building-" + (f"{record['pid']}@{record.get('host')}-" if record is not None else "")
    files = []
    try:
        for p in directory.iterdir():
            if p.name.startswith(prefix):
                with contextlib.suppress(OSError):
                    st = p.stat()
                    files.append((p.name, st.st_size, st.st_mtime_ns))
    except OSError:
        pass
    ticks = _cpu_ticks(record["pid"]) if record is not None and record.get("host") == host() else None
    who = (record.get("pid"), record.get("since")) if record is not None else None
    return who, ticks, tuple(sorted(files))
