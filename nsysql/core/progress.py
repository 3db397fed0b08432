"""One status line on stderr while slow work runs: which stages are running, which finished and their rows.

Shown only when stderr is a terminal and the work has run for over a second; never on a pipe or a file, so
scripts and CI logs see nothing. The line is redrawn in place and erased when the work ends.
"""
from __future__ import annotations

import os
import sys
import threading
import time
from contextlib import contextmanager

DELAY_S = 1.0
STAGE_LOG_ENV = "NSYSQL_STAGE_LOG"  # a file: each stage's title, name, seconds, rows and start are appended to it
_PROCESS_START = time.monotonic()  # the stage log's start column counts from here, to show what overlapped
TICK_S = 0.25


def _compact(n: int) -> str:
    for unit, size in (("M", 1_000_000), ("k", 1_000)):
        if n >= size:
            return f"{n / size:.1f}{unit}"
    return str(n)


class Progress:
    """`begin(stage)` / `end(stage, rows)` from any thread; a ticker thread draws the line."""

    def __init__(self, title: str, stream=None, enabled: bool | None = None, total: int | None = None):
        self.title = title
        self.total = total  # stages expected, when known: "done 7/21"
        self.stream = stream or sys.stderr
        if enabled is None:
            enabled = _is_terminal(self.stream) and not os.environ.get("NSYSQL_NO_PROGRESS")
        self.enabled = enabled
        self.started = time.monotonic()
        self.running: dict[str, float] = {}
        self.finished: list[tuple[str, int | None]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._drawn = False
        self._ticker = threading.Thread(target=self._tick, daemon=True) if enabled else None
        if self._ticker:
            self._ticker.start()

    def begin(self, stage: str) -> None:
        with self._lock:
            self.running[stage] = time.monotonic()

    def end(self, stage: str, rows: int | None = None) -> None:
        with self._lock:
            began = self.running.pop(stage, None)
            self.finished.append((stage, rows))
        log = os.environ.get(STAGE_LOG_ENV)
        if log and began is not None:  # for bench/: how long each stage took, one line each
            with open(log, "a", encoding="utf-8") as f:
                f.write(f"{self.title}\t{stage}\t{time.monotonic() - began:.3f}\t{rows if rows is not None else ''}"
                        f"\t{began - _PROCESS_START:.3f}\n")

    def line(self, width: int) -> str:
        with self._lock:
            now = time.monotonic()
            running = ", ".join(self.running)
            done = [f"{s} {_compact(r)} rows" if r is not None else s for s, r in self.finished[-2:]]
        text = f"nsysql: {self.title} {now - self.started:.0f} s"
        if running:
            text += f" · {running}"
        if done:
            count = f"{len(self.finished)}/{self.total}" if self.total else str(len(self.finished))
            text += f" · done {count}: {', '.join(done)}"
        return text[: max(width - 1, 10)]

    def _tick(self) -> None:
        while not self._stop.wait(TICK_S):
            if time.monotonic() - self.started < DELAY_S:
                continue
            width = _width()
            self.stream.write("\r\x1b[K" + self.line(width))
            self.stream.flush()
            self._drawn = True

    def close(self) -> None:
        if self._ticker is None:
            return
        self._stop.set()
        self._ticker.join()
        if self._drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


_active: Progress | None = None


@contextmanager
def shown(title: str, total: int | None = None):
    """A Progress for the duration of a block, erased at its end (also on errors and Ctrl-C); `stage` calls
    inside the block report to it. A nested block shares the outer line and title."""
    global _active
    if _active is not None:  # inside another block (a query of `summarizing`): one line, the outer title
        yield _active
        return
    progress = _active = Progress(title, total=total)
    try:
        yield progress
    finally:
        _active = None
        progress.close()


class Stage:
    rows: int | None = None


@contextmanager
def stage(name: str):
    """Report one stage to the line being shown, if any; yields None without one, else a Stage whose `rows`
    the caller may set for the line."""
    progress = _active
    if progress is None:
        yield None
        return
    progress.begin(name)
    current = Stage()
    try:
        yield current
    finally:
        progress.end(name, current.rows)


def _is_terminal(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _width() -> int:
    try:
        return os.get_terminal_size(sys.stderr.fileno()).columns
    except (OSError, ValueError):
        return 80
