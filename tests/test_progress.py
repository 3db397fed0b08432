"""The progress line (nsysql/core/progress.py): only on a terminal, only after a second, erased at the end; the
stage log that bench/ reads."""
from __future__ import annotations

import io
import time

from typer.testing import CliRunner

from nsysql.cli.app import app
from nsysql.core import progress

from conftest import FIXTURES

EXPORT = FIXTURES / "gpt-tiny-train-w18s3" / "export.sqlite.xz"


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_line_names_running_and_finished_stages():
    p = progress.Progress("building the cache", stream=io.StringIO(), enabled=False, total=21)
    p.begin("kernel")
    p.begin("osrt")
    p.end("kernel", 1_699_500)
    line = p.line(200)
    assert line.startswith("nsysql: building the cache ") and "osrt" in line and "done 1/21: kernel 1.7M rows" in line
    assert len(p.line(30)) <= 29  # never wider than the terminal


def test_drawn_on_a_terminal_after_the_delay_and_erased(monkeypatch):
    monkeypatch.setattr(progress, "DELAY_S", 0.0)
    monkeypatch.setattr(progress, "TICK_S", 0.01)
    term = Terminal()
    p = progress.Progress("summarizing", stream=term)
    p.begin("findings.launch_bound")
    time.sleep(0.2)
    p.close()
    out = term.getvalue()
    assert "findings.launch_bound" in out and out.endswith("\r\x1b[K")


def test_silent_when_not_a_terminal_or_quick(monkeypatch):
    pipe = io.StringIO()
    p = progress.Progress("summarizing", stream=pipe)
    p.begin("x")
    time.sleep(0.05)
    p.close()
    assert pipe.getvalue() == ""
    term = Terminal()  # a terminal, but the work ends before the one-second delay
    p = progress.Progress("summarizing", stream=term)
    p.close()
    assert term.getvalue() == ""


def test_stage_log_records_the_build_and_the_summary(tmp_path, monkeypatch):
    log = tmp_path / "stages.tsv"
    monkeypatch.setenv(progress.STAGE_LOG_ENV, str(log))
    res = CliRunner().invoke(app, ["summarize", str(EXPORT), "--cache-dir", str(tmp_path / "cache")])
    assert res.exit_code == 0, res.output
    rows = [line.split("\t") for line in log.read_text().splitlines()]
    build = {r[1]: r for r in rows if r[0] == "building the cache"}
    assert int(build["kernel_int"][3]) > 0 and float(build["nvtx_range"][2]) >= 0
    assert any(r[0] == "summarizing" and r[1] == "analysis.step_breakdown" for r in rows)
    assert progress._active is None  # the line is closed after the command
