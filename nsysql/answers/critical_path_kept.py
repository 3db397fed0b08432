"""The critical path and what-if answers kept with the export's answers (beside its cache, nsysql/store/stored.py):
a second `critical-path`, `what-if` or summarize reads them back instead of building and walking the graph again.

A kept answer is keyed by what it is (composition, items, a replay and its scales, the step and process asked
for, the sample's budget), by the code that computes it (this folder's critical-path modules) and by the SQL of
every `analysis._cp_*` query the graph reads (with what they read in turn): editing any of them computes afresh.
An export given inputs from outside (a job's matched collectives, a chosen step range) keeps nothing
(Queries._answers_kept)."""
from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

import polars as pl

CODE = ("cp_graph.py", "critical_path.py", "critical_path_job.py", "what_if.py", "critical_path_kept.py")


@lru_cache(maxsize=1)
def code_key() -> str:
    """The version of the model: its code and the SQL of the queries its graph reads."""
    from nsysql.sql import catalog
    from nsysql.store import stored
    here = Path(__file__).resolve().parent
    parts = [(here / name).read_bytes() for name in CODE]
    for query in sorted(q for q in catalog.all_queries() if q.startswith("analysis._cp_")):
        parts.append(stored.key(catalog.get(query), {}).encode())
    return hashlib.sha256(b"\0".join(parts)).hexdigest()[:16]


def kept(ex, what: str, args: dict, compute: Callable[[], pl.DataFrame]) -> pl.DataFrame:
    """`compute()`, kept with the export's answers under `what` and `args` (JSON-able) where the export keeps
    answers; read back on the next run."""
    if not getattr(ex, "_answers_kept", False):
        return compute()
    key = hashlib.sha256(json.dumps([what, args, code_key()], sort_keys=True, default=str).encode()).hexdigest()[:24]
    return ex.store.frame(f"critical_path-{what}-{key}", compute)
