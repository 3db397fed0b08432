"""Answers ahead in the background (nsysql/answers/ahead.py): the command that builds a cache answers first, then a
detached process at the lowest priority stores what the common commands read; NSYSQL_AHEAD picks the mode."""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import time

import pytest

import nsysql
from nsysql.answers import ahead
from nsysql.sql import catalog
from nsysql.store import stored as answers

from conftest import FIXTURES

EXPORT = FIXTURES / "gpt-tiny-forward" / "export.sqlite.xz"


def nsysql_cli(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "from nsysql.cli.app import main; main()", *args],
                          env=env, capture_output=True, text=True, timeout=300)


def stored(cache_path, query_id: str) -> bool:
    """Whether the query's answer with its header defaults (what a command's default output reads) is stored."""
    q = catalog.get(query_id)
    return answers.stored_file(cache_path, q, q.bound_params(q.stated_defaults())) is not None


def test_the_first_command_answers_then_a_background_run_stores_the_rest(tmp_path):
    env = {**os.environ, "NSYSQL_AHEAD": "background", "NSYSQL_CACHE_DIR": str(tmp_path)}
    done = nsysql_cli("report", "cuda_gpu_kern_sum", str(EXPORT), "-f", "csv", env=env)
    assert done.returncode == 0 and done.stdout.startswith("Time (%)"), done.stderr
    with nsysql.open(EXPORT, cache_dir=tmp_path) as ex:
        cache = ex.cache_path
    assert ahead.running(cache) or stored(cache, "analysis.steps")  # marked running as soon as the command ends
    # at nice 19 in an autogroup of nice 19 the run gets ~1.5 % of the CPU while the other xdist worker is busy
    # (its ~2 CPU s then take minutes): it gives way by design
    deadline = time.monotonic() + 900
    while not (stored(cache, "analysis.steps") and stored(cache, "analysis.top_kernels")) or ahead.running(cache):
        assert time.monotonic() < deadline, "the background run did not end in 900 s"
        time.sleep(0.5)
    assert not ahead.running_marker(cache).exists()  # removed when it ends
    assert stored(cache, "analysis.layers") and stored(cache, "reports.nvtx_gpu_proj_sum")
    assert stored(cache, "analysis.gaps") and stored(cache, "analysis.overhead_by_range")  # the background's own


def test_foreground_answers_before_the_command_returns_and_off_not_at_all(tmp_path):
    for mode, expected in (("foreground", True), ("off", False)):
        env = {**os.environ, "NSYSQL_AHEAD": mode, "NSYSQL_CACHE_DIR": str(tmp_path / mode)}
        assert nsysql_cli("report", "cuda_gpu_kern_sum", str(EXPORT), "-f", "csv", env=env).returncode == 0
        with nsysql.open(EXPORT, cache_dir=tmp_path / mode) as ex:
            assert stored(ex.cache_path, "analysis.steps") is expected, mode


def test_a_bad_mode_is_one_line(tmp_path):
    env = {**os.environ, "NSYSQL_AHEAD": "later", "NSYSQL_CACHE_DIR": str(tmp_path)}
    done = nsysql_cli("report", "cuda_gpu_kern_sum", str(EXPORT), env=env)
    assert done.returncode == 1 and done.stderr.strip().splitlines() == [
        "Error: NSYSQL_AHEAD='later' is not one of background, foreground, off; unset it for the default (background)"]


def test_the_background_run_never_builds_a_cache(tmp_path):
    """Started for a cache that is gone (pruned, or the export changed), it leaves the directory as it was."""
    gone = tmp_path / "gone.duckdb"
    subprocess.run([sys.executable, "-m", "nsysql.cli.answer_ahead", str(EXPORT), str(tmp_path), str(gone), str(EXPORT), "1"],
                   check=True, timeout=120)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("value", ["", "Background", " foreground "])
def test_mode_reads_the_variable(monkeypatch, value):
    monkeypatch.setenv("NSYSQL_AHEAD", value)
    assert ahead.mode() == (value.strip().lower() or "background")


def test_a_run_started_for_a_cache_that_is_gone_removes_its_mark(tmp_path):
    """The command marks the run as running when it starts it; the run removes that mark whatever it finds."""
    cache = tmp_path / "export-0123.duckdb"
    cache.write_bytes(b"")  # there when the command starts the run, not the export's cache when the run looks
    ahead._pending.append([str(EXPORT), str(tmp_path), str(cache), str(EXPORT), "1"])
    ahead.start_pending()
    assert ahead.running_marker(cache).exists()
    deadline = time.monotonic() + 120
    while ahead.running_marker(cache).exists():
        assert time.monotonic() < deadline, "the mark outlived its run"
        time.sleep(0.2)
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["export-0123.duckdb", "export-0123.duckdb.answers"]


def test_a_command_marks_the_cache_it_works_on_until_it_exits(tmp_path):
    """The mark is what the background run waits on: a `.busy-PID` file that a command's process holds for its
    lifetime, gone once the process has exited."""
    env = {**os.environ, "NSYSQL_AHEAD": "off", "NSYSQL_CACHE_DIR": str(tmp_path)}
    script = ("import os, sys; from pathlib import Path; from nsysql.cli.common import open_export; "
              f"ex = open_export(Path({str(EXPORT)!r}), None, False); "
              "from nsysql.store import stored as answers; "
              "print(sorted(p.name for p in answers.directory(ex.cache_path).glob('.busy-*')), os.getpid())")
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    marks, pid = done.stdout.strip().rsplit(" ", 1)
    assert marks == f"['.busy-{pid}']", done.stderr
    with nsysql.open(EXPORT, cache_dir=tmp_path) as ex:
        assert not list(answers.directory(ex.cache_path).glob(".busy-*"))


def test_the_background_run_waits_for_a_live_command_and_not_for_a_dead_one(tmp_path):
    from nsysql.store import busy
    with nsysql.open(EXPORT, cache_dir=tmp_path) as ex:
        cache = ex.cache_path
    directory = answers.directory(cache)
    directory.mkdir(exist_ok=True)
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = directory / f"{busy.BUSY_PREFIX}{gone.stdout.strip()}"
    stale.touch()
    busy.wait_for_commands(cache)  # a process that is gone holds nothing: returns, and its mark is removed
    assert not stale.exists()
    # a child of this process: once ended it stays a zombie until reaped below, which counts as ended
    command = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1.5)"])
    mark = directory / f"{busy.BUSY_PREFIX}{command.pid}"
    mark.touch()
    busy.wait_for_commands(cache, poll_s=0.05, limit_s=120)
    assert not mark.exists()  # seen ended (not merely waited out): its mark is removed
    ended = (pathlib.Path(f"/proc/{command.pid}/stat").read_text().split(") ")[1][0] == "Z"
             if pathlib.Path("/proc").is_dir() else True)
    assert command.wait() == 0 and ended  # it returned only once the command had ended
    busy.wait_for_commands(cache)  # and its mark, stale now, no longer holds it
    assert not list(directory.glob(".busy-*"))


@pytest.mark.skipif(not pathlib.Path("/proc/self/autogroup").exists(), reason="a kernel without autogroup scheduling")
def test_the_background_run_gives_way_in_its_own_session_too():
    # autogroups share the CPU fairly between sessions whatever the processes' nice: a run in a session of its
    # own (as ahead.start_pending starts it) must lower its group's nice, or it takes half the cores from commands
    probe = ("from pathlib import Path; from nsysql.cli.answer_ahead import lowest_priority; "
             "before = Path('/proc/self/autogroup').read_text(); lowest_priority(); "
             "print(before.split()[-1], Path('/proc/self/autogroup').read_text().split()[-1], __import__('os').nice(0))")
    out = subprocess.run([sys.executable, "-c", probe], start_new_session=True, capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["0", "19", "19"], out


def _live_mark(cache: pathlib.Path) -> subprocess.Popen:
    """A command of another live process marked busy on `cache` (as nsysql/store/busy.py's mark_busy writes it)."""
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    directory = answers.directory(cache)
    directory.mkdir(exist_ok=True)
    (directory / f".busy-{other.pid}").touch()
    return other


def test_a_statement_of_the_background_run_stops_when_a_command_starts(tmp_path):
    """GiveWay interrupts the statement running when a command marks the cache, so that the command does not
    share the cores with it for its remaining seconds, and says it did (gave_way)."""
    import duckdb

    from nsysql.cli.answer_ahead import GiveWay
    cache = tmp_path / "x.duckdb"
    con = duckdb.connect()
    with GiveWay(cache, con.interrupt) as give_way:
        assert not give_way.gave_way()
        other = _live_mark(cache)
        try:
            began = time.monotonic()
            with pytest.raises(duckdb.InterruptException):
                con.sql("SELECT count(*) FROM range(1000000000000) AS t(i) WHERE i % 7 = 3").fetchall()  # hours
            assert time.monotonic() - began < 30
            assert give_way.gave_way() and not give_way.gave_way()  # said once
        finally:
            other.kill()
            other.wait()
    assert con.sql("SELECT 42").fetchall() == [(42,)]  # the connection still works


def test_an_output_stopped_to_give_way_is_computed_again(monkeypatch):
    calls: list[int] = []

    def flaky(_export):
        calls.append(1)
        if len(calls) == 1:
            raise nsysql.NsysqlError("INTERRUPT Error: Interrupted!")
    monkeypatch.setattr(ahead, "DEFAULT_OUTPUTS", [("flaky", flaky)])
    stops = iter([True])
    ahead.answer_ahead(None, summary=False, gave_way=lambda: next(stops, False))  # type: ignore[arg-type]
    assert len(calls) == 2
    calls.clear()
    ahead.answer_ahead(None, summary=False, gave_way=lambda: False)  # type: ignore[arg-type]
    assert len(calls) == 1  # a failure of its own: left for the command to report
