"""The CLI's boundary, tried as a user's shell meets it: real subprocesses, real signals, real pipes.

Exit statuses (README, "Errors and exit codes"): 0 done, 1 one `Error:` line, 130 Ctrl-C, 143 SIGTERM,
141 stdout closed by the reader (quietly, like `git log | head`)."""
from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

# cold builds of a 40x export, interrupted in subprocesses: dealt out first under xdist (conftest.py)
pytestmark = pytest.mark.heavy

REPO = Path(__file__).resolve().parent.parent
NSYSQL = [sys.executable, "-m", "nsysql.cli.app"]


def _env(tmp_path: Path) -> dict:
    tmp = tmp_path / "tmp"
    tmp.mkdir(exist_ok=True)
    return {**os.environ, "TMPDIR": str(tmp), "NSYSQL_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "100"}


@pytest.fixture(scope="module")
def big_export(export_files, tmp_path_factory) -> Path:
    """The largest real export replicated 40 times: its cold build takes seconds, long enough to interrupt."""
    spec = importlib.util.spec_from_file_location("replicate", REPO / "bench" / "replicate.py")
    replicate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(replicate)
    src = max(export_files.values(), key=lambda p: p.stat().st_size)
    out = tmp_path_factory.mktemp("big") / "big.sqlite"
    replicate.replicate(src, out, 40, set())
    return out


def _wait_for_build(cache: Path, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if cache.is_dir() and any(p.name.startswith(".building-") for p in cache.iterdir()):
            return
        time.sleep(0.01)
    pytest.fail("the build never started")


@pytest.mark.parametrize("sig,code,line", [(signal.SIGINT, 130, "Interrupted."), (signal.SIGTERM, 143, "Terminated.")])
def test_signal_during_build_is_one_line_and_leaves_nothing(big_export, tmp_path, sig, code, line):
    env = _env(tmp_path)
    cache = tmp_path / "cache"
    proc = subprocess.Popen(NSYSQL + ["summarize", str(big_export)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    _wait_for_build(cache, proc)
    time.sleep(0.3)  # inside DuckDB's work, not only at its start
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    assert err.strip() == line and out == ""
    assert list(cache.iterdir()) == []  # no .building-* file or its .wal
    assert list(Path(env["TMPDIR"]).iterdir()) == []  # no nsysql-* directory


def test_closed_stdout_is_quiet_exit_141(export_files, tmp_path):
    path = next(iter(export_files.values()))
    for args in (["layers", str(path)], ["summarize", str(path)], ["report", "cuda_gpu_kern_sum", str(path), "-f", "csv"],
                 ["reports"]):
        read, write = os.pipe()
        os.close(read)  # the reader is gone before the first write: every write is EPIPE
        res = subprocess.run(NSYSQL + args, env=_env(tmp_path), stdout=write, stderr=subprocess.PIPE, text=True)
        os.close(write)
        assert (res.returncode, res.stderr) == (141, ""), args


def test_pipe_into_head(export_files, tmp_path):
    path = next(iter(export_files.values()))
    res = subprocess.run(f"{sys.executable} -m nsysql.cli.app layers '{path}' | head -1; echo \"rc=${{PIPESTATUS[0]}}\"",
                         shell=True, executable="/bin/bash", env=_env(tmp_path), capture_output=True, text=True)
    assert res.stderr == ""
    first, status = res.stdout.splitlines()
    assert first and status in ("rc=0", "rc=141")  # 0 when everything fit in the pipe before head left


def test_unforeseen_error_is_one_line_and_debug_is_the_real_traceback_only(tmp_path):
    bad = tmp_path / "t.sqlite.xz"
    bad.write_bytes(b"\xfd7zXZ\x00\x00\x04\xe6\xd6\xb4F")  # an .xz header, then nothing: truncated
    res = subprocess.run(NSYSQL + ["summarize", str(bad)], env=_env(tmp_path), capture_output=True, text=True)
    assert res.returncode == 1 and len(res.stderr.strip().splitlines()) == 1 and "xz" in res.stderr
    boom = tmp_path / "boom.py"  # an exception nsysql does not anticipate, raised inside a command
    boom.write_text("import sys, nsysql.answers.multi as m\n"
                    "m.expand = lambda paths: (_ for _ in ()).throw(ZeroDivisionError('boom'))\n"
                    "from nsysql.cli.app import main\nsys.argv[0] = 'nsysql'\nmain()\n")
    res = subprocess.run([sys.executable, str(boom), "summarize", "x.sqlite"], env=_env(tmp_path),
                         capture_output=True, text=True, cwd=REPO)
    assert res.returncode == 1
    assert res.stderr.strip().splitlines() == ["Error: boom (ZeroDivisionError); rerun with --debug for the traceback"]
    res = subprocess.run([sys.executable, str(boom), "summarize", "x.sqlite", "--debug"], env=_env(tmp_path),
                         capture_output=True, text=True, cwd=REPO)
    assert res.returncode == 1
    assert res.stderr.count("Traceback") == 1 and res.stderr.strip().endswith("ZeroDivisionError: boom")
    assert "During handling" not in res.stderr


def test_sigkill_leftovers_are_removed_by_the_next_run(big_export, export_files, tmp_path):
    """SIGKILL cannot be caught: its debris stays, named with the dead pid, and the next run removes it."""
    env = _env(tmp_path)
    cache = tmp_path / "cache"
    proc = subprocess.Popen(NSYSQL + ["summarize", str(big_export)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    _wait_for_build(cache, proc)
    proc.kill()
    proc.wait()
    debris = [p for p in cache.iterdir() if p.name.startswith(".building-")]
    debris += list(Path(env["TMPDIR"]).iterdir())
    assert debris and all(f"-{proc.pid}@" in p.name or f"{proc.pid}@" in p.name for p in debris)
    res = subprocess.run(NSYSQL + ["steps", str(export_files["gpt-tiny-forward"])], env=env, capture_output=True,
                         text=True)
    assert res.returncode == 0, res.stderr
    assert not [p for p in debris if p.exists()]
