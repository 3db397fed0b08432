"""SQLite's own integrity check (nsysql/store/sqlite_check.py): once per cache build, over the tables nsysql reads. A
damaged table whose rows still read becomes one warning line, remembered with the cache; one that cannot be read
becomes one error line naming it."""
from __future__ import annotations

import importlib.util
import shutil
import signal
import sqlite3
import struct
import sys
import time

import pytest
from typer.testing import CliRunner

import nsysql
from nsysql.cli.app import app
from nsysql.store import sqlite_check

from conftest import REPO

spec = importlib.util.spec_from_file_location("make_outside_corpus", REPO / "scripts" / "make_outside_corpus.py")
corpus = importlib.util.module_from_spec(spec)
sys.modules.setdefault("make_outside_corpus", corpus)
spec.loader.exec_module(corpus)  # its page-level helpers: children(), patch(), page_size()

RUNTIME, KERNEL = "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_KERNEL"


@pytest.fixture
def good(export_files, tmp_path):
    path = tmp_path / "export.sqlite"
    shutil.copyfile(export_files["gpt-tiny-forward"], path)
    return path


def run(path, cache, *sql):
    res = CliRunner().invoke(app, ["sql", str(path), *(sql or ["SELECT 1 AS x"]), "-f", "csv", "--cache-dir", str(cache)])
    notes = [l for l in res.stderr.splitlines() if l.startswith("warning:")]
    errors = [l for l in res.stderr.splitlines() if l not in notes]
    return res, notes, errors


def test_sound_export_every_table_read_is_checked_and_clean(good, tmp_path):
    con = sqlite3.connect(good)
    held = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    con.close()
    with nsysql.open(good, cache_dir=tmp_path / "cache") as ex:
        found = ex.sql("SELECT raw_table, problems FROM sqlite_check")
        assert set(found["raw_table"]) == held & sqlite_check.read_tables()
        assert {KERNEL, RUNTIME, "StringIds"} <= set(found["raw_table"]) and "OSRT_CALLCHAINS" not in found["raw_table"]
        assert found["problems"].sum() == 0 and ex.sanity() == []


def test_page_read_twice_is_one_warning_remembered_with_the_cache(good, tmp_path, monkeypatch):
    with sqlite3.connect(good) as con:
        rows = con.execute(f"SELECT count(*) FROM {RUNTIME}").fetchone()[0]
    _, kids = corpus.children(good, RUNTIME)
    corpus.patch(good, kids[1][0], struct.pack(">I", kids[0][1]))  # a page listed twice: a plain read repeats it
    res, notes, errors = run(good, tmp_path / "cache", "SELECT count(*) AS n FROM runtime")
    assert res.exit_code == 0 and not errors, res.stderr
    assert int(res.stdout.split()[1]) > rows  # what the check guards against: more rows than the table holds
    hit = [l for l in notes if f"{RUNTIME}: SQLite's integrity check finds" in l]
    assert len(hit) == 1 and "not to be trusted" in hit[0], notes

    def no_second_check(link):
        raise AssertionError("checked again on a cache hit")

    monkeypatch.setattr(sqlite_check, "run", no_second_check)
    again, notes_again, _ = run(good, tmp_path / "cache")
    assert again.exit_code == 0 and hit[0] in notes_again


def test_unreadable_page_is_one_error_naming_the_table(good, tmp_path):
    _, kids = corpus.children(good, KERNEL)
    size = corpus.page_size(good)
    corpus.patch(good, (kids[0][1] - 1) * size, bytes(size))
    res, notes, errors = run(good, tmp_path / "cache")
    assert res.exit_code == 1 and len(errors) == 1, res.stderr
    assert errors[0].startswith("Error: ") and "damaged" in errors[0] and KERNEL in errors[0], errors
    assert "Traceback" not in res.output


def test_problem_count_says_when_sqlite_stopped_counting():
    assert sqlite_check.describe(1, "Page 9: free space corruption") == "1 problem (first: Page 9: free space corruption)"
    assert sqlite_check.describe(100, "x").startswith("100 or more problems")
    assert sqlite_check.failure("e.sqlite", [("A", 0, None)]) is None


def sleeping(*_):
    return [sys.executable, "-c", "import time; time.sleep(60)"]


def test_ctrl_c_stops_a_running_check_at_once(good, monkeypatch):
    """The check runs in its own process beside the build; a signal while the build waits for it ends that
    process too."""
    class Stop(BaseException):
        pass

    def stop(signum, frame):
        raise Stop

    monkeypatch.setattr(sqlite_check, "worker_command", sleeping)
    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, 0.2)
    started = time.monotonic()
    running = sqlite_check.start(good)
    try:
        with pytest.raises(Stop):
            running.result()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert time.monotonic() - started < 5
    assert running._proc.poll() is not None


def test_a_cancelled_check_ends_its_process_and_finds_nothing(good, monkeypatch):
    """When the build fails first, the check is cancelled: its process ends at once."""
    monkeypatch.setattr(sqlite_check, "worker_command", sleeping)
    started = time.monotonic()
    running = sqlite_check.start(good)
    running.cancel()
    assert running._proc.poll() is not None and time.monotonic() - started < 5
    assert running.result() == []


def test_a_check_killed_by_sigbus_runs_again_without_the_mapping(good, monkeypatch):
    """A memory-mapped read dies of SIGBUS when the file changes under the mapping; the check then reads the
    file again with plain reads, and finds what a plain check finds."""
    real = sqlite_check.worker_command
    mapped = []

    def dies_when_mapped(link, mmap_bytes):
        mapped.append(mmap_bytes)
        if mmap_bytes:
            return [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGBUS)"]
        return real(link, mmap_bytes)

    monkeypatch.setattr(sqlite_check, "worker_command", dies_when_mapped)
    found = sqlite_check.run(good)
    assert mapped == [sqlite_check.MMAP_BYTES, 0]
    with sqlite3.connect(good) as con:
        held = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert sorted(t for t, _, _ in found) == sorted(held & sqlite_check.read_tables())
    assert all(problems == 0 for _, problems, _ in found)
