"""Answers kept beside an export's cached DuckDB file: a query's result as a small Parquet file, so that a
repeated command reads it back instead of recomputing over the million-row tables.

An answer is keyed by the query's SQL, the SQL of every analysis and macro it reads (`requires: analysis.X`,
`macros.X`, at any depth), its parameters and the code that turns results into frames (nsysql/query/queries.py); the cached DuckDB file it sits beside is itself keyed by the export's identity and
the normalize SQL. So an answer is reused only for the same export, the same normalized tables, the same
query text and the same parameters: editing any of them computes afresh.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

import polars as pl

from nsysql.sql import catalog

SUFFIX = ".answers"


def directory(cache_path: Path) -> Path:
    """Where the answers of the cached DuckDB file `cache_path` live."""
    return cache_path.with_name(cache_path.name + SUFFIX)


@lru_cache(maxsize=1)
def _conversion_key() -> str:
    """How results become frames is code too (nsysql/query/queries.py runs the query, nsysql/sql/engine.py's
    to_polars converts it): a change there must not serve old answers."""
    package = Path(__file__).resolve().parents[1]
    code = b"".join((package / part).read_bytes() for part in ("query/queries.py", "sql/engine.py"))
    return hashlib.sha256(code).hexdigest()


def key(query: catalog.Query, params: dict) -> str:
    text = [_conversion_key(), query.sql] + [catalog.get(dep).sql for dep in sorted(_inputs(query))]
    text.append(json.dumps(params, sort_keys=True, default=repr))
    return hashlib.sha256("\0".join(text).encode()).hexdigest()[:24]


def _inputs(query: catalog.Query) -> set[str]:
    """Every analysis and macro the query reads, directly or through another one."""
    def read(q: catalog.Query) -> list[str]:
        return [r for r in q.requires if r.startswith(("analysis.", "macros."))]
    found: set[str] = set()
    pending = read(query)
    while pending:
        dep = pending.pop()
        if dep not in found:
            found.add(dep)
            pending += read(catalog.get(dep))
    return found


def path(cache_path: Path, query: catalog.Query, params: dict) -> Path:
    return directory(cache_path) / f"{query.id}-{key(query, params)}.parquet"


def stored_file(cache_path: Path, query: catalog.Query, params: dict) -> Path | None:
    """The answer's file when there is one."""
    file = path(cache_path, query, params)
    return file if file.is_file() else None


def load(cache_path: Path, query: catalog.Query, params: dict) -> pl.DataFrame | None:
    """The stored answer, or None when there is none (or it cannot be read: then it is recomputed)."""
    file = path(cache_path, query, params)
    if not file.is_file():
        return None
    try:
        return pl.read_parquet(file)
    except (OSError, pl.exceptions.PolarsError):
        return None


def store(cache_path: Path, query: catalog.Query, params: dict, frame: pl.DataFrame) -> None:
    """Keep `frame` as the answer; a cache directory that cannot be written to only costs the speed-up."""
    try:
        _write_atomically(path(cache_path, query, params), frame.write_parquet)
    except (OSError, pl.exceptions.PolarsError):
        pass


def discard(cache_path: Path) -> None:
    """Remove every stored answer and kept fact of a cache (it was damaged and is built again); the marks of
    running processes (dot files: .busy-PID, .ahead-running) stay with their processes."""
    try:
        stored = list(directory(cache_path).iterdir())
    except OSError:
        return
    for file in stored:
        if not file.name.startswith(".") and file.is_file():
            file.unlink(missing_ok=True)


def _write_atomically(file: Path, write: Callable[[str], object]) -> None:
    """`write(name)` into a scratch file beside `file`, then renamed over it: a concurrent reader sees the old
    content or the whole new one (scratch names start `.answer-`: hygiene removes those a killed run left)."""
    file.parent.mkdir(exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".answer-", suffix=file.suffix, dir=file.parent)
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, file)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def load_frame(cache_path: Path, name: str) -> pl.DataFrame | None:
    """A frame kept under `name` beside the cached file (an answer that is no one query's: the critical path of the
    steps, a what-if replay), or None when there is none or it cannot be read."""
    file = directory(cache_path) / f"{name}.parquet"
    if not file.is_file():
        return None
    try:
        return pl.read_parquet(file)
    except (OSError, pl.exceptions.PolarsError):
        return None


def store_frame(cache_path: Path, name: str, frame: pl.DataFrame) -> None:
    """Keep `frame` under `name` (load_frame); an unwritable cache directory only costs the speed-up."""
    try:
        _write_atomically(directory(cache_path) / f"{name}.parquet", frame.write_parquet)
    except (OSError, pl.exceptions.PolarsError):
        pass


def _facts_file(cache_path: Path, name: str) -> Path:
    return directory(cache_path) / f"{name}.json"


def load_fact(cache_path: Path, name: str) -> tuple[bool, Any]:
    """(found, value) of a fact about the cached file kept beside it (the raw tables the export held, its time
    origin); a value may be None (an export without events has no time origin)."""
    try:
        kept = json.loads(_facts_file(cache_path, name).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False, None
    return (True, kept["fact"]) if isinstance(kept, dict) and "fact" in kept else (False, None)


def store_fact(cache_path: Path, name: str, value: Any) -> None:
    """Keep `value` (JSON-able) beside the cached file; an unwritable cache directory only costs the speed-up."""
    with contextlib.suppress(OSError):
        _write_atomically(_facts_file(cache_path, name),
                          lambda tmp: Path(tmp).write_text(json.dumps({"fact": value}), encoding="utf-8"))
