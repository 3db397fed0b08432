"""Several exports opened at once (nsysql/store/open_many.py): in parallel up to NSYSQL_JOBS (or what cores and memory
allow), under one progress line, results in the order given, a failure returned for the caller to skip and name."""
from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nsysql.cli.app import app
from nsysql.core import progress
from nsysql.errors import NsysqlError
from nsysql.store import open_many


def test_jobs_follow_nsysql_jobs(monkeypatch):
    monkeypatch.setenv("NSYSQL_JOBS", "3")
    assert open_many.jobs(8) == 3 and open_many.jobs(2) == 2
    monkeypatch.setenv("NSYSQL_JOBS", "0")
    with pytest.raises(NsysqlError, match="NSYSQL_JOBS='0' is not a positive whole number"):
        open_many.jobs(2)
    monkeypatch.delenv("NSYSQL_JOBS")
    assert 1 <= open_many.jobs(64) <= 64


def test_default_is_bound_by_cores_and_memory(monkeypatch):
    monkeypatch.delenv("NSYSQL_JOBS", raising=False)
    monkeypatch.setattr(open_many, "build_workers", lambda: 2)
    monkeypatch.setattr(open_many.os, "cpu_count", lambda: 16)
    monkeypatch.setattr(open_many, "available_memory", lambda: 64 << 30)
    assert open_many.jobs(100) == 8  # 16 cores / 2 statements an open
    monkeypatch.setattr(open_many, "available_memory", lambda: 20 << 30)
    assert open_many.jobs(100) == 2  # 20 GB / (2 statements x 4000 MB)
    monkeypatch.setattr(open_many, "available_memory", lambda: 1 << 30)
    assert open_many.jobs(100) == 1


def test_opens_run_at_once_in_order_under_one_line(monkeypatch):
    """Two opens wait for each other (a barrier): they can only both finish if they run at the same time."""
    monkeypatch.setenv("NSYSQL_JOBS", "2")
    barrier = threading.Barrier(2, timeout=30)
    lines = []

    def opener(path: Path):
        lines.append(progress._active)
        if path.name == "bad":
            raise NsysqlError("bad: not an export")
        barrier.wait()
        return f"opened {path.name}"

    got = open_many.open_all([Path("a"), Path("bad"), Path("b")], ["a", "bad", "b"], opener)
    assert got[0] == "opened a" and got[2] == "opened b"
    assert isinstance(got[1], NsysqlError) and str(got[1]) == "bad: not an export"
    assert len({id(line) for line in lines}) == 1 and lines[0].title == "opening 3 exports"


def test_several_exports_from_the_command_line(export_files, tmp_path):
    """Three exports (one not an export) through `kernels`: both good ones answer, the bad one is named."""
    good = export_files["gpt-tiny-forward"]
    a, b = tmp_path / "run_a.sqlite", tmp_path / "run_b.sqlite"
    shutil.copyfile(good, a)
    shutil.copyfile(good, b)
    bad = tmp_path / "run_c.sqlite"
    bad.write_text("not an export")
    res = CliRunner().invoke(app, ["kernels", "-f", "csv", str(a), str(bad), str(b), "--cache-dir",
                                   str(tmp_path / "cache")], env={"NSYSQL_JOBS": "2", "NSYSQL_AHEAD": "off"})
    assert res.exit_code == 0, res.output
    rows = res.stdout.splitlines()[1:]
    assert {r.split(",")[0] for r in rows} == {"run_a", "run_b"}
    assert len([r for r in rows if r.startswith("run_a,")]) == len([r for r in rows if r.startswith("run_b,")]) > 0
    assert res.stderr.splitlines() == ["note: skipped run_c: " + res.stderr.split("run_c: ", 1)[1].strip()]
    assert "not a SQLite file" in res.stderr
