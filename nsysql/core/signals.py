"""Signals and a closed stdout, the way Unix tools treat them.

Ctrl-C, SIGTERM (Slurm cancel, `timeout`) and SIGHUP all raise `Interrupted` in the main thread, so every
`finally` on the way out runs and half-built cache files are removed; the exit status is 128 + the signal
number (130, 143, 129). DuckDB turns an interrupt inside a query into its own error (and nsysql may wrap that
into an NsysqlError), so the signal is also recorded: `received()` says the run was stopped, whatever
exception reached the boundary. A reader that closes the pipe early (`nsysql layers X | head -2`) ends the run
quietly with status 141 (128 + SIGPIPE), what the shell reports for `git log | head` or `ls | head`.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
from contextlib import contextmanager

BROKEN_PIPE_EXIT = 128 + signal.SIGPIPE
_CAUGHT = tuple(s for s in (signal.SIGINT, signal.SIGTERM, getattr(signal, "SIGHUP", None)) if s is not None)
_received: int | None = None


class Interrupted(KeyboardInterrupt):
    """A stopping signal, raised where the program was; a KeyboardInterrupt so code that cleans up on
    Ctrl-C cleans up on SIGTERM too."""

    def __init__(self, signum: int = signal.SIGINT):
        super().__init__(signum)
        self.signum = signum


def _raise(signum, frame):
    global _received
    _received = signum
    raise Interrupted(signum)


def received() -> int | None:
    """The stopping signal this run received, if any."""
    return _received


@contextmanager
def handled():
    """Install the handlers for the duration of one command (main thread only; restored afterwards, so
    tests that invoke the CLI in-process leave the interpreter as they found it)."""
    global _received
    _received = None
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {}
    for sig in _CAUGHT:
        if signal.getsignal(sig) is signal.SIG_IGN:  # e.g. started with nohup, or in the background: keep it
            continue
        previous[sig] = signal.signal(sig, _raise)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def exit_code(exc: BaseException | None = None) -> int:
    """128 + the signal that stopped the run (SIGINT when only a KeyboardInterrupt is known)."""
    signum = _received or getattr(exc, "signum", None) or signal.SIGINT
    return 128 + int(signum)


def message() -> str:
    return "Terminated." if (_received or signal.SIGINT) != signal.SIGINT else "Interrupted."


def quiet_stdout() -> None:
    """After EPIPE: point stdout at /dev/null so the interpreter's final flush cannot fail loudly."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # stdout without a file descriptor (tests): nothing to flush
        pass
