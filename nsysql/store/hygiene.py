"""Keeping the cache directory (and TMPDIR) tidy: leftovers of killed runs, and a size cap.

Every scratch file or directory nsysql makes is named with its owner, `<pid>@<host>`: `.building-…` and
`.unpacking-…` in the cache directory, `nsysql-…` in TMPDIR. A later run removes one when its owner is on this
host and no longer alive; an owner on another host (a cache directory shared over NFS by a Slurm job's nodes)
cannot be asked, so its leftover goes only once untouched for STALE_S. Files of older nsysql versions, which
carry no owner, are treated the same way.

The cap: the normalized `.duckdb` files (each with its `.answers` directory) and the unpacked copies of `.xz`
exports together stay under `NSYSQL_CACHE_SIZE` (or `nsysql --cache-size`; default DEFAULT_SIZE). When a run
adds to the cache, the entries used longest ago go first; an entry used in the last IN_USE_S seconds (its
access time is renewed on every use) is kept, since another run may be reading it.
"""
from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from nsysql.core.owner import host
from nsysql.errors import NsysqlError

SIZE_ENV = "NSYSQL_CACHE_SIZE"
DEFAULT_SIZE = "10G"
STALE_S = 3600
IN_USE_S = 60
SCRATCH_PREFIXES = (".building-", ".unpacking-")
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_OWNER = re.compile(r"^(?:\.building-|\.unpacking-|nsysql-(?:nocache-)?)(\d+)@([A-Za-z0-9._]+)-")
# only files nsysql named (`<stem>-<32 hex key>.duckdb|.sqlite`) are entries: a --cache-dir that also holds the
# user's own exports or DuckDB files must never lose them to the cap or to `nsysql cache clear`
_ENTRY = re.compile(r"-[0-9a-f]{32}\.(?:duckdb|sqlite)$")
_OLD_TMP = re.compile(r"^nsysql-(?:nocache-)?[a-z0-9_]{8}$")  # TemporaryDirectory names of older versions

size_override: str | None = None  # `nsysql --cache-size`, set for one command by the CLI


def parse_size(text: str) -> int | None:
    """Bytes from `10G`, `500M`, `2.5GiB`, `1000000`; None for `none`/`unlimited` (no cap)."""
    t = text.strip().upper().replace(" ", "")
    if t in ("NONE", "UNLIMITED", "OFF"):
        return None
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([KMGT]?)(?:I?B)?", t)
    if not m:
        raise NsysqlError(f"cache size {text!r}? give bytes or a size such as 500M, 10G, or `unlimited`")
    return int(float(m[1]) * _UNITS[m[2]])


def cap() -> int | None:
    return parse_size(size_override or os.environ.get(SIZE_ENV) or DEFAULT_SIZE)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def abandoned(path: Path, now: float | None = None) -> bool:
    """Whether a scratch file or directory's owner is gone (see the module's docstring)."""
    m = _OWNER.match(path.name)
    if m and m[2] == host():
        return not _alive(int(m[1]))
    try:
        age = (now or time.time()) - path.lstat().st_mtime
    except OSError:
        return False
    return age > STALE_S


def _remove(path: Path) -> int:
    """Delete a file or directory; the bytes freed (0 when it was gone already or cannot be removed)."""
    return _removed(path)[0]


def _removed(path: Path) -> tuple[int, str | None]:
    """Delete a file or directory: (bytes freed, why it could not be removed or None). A file gone already is no
    failure; a directory of which only part could be removed is one (its bytes freed counted)."""
    size = _size(path)
    failures: list[str] = []
    try:
        if path.is_dir() and not path.is_symlink():
            if sys.version_info >= (3, 12):
                shutil.rmtree(path, onexc=lambda _f, _p, exc: failures.append(_why(exc)))
            else:  # onerror: deprecated from 3.12 on
                shutil.rmtree(path, onerror=lambda _f, _p, info: failures.append(_why(info[1])))
        else:
            path.unlink()
    except FileNotFoundError:
        return 0, None
    except OSError as exc:
        return 0, _why(exc)
    if failures:
        return size - _size(path), failures[0]
    return size, None


def _why(exc: BaseException) -> str:
    if isinstance(exc, FileNotFoundError):
        return "gone"
    return exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)


def _size(path: Path) -> int:
    try:
        if path.is_dir() and not path.is_symlink():
            return sum(p.lstat().st_size for p in path.rglob("*"))
        return path.lstat().st_size
    except OSError:
        return 0


def leftovers(directory: Path) -> list[Path]:
    """Scratch files of runs that are gone, in a cache directory: unfinished builds and unpackings, answers being
    written (nsysql/store/stored.py), and `.answers` directories whose cache file is gone."""
    found = []
    try:
        entries = list(directory.iterdir())
    except OSError:
        return []
    now = time.time()
    for p in entries:
        if p.name.startswith(SCRATCH_PREFIXES):
            if abandoned(p, now):
                found.append(p)
        elif p.name.endswith(".duckdb.answers") and p.is_dir():
            if not p.with_name(p.name.removesuffix(".answers")).exists() and abandoned(p, now) and not _building(p):
                found.append(p)
                continue
            found += [a for a in _list(p) if a.name.startswith(".answer-") and abandoned(a, now)]
    return found


def _building(answers: Path) -> bool:
    """Whether a process holds the build lock in this answers directory (a first build still running)."""
    import fcntl

    from nsysql.store.lock import lock_file
    try:
        with lock_file(answers).open("rb") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except OSError:
                return True
    except OSError:
        return False
    return False


def _list(directory: Path) -> list[Path]:
    try:
        return list(directory.iterdir())
    except OSError:
        return []


def temp_leftovers() -> list[Path]:
    """nsysql's own directories in TMPDIR whose run is gone."""
    now = time.time()
    return [p for p in _list(Path(tempfile.gettempdir()))
            if (_OWNER.match(p.name) or _OLD_TMP.match(p.name)) and p.is_dir() and abandoned(p, now)]


_swept: set[str] = set()


def sweep(directory: Path, again: bool = False) -> int:
    """Remove the leftovers of killed runs, once per process and directory (`again`: even if done); the bytes
    freed."""
    freed = 0
    for where, found in ((str(directory), lambda: leftovers(directory)), ("TMPDIR", temp_leftovers)):
        if where in _swept and not again:
            continue
        _swept.add(where)
        freed += sum(_remove(p) for p in found())
    return freed


@dataclass
class Entry:
    """One thing the cap counts: a normalized export (its .duckdb file and .answers directory), or an unpacked
    .xz export (.sqlite)."""
    paths: list[Path]
    size: int
    used: float  # last use: the main file's access time (set on every use) or, if later, its mtime

    @property
    def name(self) -> str:
        return self.paths[0].name


def entries(directory: Path) -> list[Entry]:
    out = []
    for p in _list(directory):
        if p.name.startswith(".") or not _ENTRY.search(p.name) or not p.is_file():
            continue
        paths = [p] + ([p.with_name(p.name + ".answers")] if p.suffix == ".duckdb" else [])
        paths = [q for q in paths if q.exists()]
        try:
            st = p.stat()
        except OSError:
            continue
        used = max(st.st_atime, st.st_mtime)
        out.append(Entry(paths, sum(_size(q) for q in paths), used))
    return sorted(out, key=lambda e: e.used)


def touch(path: Path) -> None:
    """Mark a cache entry as just used (the cap removes the least recently used first): its access time only, as
    an unpacked export's mtime is part of its own cache key."""
    try:
        os.utime(path, ns=(time.time_ns(), path.stat().st_mtime_ns))  # mtime to the ns: it is in the cache key
    except OSError:  # a read-only cache directory: only the LRU order suffers
        pass


@dataclass
class Pruned:
    """What a prune did: the entries removed (each its main file and its answers gone), and those it could not
    remove, each with why (the first reason met; their bytes freed, if any, are in `failed_freed`)."""
    removed: list[Entry]
    failed: list[tuple[Entry, str]]
    failed_freed: int = 0

    @property
    def freed(self) -> int:
        return sum(e.size for e in self.removed) + self.failed_freed


def prune(directory: Path, limit: int | None, keep: frozenset[Path] | set[Path] = frozenset(), in_use_s: float = IN_USE_S) -> list[Entry]:
    """Remove least recently used entries until the total is at most `limit`; never one in `keep` or used in the
    last `in_use_s` seconds. Returns the entries removed (those that could not be are not counted)."""
    return pruned(directory, limit, keep, in_use_s).removed


def pruned(directory: Path, limit: int | None, keep: frozenset[Path] | set[Path] = frozenset(),
           in_use_s: float = IN_USE_S) -> Pruned:
    """prune, saying also what could not be removed."""
    done = Pruned([], [])
    if limit is None:
        return done
    found = entries(directory)
    total = sum(e.size for e in found)
    now = time.time()
    keep = {Path(k).resolve() for k in keep}
    for e in found:
        if total <= limit:
            break
        if e.paths[0].resolve() in keep or now - e.used < in_use_s:
            continue
        freed, why = 0, None
        for p in e.paths:
            part, failure = _removed(p)
            freed += part
            why = why or failure
        total -= freed
        if why is None:
            done.removed.append(e)
        else:
            done.failed.append((e, why))
            done.failed_freed += freed
    return done
