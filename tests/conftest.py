"""Shared test fixtures: the real exports we test against, decompressed once per session."""
from __future__ import annotations

import importlib.util
import lzma
import os
import shutil
import sys
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Iterator

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED_SAMPLE = REPO.parent / "shared" / "samples" / "small-train"
FIXTURES = REPO / "fixtures"

# A command that builds a cache answers the common commands ahead in a detached process once it has answered
# (nsysql/answers/ahead.py). Tests want everything done when a command returns, and no process outliving its temporary
# directory: the answers ahead are computed in the command (test_ahead.py tests the background run itself).
os.environ["NSYSQL_AHEAD"] = "foreground"


def pytest_configure(config):
    config.addinivalue_line("markers", "heavy: a module or class of tens of seconds or more; README's xdist run "
                                       "deals it out first (pytest_collection_modifyitems)")
    # `--dist loadscope` would sort the units by their number of tests again, so that one-test classes of a minute
    # came last: keep the order the workers' collection gives (below)
    if getattr(config.option, "dist", "no") == "loadscope":
        config.option.loadscopereorder = False


def _xdist_scope(nodeid: str) -> str:
    """The unit `--dist loadscope` hands to one worker: the module, or the class (xdist's own split)."""
    return nodeid.rsplit("::", 1)[0]


def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (README's test command, `--dist loadscope`), the units marked `heavy` first, then the others
    by their number of tests (xdist's own order): the controller deals the units out in this order, so a unit of
    minutes (test_outside_corpus's cold builds, the Spark JVM) never starts last while the other worker idles.
    Serial runs keep the order of the files."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    count: dict[str, int] = {}
    heavy: set[str] = set()
    for item in items:
        scope = _xdist_scope(item.nodeid)
        count[scope] = count.get(scope, 0) + 1
        if item.get_closest_marker("heavy") is not None:
            heavy.add(scope)
    first = {scope: i for i, scope in enumerate(dict.fromkeys(_xdist_scope(it.nodeid) for it in items))}
    items.sort(key=lambda it: (_xdist_scope(it.nodeid) not in heavy, -count[_xdist_scope(it.nodeid)],
                               first[_xdist_scope(it.nodeid)]))


def unxz(source: Path, target: Path) -> Path:
    """An xz-compressed export (`source`) decompressed into `target`; returns `target`."""
    with lzma.open(source) as src, target.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    return target


@contextmanager
def opened_each(paths: dict, cache_dir: Path) -> Iterator[dict]:
    """{key: nsysql.open(path)} for each of `paths` ({key: export}), closed at the end."""
    import nsysql
    handles = {key: nsysql.open(path, cache_dir=cache_dir) for key, path in paths.items()}
    try:
        yield handles
    finally:
        for handle in handles.values():
            handle.close()


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
        files[ident] = unxz(path, out / f"{ident}.sqlite") if path.suffix == ".xz" else path
    return files


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="session")
def opened(export_files, cache_dir):
    with opened_each(export_files, cache_dir) as handles:
        yield handles


@lru_cache(maxsize=None)
def load_script(relative: str) -> ModuleType:
    """A script of the repository (`scripts/make_synthetic.py`: not a package) as a module, loaded once and
    registered in sys.modules under its name (dataclasses look their module up there)."""
    path = REPO / relative
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def make_synthetic() -> ModuleType:
    """scripts/make_synthetic.py as a module."""
    return load_script("scripts/make_synthetic.py")


@pytest.fixture(scope="session")
def ocg_export(tmp_path_factory):
    """make_synthetic's launch_overhead_copies_gaps case, opened: the hand-worked export of overhead, memcpy, gaps."""
    import nsysql
    directory = tmp_path_factory.mktemp("synthetic")
    path = make_synthetic().launch_overhead_copies_gaps().write(directory / "ocg.sqlite")
    with nsysql.open(path, cache_dir=directory / "cache") as ex:
        yield ex


@lru_cache(maxsize=None)
def plain_attribution(path: Path):
    """plainwalk's PlainAttribution of `path`, read once per session: its brute-force walk (attribute()) is the
    slow part and several modules check against the same exports. Tests only read it."""
    from plainwalk import PlainAttribution
    return PlainAttribution(path)


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


@pytest.fixture(scope="session")
def fixture_sqlite(tmp_path_factory):
    """name -> fixtures/<name>/export.sqlite.xz as a plain .sqlite (read by sqlite3 and by nsysql), decompressed
    once per session; a fixture absent from the checkout skips the test."""
    done: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in done:
            path = FIXTURES / name / "export.sqlite.xz"
            if not path.exists():
                pytest.skip(f"fixtures/{name} absent")
            done[name] = unxz(path, tmp_path_factory.mktemp(name) / "export.sqlite")
        return done[name]
    return get
