"""Answers computed right after an export's cache is built, whichever command built it: every section of a default
`summarize`, and the default outputs of `steps`, `layers`, `memcpy`, `report nvtx_gpu_proj_sum`, and in the
background run `overhead` and `gaps`. They are stored (nsysql/store/stored.py), so those commands later read
small tables instead of the million-row ones (issues 12, 46). The others (the full kernel table, any command with options) are computed on
first use and kept the same way.

By default they are computed after the command that built the cache has printed its answer, by a process of
their own at the lowest CPU priority, nice 19 for the process and for its session's autogroup
(`python -m nsysql.cli.answer_ahead`): the first command answers
sooner, and the next one finds them stored, or computes what it needs itself if it comes before they are. NSYSQL_AHEAD=foreground
computes them in the command, before its own answer (as tests and bench/bench_stages.py want: everything done
when the command returns); NSYSQL_AHEAD=off not at all. While the process runs, `running_marker()` names a file
holding its pid. It gives way to commands: it waits between its queries while a command works on the same cache
(nsysql/store/busy.py), and stops the statement it is running when one starts (computed again afterwards), so the
two do not share the cores (the nine reports one after another on the 1.7M-kernel
benchmark: 46.5 / 49.4 s before, 40.4 s after, `bench/bench_commands.py`; docs/performance-history.md)."""
from __future__ import annotations

import atexit
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import duckdb

from nsysql.answers.summary import build_summary
from nsysql.core import progress, signals
from nsysql.errors import NsysqlError
from nsysql.query.queries import Queries
from nsysql.store import stored as answers

# (what, how): each computes the answers one command's default output reads, with that command's exact arguments
DEFAULT_OUTPUTS: list[tuple[str, Callable[[Queries], object]]] = [
    ("the time origin of tables (ms since the capture's first event)", lambda ex: ex.time_origin()),
    ("steps", lambda ex: ex.steps()),
    ("layers", lambda ex: (ex.layers(depth=0, merge_repeats=False, analysed=True), ex.attribution_coverage())),
    ("memcpy", lambda ex: ex.memcpy(by="kind")),
    ("report nvtx_gpu_proj_sum", lambda ex: ex.report("nvtx_gpu_proj_sum")),
]
# the two costly ones (5-7 s each on the benchmark export), by the background run only, last: a command asking
# before they are kept computes them itself, alone on the cores (nsysql/cli/answer_ahead.py's GiveWay); in the
# command (NSYSQL_AHEAD=foreground: tests, bench/) they would only lengthen every first open
BACKGROUND_OUTPUTS: list[tuple[str, Callable[[Queries], object]]] = [
    ("overhead", lambda ex: ex.overhead(by="range")),
    ("gaps", lambda ex: ex.gaps()),
]


RETRIES = 50  # times one output is started again after giving way to commands, before it is left to them


def answer_ahead(export: Queries, *, summary: bool = True, gave_way: Callable[[], bool] | None = None,
                 background: bool = False) -> None:
    """Compute and store the answers above; `summary=False` when the command is `summarize` itself, which
    computes its own sections right away. Best effort: what an export cannot answer (no NVTX, no kernels) is
    left for the command to report when it is asked. `gave_way()`: whether the statement that just failed was
    stopped to let a command run alone (the background run, nsysql/cli/answer_ahead.py): that output is then
    computed again (its answers stored so far are kept). `background`: BACKGROUND_OUTPUTS too."""
    with progress.shown("answering common commands ahead (once per export)"):
        work: list[Callable[[Queries], object]] = [build_summary] if summary else []
        outputs = DEFAULT_OUTPUTS + (BACKGROUND_OUTPUTS if background else [])
        for compute in work + [c for _, c in outputs]:
            for _ in range(RETRIES):
                try:
                    compute(export)
                except (NsysqlError, duckdb.Error):
                    if signals.received():  # an interrupt DuckDB turned into an error stops the command
                        raise
                    if gave_way is not None and gave_way():
                        continue
                break


AHEAD_ENV = "NSYSQL_AHEAD"
MODES = ("background", "foreground", "off")
_pending: list[list[str]] = []  # the background runs to start once the command has answered


def mode() -> str:
    """NSYSQL_AHEAD: background (the default), foreground or off."""
    wanted = os.environ.get(AHEAD_ENV, "").strip().lower() or "background"
    if wanted not in MODES:
        raise NsysqlError(f"{AHEAD_ENV}={wanted!r} is not one of {', '.join(MODES)}; unset it for the default "
                          "(background)")
    return wanted


def after_build(export: Queries, *, summary: bool = True) -> None:
    """The cache of `export` was just built by this command: answer ahead now, or once the command has answered."""
    chosen = mode()
    if chosen == "foreground":
        answer_ahead(export, summary=summary)
    elif chosen == "background":
        if not _pending:
            atexit.register(start_pending)  # once this process has answered (a command that fails forgets them)
        _pending.append([str(export.path), str(export.cache_path.parent), str(export.cache_path),
                         str(export.source), "1" if summary else "0"])


def forget_pending() -> None:
    """A command that failed starts no background run (its cache may be what failed)."""
    _pending.clear()


def start_pending() -> None:
    """Start the background runs recorded by after_build (when the process exits): each a detached process in a
    session of its own, with no terminal, so the shell's prompt comes back at once."""
    while _pending:
        args = _pending.pop(0)
        try:
            started = subprocess.Popen([sys.executable, "-m", "nsysql.cli.answer_ahead", *args],
                                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                       start_new_session=True, close_fds=True,
                                       env={**os.environ, AHEAD_ENV: "foreground"})
            # marked running from now, not from when the new process has started Python (a second later)
            if Path(args[2]).exists():  # (a cache that is gone gets no answers directory)
                marker = running_marker(Path(args[2]))
                marker.parent.mkdir(exist_ok=True)
                marker.write_text(str(started.pid))
        except OSError:  # no process to spare, or an unwritable cache: the next command computes what it needs
            pass


def running_marker(cache_path: Path) -> Path:
    """The file that exists (holding its pid) while a background run answers ahead for the cache `cache_path`."""
    return answers.directory(cache_path) / ".ahead-running"


def running(cache_path: Path) -> bool:
    """Whether a background run is answering ahead for `cache_path` (its marker names a live process)."""
    try:
        pid = int(running_marker(cache_path).read_text().strip())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return False
    return True
