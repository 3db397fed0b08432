"""Answers computed right after an export's cache is built, whichever command built it: every section of a default
`summarize`, and the default outputs of `steps`, `layers`, `memcpy` and `report nvtx_gpu_proj_sum`. They are
stored (nsysql/answers.py), so those commands later read small tables instead of the million-row ones (issue 12).
The heavier outputs (`gaps`, `overhead --by range`, the full kernel table, any command with options) are
computed on first use and kept the same way."""
from __future__ import annotations

from collections.abc import Callable

import duckdb

from . import progress, signals
from .errors import NsysqlError
from .export import Export
from .render import time_origin
from .summary import build_summary

# (what, how): each computes the answers one command's default output reads, with that command's exact arguments
DEFAULT_OUTPUTS: list[tuple[str, Callable[[Export], object]]] = [
    ("the time origin of tables (ms since the capture's first event)", time_origin),
    ("steps", lambda ex: ex.steps()),
    ("layers", lambda ex: (ex.layers(depth=0, merge_repeats=False), ex.attribution_coverage())),
    ("memcpy", lambda ex: ex.memcpy(by="kind")),
    ("report nvtx_gpu_proj_sum", lambda ex: ex.report("nvtx_gpu_proj_sum")),
]


def answer_ahead(export: Export, *, summary: bool = True) -> None:
    """Compute and store the answers above; `summary=False` when the command is `summarize` itself, which
    computes its own sections right away. Best effort: what an export cannot answer (no NVTX, no kernels) is
    left for the command to report when it is asked."""
    with progress.shown("answering common commands ahead (once per export)"):
        work: list[Callable[[Export], object]] = [build_summary] if summary else []
        for compute in work + [c for _, c in DEFAULT_OUTPUTS]:
            try:
                compute(export)
            except (NsysqlError, duckdb.Error):
                if signals.received():  # an interrupt DuckDB turned into an error stops the command
                    raise
