"""Where normalized exports are cached, and the key that says a cache is still valid.

The key covers the export's identity (absolute path, size, mtime and a hash of its first
and last 64 KiB, which change whenever nsys rewrites the file) and the version of the
normalized views and of DuckDB, so a changed export or a new nsysql never reuses a stale cache. The key is
also kept inside the cache (nsysql_meta.export_identity) and compared when it is opened: another export's cache
copied under this one's name is built again (nsysql/export.py).
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

import duckdb

from nsysql.store import formats_in
from nsysql.store.inputs import safe_name

CACHE_ENV = "NSYSQL_CACHE_DIR"
# what a cache file holds beside the tables, in the key: caches of an nsysql that kept no identity are never opened
CACHE_FORMAT = "identity-kept"
_PROBE = 64 * 1024


def default_cache_dir() -> Path:
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or (Path.home() / ".cache")
    return Path(base) / "nsysql"


def content_probe(path: Path) -> str:
    size = path.stat().st_size
    h = hashlib.sha256()
    with path.open("rb") as f:
        h.update(f.read(_PROBE))
        if size > _PROBE:
            f.seek(max(size - _PROBE, _PROBE))
            h.update(f.read(_PROBE))
    return h.hexdigest()


def cache_key(path: Path, views_version: str) -> str:
    st = path.stat()
    # a folder export (Parquet, Arrow): every table file's identity (formats_in.identity)
    probe = formats_in.identity(formats_in.folder(path)) if formats_in.is_folder(path) else content_probe(path)
    ident = "|".join([
        str(path.resolve()), str(st.st_size), str(st.st_mtime_ns), probe,
        views_version, duckdb.__version__, CACHE_FORMAT,
    ])
    return hashlib.sha256(ident.encode("utf-8", "surrogateescape")).hexdigest()[:32]  # non-UTF-8 names too


def cache_file(cache_dir: Path, path: Path, views_version: str, key: str | None = None) -> Path:
    """The cache file of the export `path`; `key`: its cache_key, computed once by the caller (two looks at a file
    another process may replace meanwhile could see two files)."""
    # the name is only a hint for people; the key identifies the export, so a 250-byte or non-UTF-8 name is cut
    return cache_dir / f"{safe_name(path.stem)}-{key or cache_key(path, views_version)}.duckdb"
