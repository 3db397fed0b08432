"""Odd export paths: not a regular file, glob characters in a real name, very long or non-UTF-8 names, loops.
Each is a correct result or one `Error:` line (exit 1) at once; nothing hangs."""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nsysql.answers import multi
from nsysql.cli.app import app
from nsysql.store import inputs

NSYSQL = [sys.executable, "-m", "nsysql.cli.app"]


def _run(args, tmp_path, timeout=60):
    """A real process with a deadline: a hang fails the test instead of blocking the suite."""
    env = {**os.environ, "NSYSQL_CACHE_DIR": str(tmp_path / "cache"), "TMPDIR": str(tmp_path)}
    return subprocess.run(NSYSQL + args, env=env, capture_output=True, timeout=timeout)


def _one_error_line(res, needle: str):
    err = res.stderr.decode() if isinstance(res.stderr, bytes) else res.stderr
    assert res.returncode == 1, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and needle in lines[0], err


@pytest.mark.parametrize("kind", ["fifo", "socket", "device"])
@pytest.mark.parametrize("command", [["summarize"], ["kernels", "--no-cache"]])
def test_not_a_regular_file_is_refused_at_once(tmp_path, kind, command):
    if kind == "fifo":
        path = tmp_path / "run.sqlite"
        os.mkfifo(path)  # opening it for reading would block until a writer comes: never
        needle = "FIFO"
    elif kind == "socket":
        path = tmp_path / "s.sqlite"
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(path))
        needle = "socket"
    else:
        path, needle = Path("/dev/null"), "character device"
    res = _run(command + [str(path)], tmp_path, timeout=30)
    _one_error_line(res, needle)
    assert not (tmp_path / "cache").exists()  # refused before anything was made


def test_existing_path_is_literal_even_with_glob_characters(export_files, tmp_path):
    shutil.copy(export_files["gpt-tiny-forward"], tmp_path / "run[1].sqlite")
    shutil.copy(export_files["gpt-tiny-train-fp32"], tmp_path / "run1.sqlite")
    literal = tmp_path / "run[1].sqlite"
    assert multi.expand([literal]) == [literal]

    def kernels(path):
        res = CliRunner().invoke(app, ["kernels", str(path), "-f", "json", "--cache-dir", str(tmp_path / "c")])
        assert res.exit_code == 0, res.output
        return len(json.loads(res.stdout))

    forward = kernels(export_files["gpt-tiny-forward"])
    assert forward != kernels(export_files["gpt-tiny-train-fp32"])
    assert kernels(literal) == forward  # not run1.sqlite, which `run[1].sqlite` matches as a pattern
    # a path that does not exist is still a pattern
    assert multi.expand([tmp_path / "run?.sqlite"]) == [tmp_path / "run1.sqlite"]
    literal.unlink()
    assert multi.expand([literal]) == [tmp_path / "run1.sqlite"]


def test_a_247_byte_name_gets_a_short_cache_name(export_files, tmp_path):
    long_a = tmp_path / ("a" * 240 + ".sqlite")
    long_b = tmp_path / ("a" * 239 + "b.sqlite")
    assert len(long_a.name) == 247
    for p in (long_a, long_b):
        shutil.copy(export_files["gpt-tiny-forward"], p)
    res = CliRunner().invoke(app, ["summarize", str(long_a), str(long_b), "--cache-dir", str(tmp_path / "c")])
    assert res.exit_code == 0, res.output
    names = [p.name for p in (tmp_path / "c").iterdir() if p.suffix == ".duckdb"]
    assert len(names) == 2 and max(len(n) for n in names) < 100
    assert inputs.safe_name("a" * 240) != inputs.safe_name("a" * 239 + "b")


def test_non_utf8_name_is_analysed_and_printed_back(export_files, tmp_path):
    name = os.fsdecode(b"caf\xe9-run.sqlite")
    shutil.copy(export_files["gpt-tiny-forward"], tmp_path / name)
    res = _run(["summarize", str(tmp_path / name)], tmp_path)
    assert res.returncode == 0, res.stderr
    assert b"caf\xe9-run.sqlite" in res.stdout  # the name's own bytes, as ls prints them
    res = _run(["kernels", str(tmp_path / name), "-f", "json"], tmp_path)
    assert res.returncode == 0 and json.loads(res.stdout)
    missing = os.fsdecode(b"nowhere-\xff.sqlite")
    _one_error_line(_run(["summarize", str(tmp_path / missing)], tmp_path), "no such file")


def test_symlink_loop_is_one_line(tmp_path):
    (tmp_path / "a.sqlite").symlink_to(tmp_path / "b.sqlite")
    (tmp_path / "b.sqlite").symlink_to(tmp_path / "a.sqlite")
    _one_error_line(_run(["summarize", str(tmp_path / "a.sqlite")], tmp_path), "symbolic links")
    _one_error_line(_run(["steps", str(tmp_path / "a.sqlite"), str(tmp_path / "b.sqlite")], tmp_path),
                    "symbolic links")
