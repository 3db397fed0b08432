"""Shared test fixtures: the real exports we test against, decompressed once per session."""
from __future__ import annotations

import importlib.util
import lzma
import shutil
from functools import lru_cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED_SAMPLE = REPO.parent / "shared" / "samples" / "small-train"
FIXTURES = REPO / "fixtures"


def golden_exports() -> list[tuple[str, Path, Path]]:
    """(id, export file .sqlite or .sqlite.xz, directory of NVIDIA's nsys-stats_<report>.csv)."""
    found = []
    if (SHARED_SAMPLE / "export.sqlite").exists():
        found.append(("shared-small-train", SHARED_SAMPLE / "export.sqlite", SHARED_SAMPLE))
    for d in sorted(p for p in FIXTURES.iterdir() if p.is_dir()) if FIXTURES.is_dir() else []:
        if (d / "NOT_GOLDEN").exists():  # e.g. a CPU-only export of another nsys version; its own tests cover it
            continue
        for name in ("export.sqlite.xz", "export.sqlite"):
            if (d / name).exists():
                found.append((d.name, d / name, d))
                break
    return found


@pytest.fixture(scope="session")
def export_files(tmp_path_factory) -> dict[str, Path]:
    """Every golden export as a plain .sqlite path (xz fixtures decompressed into a temp dir)."""
    out = tmp_path_factory.mktemp("exports")
    files = {}
    for ident, path, _ in golden_exports():
        if path.suffix == ".xz":
            target = out / f"{ident}.sqlite"
            with lzma.open(path) as src, target.open("wb") as dst:
                shutil.copyfileobj(src, dst)
            files[ident] = target
        else:
            files[ident] = path
    return files


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="session")
def opened(export_files, cache_dir):
    import nsysql
    handles = {ident: nsysql.open(path, cache_dir=cache_dir) for ident, path in export_files.items()}
    yield handles
    for h in handles.values():
        h.close()


@lru_cache(maxsize=None)
def make_synthetic():
    """scripts/make_synthetic.py (a script, not a package) as a module, loaded once."""
    spec = importlib.util.spec_from_file_location("make_synthetic", REPO / "scripts" / "make_synthetic.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def ocg_export(tmp_path_factory):
    """make_synthetic's launch_overhead_copies_gaps case, opened: the hand-worked export of overhead, memcpy, gaps."""
    import nsysql
    directory = tmp_path_factory.mktemp("synthetic")
    path = make_synthetic().launch_overhead_copies_gaps().write(directory / "ocg.sqlite")
    with nsysql.open(path, cache_dir=directory / "cache") as ex:
        yield ex


@pytest.fixture(scope="session")
def plain_timelines(export_files, opened):
    """Returns `cases(*tables)`: (id, opened export, PlainTimeline) for each golden export having any of the
    tables; each PlainTimeline (a brute-force read of the raw rows) is built once per session."""
    built = {}

    def cases(*tables):
        from plainwalk import PlainTimeline
        found = []
        for ident, path in export_files.items():
            if any(opened[ident].has(t) for t in tables):
                if ident not in built:
                    built[ident] = PlainTimeline(path)
                found.append((ident, opened[ident], built[ident]))
        assert found, f"no real export with {' or '.join(tables)} to check against"
        return found
    return cases
