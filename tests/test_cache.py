"""The normalized cache: reused when the export is unchanged, rebuilt when it changes."""
from __future__ import annotations

import dataclasses
import os
import shutil

import nsysql


def test_second_open_hits_cache_and_change_invalidates(export_files, tmp_path):
    src = next(iter(export_files.values()))
    path = tmp_path / "e.sqlite"
    shutil.copyfile(src, path)
    cache = tmp_path / "cache"
    with nsysql.open(path, cache_dir=cache) as a:
        assert not a.cache_hit
        n = a.kernels().height
    with nsysql.open(path, cache_dir=cache) as b:
        assert b.cache_hit
        assert b.kernels().height == n
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    with nsysql.open(path, cache_dir=cache) as c:
        assert not c.cache_hit
    assert not [p for p in cache.iterdir() if p.name.startswith(".building-")]


def test_cache_dir_from_environment(export_files, tmp_path, monkeypatch):
    src = next(iter(export_files.values()))
    monkeypatch.setenv("NSYSQL_CACHE_DIR", str(tmp_path / "envcache"))
    with nsysql.open(src) as e:
        assert e.cache_path.parent == tmp_path / "envcache"


def test_no_cache_leaves_nothing(export_files, tmp_path, monkeypatch):
    src = next(iter(export_files.values()))
    monkeypatch.setenv("NSYSQL_CACHE_DIR", str(tmp_path / "never"))
    e = nsysql.open(src, use_cache=False)
    tmp = e.cache_path.parent
    assert e.kernels().height > 0
    e.close()
    assert not tmp.exists() and not (tmp_path / "never").exists()


def test_a_macro_a_normalize_query_calls_is_part_of_the_cache_key(monkeypatch):
    """gpu_busy calls macros.union_islands: editing the macro must not leave caches built with the old one in use."""
    from nsysql.sql import catalog
    from nsysql.store import importer
    before = importer.views_version()
    macro = catalog.get("macros.union_islands")
    changed = dataclasses.replace(macro, sql=macro.sql + "\n-- edited\n")
    real_group = catalog.group
    monkeypatch.setattr(catalog, "group", lambda name: [changed if q.id == macro.id else q for q in real_group(name)])
    assert importer.views_version() != before
