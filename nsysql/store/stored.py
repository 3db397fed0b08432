"""Answers kept beside an export's cached DuckDB file: a query's result as a small Parquet file, so that a
repeated command reads it back instead of recomputing over the million-row tables.

An answer is keyed by the query's SQL, the SQL of every analysis and macro it reads (`requires: analysis.X`,
`macros.X`, at any depth), its parameters and the code that turns results into frames (nsysql/query/queries.py); the cached DuckDB file it sits beside is itself keyed by the export's identity and
the normalize SQL. So an answer is reused only for the same export, the same normalized tables, the same
query text and the same parameters: editing any of them computes afresh.

Each answer also carries, in its Parquet file's metadata, the identity of the export whose cache it was computed
from, which query and key it answers, and a checksum of its rows: `load` raises Mismatch for a file whose identity,
query or checksum differs (another export's answers folder copied under this one's name, a value edited, one
answer's file copied over another's), and the Store computes it again with one warning. Facts carry the same
identity and a checksum of their JSON value.
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
# part of every answer's key: files of an nsysql that stored no identity or checksum are never read
FORMAT = "checked-1"
META = "nsysql"  # the Parquet metadata key of an answer's record (identity, answer, checksum)


class Mismatch(Exception):
    """A stored answer or fact that is not what was stored for this export: `foreign` when it was computed for
    another export (its identity differs), else its content or name changed (`str()` says how)."""

    def __init__(self, why: str, *, foreign: bool = False):
        super().__init__(why)
        self.foreign = foreign


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
    text = [FORMAT, _conversion_key(), query.sql] + [catalog.get(dep).sql for dep in sorted(_inputs(query))]
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


def stored_file(cache_path: Path, query: catalog.Query, params: dict, identity: str | None = None) -> Path | None:
    """The answer's file when there is one, checked as `load` checks it (Mismatch)."""
    file = path(cache_path, query, params)
    if not file.is_file():
        return None
    if load(cache_path, query, params, identity) is None:  # unreadable: as if there were none
        return None
    return file


def checksum(frame: pl.DataFrame) -> str:
    """A checksum of a frame's column names, types and rows in order (Polars' row hashes, stable within one Polars
    version, which the record names: under another version an answer is computed again, without a warning)."""
    h = hashlib.sha256(repr(list(frame.schema.items())).encode())
    h.update(str(frame.height).encode())
    if frame.width and frame.height:
        rows = frame.hash_rows(seed=0).implode()
        h.update(b"".join(int(rows.hash(seed=s)[0]).to_bytes(8, "little") for s in (0, 1)))
    return h.hexdigest()[:32]


def _record(answer: str, identity: str, frame: pl.DataFrame) -> dict[str, str]:
    return {META: json.dumps({"identity": identity, "answer": answer, "sum": checksum(frame),
                              "polars": pl.__version__})}


def load(cache_path: Path, query: catalog.Query, params: dict, identity: str | None = None) -> pl.DataFrame | None:
    """The stored answer, or None when there is none (or it cannot be read: then it is recomputed). Mismatch when
    the file is not the answer stored for this export (`identity`; None: not checked) and this query."""
    file = path(cache_path, query, params)
    if not file.is_file():
        return None
    try:
        meta = pl.read_parquet_metadata(file)
        frame = pl.read_parquet(file)
    except (OSError, pl.exceptions.PolarsError):
        return None
    try:
        record = json.loads(meta[META])
        stored_identity, answer, stored_sum, version = (record["identity"], record["answer"], record["sum"],
                                                        record["polars"])
    except (KeyError, TypeError, ValueError):
        raise Mismatch("it carries no record of what it answers") from None
    if identity is not None and stored_identity != identity:
        raise Mismatch("computed for another export", foreign=True)
    if answer != file.stem:
        raise Mismatch(f"it is the answer of {answer.rsplit('-', 1)[0]}")
    if version != pl.__version__:  # row hashes of another Polars version: no telling, so compute it again
        return None
    if checksum(frame) != stored_sum:
        raise Mismatch("its rows differ from those stored: its checksum does not match")
    return frame


def store(cache_path: Path, query: catalog.Query, params: dict, frame: pl.DataFrame, identity: str = "") -> None:
    """Keep `frame` as the answer; a cache directory that cannot be written to only costs the speed-up."""
    file = path(cache_path, query, params)
    metadata = _record(file.stem, identity, frame)
    try:
        _write_atomically(file, lambda tmp: frame.write_parquet(tmp, metadata=metadata))
    except (OSError, pl.exceptions.PolarsError):
        pass


def remove(file: Path) -> None:
    """Remove one stored answer or fact (it did not match; an unwritable directory keeps it)."""
    with contextlib.suppress(OSError):
        file.unlink()


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


def fact_file(cache_path: Path, name: str) -> Path:
    return _facts_file(cache_path, name)


def _fact_sum(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:32]


def load_fact(cache_path: Path, name: str, identity: str | None = None) -> tuple[bool, Any]:
    """(found, value) of a fact about the cached file kept beside it (the raw tables the export held, its time
    origin); a value may be None (an export without events has no time origin). Mismatch when it was kept for
    another export (`identity`; None: not checked) or its value changed; a fact of an nsysql that kept no
    identity is not found (it is computed again)."""
    try:
        kept = json.loads(_facts_file(cache_path, name).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False, None
    if not isinstance(kept, dict) or "fact" not in kept or "identity" not in kept:
        return False, None
    if identity is not None and kept["identity"] != identity:
        raise Mismatch("computed for another export", foreign=True)
    if kept.get("sum") != _fact_sum(kept["fact"]):
        raise Mismatch("its value differs from the one stored: its checksum does not match")
    return True, kept["fact"]


def store_fact(cache_path: Path, name: str, value: Any, identity: str = "") -> None:
    """Keep `value` (JSON-able) beside the cached file; an unwritable cache directory only costs the speed-up."""
    text = json.dumps({"fact": value, "identity": identity, "sum": _fact_sum(value)})
    with contextlib.suppress(OSError):
        _write_atomically(_facts_file(cache_path, name), lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))
