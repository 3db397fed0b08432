"""Cache hygiene: leftovers of killed runs removed by the next run (never a live run's), the size cap with
least-recently-used pruning, unpacked .xz copies counted, `nsysql cache list|clear|prune`."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

import nsysql
from nsysql.cli.app import app
from nsysql.core import owner
from nsysql.store import hygiene

NSYSQL = [sys.executable, "-m", "nsysql.cli.app"]


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def _make(path: Path, age_s: float = 0, directory: bool = False) -> Path:
    if directory:
        path.mkdir()
        (path / "export.sqlite").write_text("x")
    else:
        path.write_bytes(b"x" * 1000)
    if age_s:
        t = time.time() - age_s
        os.utime(path, (t, t))
    return path


def test_next_run_removes_leftovers_of_dead_runs_only(export_files, tmp_path):
    cache, tmp = tmp_path / "cache", tmp_path / "tmp"
    cache.mkdir()
    tmp.mkdir()
    here, dead, live = owner.host(), _dead_pid(), os.getpid()
    gone = [_make(cache / f".building-{dead}@{here}-ab12.duckdb"),
            _make(cache / f".building-{dead}@{here}-ab12.duckdb.wal"),
            _make(cache / f".unpacking-{dead}@{here}-cd34"),
            _make(cache / f".building-{dead}@{here}-ef56.wal", directory=True),
            _make(cache / ".building-7@elsewhere-gh78.duckdb", age_s=2 * hygiene.STALE_S),
            _make(cache / ".building-olderver.duckdb", age_s=2 * hygiene.STALE_S),
            _make(tmp / f"nsysql-{dead}@{here}-ij90", directory=True),
            _make(tmp / f"nsysql-nocache-{dead}@{here}-kl12", directory=True),
            _make(tmp / "nsysql-k2j4h5g6", age_s=2 * hygiene.STALE_S, directory=True)]
    kept = [_make(cache / f".building-{live}@{here}-mn34.duckdb"),  # a live run's build
            _make(cache / ".building-7@elsewhere-op56.duckdb"),  # another host's, recently written
            _make(cache / ".building-newerver.duckdb"),
            _make(tmp / f"nsysql-{live}@{here}-qr78", directory=True),
            _make(tmp / "nsysql-capture-pg-st90", age_s=2 * hygiene.STALE_S, directory=True),  # not ours
            _make(tmp / "nsysql-k2j4h5g7")]
    env = {**os.environ, "TMPDIR": str(tmp)}
    res = subprocess.run(NSYSQL + ["steps", str(export_files["gpt-tiny-forward"]), "--cache-dir", str(cache)],
                         env=env, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert [p.name for p in gone if p.exists()] == []
    assert [p.name for p in kept if not p.exists()] == []


def _age(directory: Path, seconds: float) -> None:
    """Make every entry of the cache look used `seconds` ago."""
    t = time.time() - seconds
    for p in directory.iterdir():
        os.utime(p, (t, t))


def test_cap_removes_least_recently_used_first(export_files, tmp_path):
    cache = tmp_path / "cache"
    a, b, c = (export_files[k] for k in ("gpt-tiny-forward", "gpt-tiny-train-fp32", "ncf-train"))
    for path in (a, b):
        with nsysql.open(path, cache_dir=cache):
            pass
    _age(cache, 7200)  # a and b: used 2 h ago
    with nsysql.open(a, cache_dir=cache) as ex:  # a used again (a cache hit renews its access time) ...
        a_cache = ex.cache_path
    assert time.time() - a_cache.stat().st_atime < 60
    t = time.time() - 1800
    os.utime(a_cache, (t, a_cache.stat().st_mtime))  # ... 30 min ago, so that only the order protects it
    sizes = {e.paths[0]: e.size for e in hygiene.entries(cache)}
    b_size = sum(size for path, size in sizes.items() if path != a_cache)
    # a command that reads only what a first open builds, nothing answered ahead: c's cache keeps the size it was
    # built with (one that grows by tables built on first use prunes again: test_first_use.py)
    report = ["report", "nvtx_sum", str(c), "--cache-dir"]
    scratch = tmp_path / "scratch"
    CliRunner().invoke(app, report + [str(scratch)], env={"NSYSQL_AHEAD": "off"})
    c_size = sum(e.size for e in hygiene.entries(scratch))  # what c's cache weighs on this machine
    cap = sizes[a_cache] + c_size + b_size // 2  # room for a and c, not for b as well
    res = CliRunner().invoke(app, ["--cache-size", str(cap)] + report + [str(cache)], env={"NSYSQL_AHEAD": "off"})
    assert res.exit_code == 0, res.output
    left = {e.name for e in hygiene.entries(cache)}
    assert a_cache.name in left and len(left) == 2  # b went; a (used since) and c (just built) stay
    assert not [p for p in cache.iterdir() if p.name.endswith(".answers") and
                not p.with_name(p.name.removesuffix(".answers")).exists()]  # b's answers went with it


def test_unpacked_xz_counts_toward_the_cap(tmp_path):
    from conftest import FIXTURES
    cache = tmp_path / "cache"
    xz = FIXTURES / "ncf-train" / "export.sqlite.xz"
    with nsysql.open(xz, cache_dir=cache) as ex:
        unpacked = ex.source
    assert unpacked.parent == cache and {e.paths[0] for e in hygiene.entries(cache)} >= {unpacked}
    _age(cache, 3600)
    other = FIXTURES / "cpu-nvtx-osrt-nsys2022.4" / "export.sqlite.xz"
    res = CliRunner().invoke(app, ["--cache-size", "1", "report", "nvtx_sum", str(other), "--cache-dir", str(cache)])
    assert res.exit_code == 0, res.output
    assert not unpacked.exists()
    assert {e.paths[0].suffix for e in hygiene.entries(cache)} == {".sqlite", ".duckdb"}  # the new one's pair


def test_cache_list_clear_prune(export_files, tmp_path):
    cache = tmp_path / "cache"
    for k in ("gpt-tiny-forward", "ncf-train"):
        with nsysql.open(export_files[k], cache_dir=cache):
            pass
    _make(cache / f".building-{_dead_pid()}@{owner.host()}-zz.duckdb")
    run = CliRunner()
    res = run.invoke(app, ["cache", "list", "--cache-dir", str(cache)])
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert len(lines) == 3 and "2 entries" in lines[-1] and "1 leftover" in lines[-1]
    _age(cache, 3600)
    res = run.invoke(app, ["cache", "prune", "--cache-size", "1", "--cache-dir", str(cache)])
    assert res.exit_code == 0 and res.stdout.startswith("removed 2 entries"), res.output
    with nsysql.open(export_files["gpt-tiny-forward"], cache_dir=cache):
        pass
    res = run.invoke(app, ["cache", "clear", "--cache-dir", str(cache)])
    assert res.exit_code == 0 and res.stdout.startswith("removed 1 entries"), res.output
    assert list(cache.iterdir()) == []


@pytest.mark.parametrize("text,size", [("10G", 10 << 30), ("500M", 500 << 20), ("2.5GiB", int(2.5 * (1 << 30))),
                                       ("1000", 1000), ("unlimited", None)])
def test_parse_size(text, size):
    assert hygiene.parse_size(text) == size


def test_bad_cache_size_is_one_line(tmp_path):
    res = CliRunner().invoke(app, ["--cache-size", "lots", "reports"])
    assert res.exit_code == 1 and res.output.startswith("Error: cache size 'lots'")
    res = CliRunner().invoke(app, ["reports"], env={"NSYSQL_CACHE_SIZE": "10G"})
    assert res.exit_code == 0


def test_marking_use_keeps_an_xz_cache_valid(tmp_path):
    """The unpacked copy's mtime is part of its cache key: marking it used must leave that mtime exact."""
    from conftest import FIXTURES
    xz = FIXTURES / "ncf-train" / "export.sqlite.xz"
    with nsysql.open(xz, cache_dir=tmp_path) as first:
        mtime = first.source.stat().st_mtime_ns
    with nsysql.open(xz, cache_dir=tmp_path) as again:
        assert again.cache_hit and again.source.stat().st_mtime_ns == mtime


def test_files_nsysql_did_not_name_are_never_entries(export_files, tmp_path):
    """--cache-dir pointed at a directory of exports: the user's .sqlite/.duckdb files survive clear and the cap."""
    mine = [shutil.copy(export_files["gpt-tiny-forward"], tmp_path / "run.sqlite"), tmp_path / "notes.duckdb"]
    (tmp_path / "notes.duckdb").write_bytes(b"x")
    with nsysql.open(tmp_path / "run.sqlite", cache_dir=tmp_path):
        pass
    assert [e.name for e in hygiene.entries(tmp_path)] and all("-" in e.name for e in hygiene.entries(tmp_path))
    res = CliRunner().invoke(app, ["cache", "clear", "--cache-dir", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert all(Path(p).exists() for p in mine) and hygiene.entries(tmp_path) == []
