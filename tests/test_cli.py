"""The command line, driven through typer's CliRunner."""
from __future__ import annotations

import hashlib
import json

import pytest
from typer.testing import CliRunner

from nsysql.cli.app import app

runner = CliRunner()


def commands():
    import typer.main
    return sorted(typer.main.get_command(app).commands)


@pytest.mark.parametrize("cmd", commands())
def test_every_command_has_help(cmd):
    res = runner.invoke(app, [cmd, "--help"])
    assert res.exit_code == 0
    assert "Usage" in res.output and len(res.output) > 100


def test_reports_lists_every_report_once():
    import nsysql
    res = runner.invoke(app, ["reports"])
    assert res.exit_code == 0
    listed = [line.split()[0] for line in res.output.strip().splitlines()]
    assert sorted(listed) == sorted(nsysql.reports()) and len(listed) == 29


def test_report_csv_to_file_matches_nvidia(export_files, cache_dir, tmp_path):
    ident, path = next(iter(export_files.items()))
    from conftest import golden_exports
    csv_dir = {i: d for i, _, d in golden_exports()}[ident]
    out = tmp_path / "k.csv"
    res = runner.invoke(app, ["report", "cuda_gpu_kern_sum", str(path), "--format", "csv", "-o", str(out),
                              "--cache-dir", str(cache_dir)])
    assert res.exit_code == 0, res.output
    assert out.read_text() == (csv_dir / "nsys-stats_cuda_gpu_kern_sum.csv").read_text()


@pytest.mark.parametrize("fmt", ["table", "markdown", "json"])
def test_summarize_formats(export_files, cache_dir, fmt):
    path = next(iter(export_files.values()))
    res = runner.invoke(app, ["summarize", str(path), "--format", fmt, "--top", "3", "--cache-dir", str(cache_dir)])
    assert res.exit_code == 0, res.output
    if fmt == "json":
        doc = json.loads(res.output)
        assert {"export", "capture", "overview", "findings"} <= set(doc)
        assert doc["capture"]["kernels"] > 0
        assert len(doc["overview"]["top_kernels"]) == 3
    else:
        assert "Top kernels" in res.output
        assert "Step time breakdown" in res.output


def test_summarize_full_adds_capture_wide_tables_with_stable_keys(export_files, cache_dir):
    path = export_files["gpt-tiny-train-fp32"]
    res = runner.invoke(app, ["summarize", str(path), "--full", "-f", "json", "--cache-dir", str(cache_dir)])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert {"gpu_utilization", "ranges", "kernels", "launch_overhead", "memory", "gaps", "steps", "layers",
            "coverage"} <= set(doc)
    assert list(doc)[-1] == "findings"
    text = runner.invoke(app, ["summarize", str(path), "--full", "--cache-dir", str(cache_dir)],
                         env={"COLUMNS": "80"}).output
    assert "capture-wide" in text and max(len(line) for line in text.splitlines()) <= 80


def test_summarize_rejects_csv(export_files, cache_dir):
    path = next(iter(export_files.values()))
    res = runner.invoke(app, ["summarize", str(path), "--format", "csv", "--cache-dir", str(cache_dir)])
    assert res.exit_code == 1
    assert res.output.startswith("Error: ")


@pytest.mark.parametrize("make,needle", [
    (lambda d: d / "missing.sqlite", "no such file"),
    (lambda d: (d / "t.sqlite").write_text("hello") and d / "t.sqlite", "not a SQLite file"),
    (lambda d: d, "is a directory"),
])
def test_bad_input_is_one_line_exit_1(tmp_path, make, needle):
    path = make(tmp_path)
    res = runner.invoke(app, ["summarize", str(path), "--cache-dir", str(tmp_path / "c")])
    assert res.exit_code == 1
    assert needle in res.output
    assert len(res.output.strip().splitlines()) == 1
    assert "Traceback" not in res.output


def test_unknown_report(export_files, cache_dir):
    path = next(iter(export_files.values()))
    res = runner.invoke(app, ["report", "nope", str(path), "--cache-dir", str(cache_dir)])
    assert res.exit_code == 1 and "nsysql reports" in res.output


def test_debug_shows_traceback(tmp_path):
    res = runner.invoke(app, ["summarize", str(tmp_path / "x.sqlite"), "--debug"])
    assert res.exit_code != 0 and res.exception is not None


def test_input_untouched_and_nothing_written_beside_it(export_files, tmp_path):
    import shutil
    src = next(iter(export_files.values()))
    d = tmp_path / "run"
    d.mkdir()
    path = d / "run.sqlite"
    shutil.copyfile(src, path)
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    res = runner.invoke(app, ["summarize", str(path), "--cache-dir", str(tmp_path / "cache")])
    assert res.exit_code == 0, res.output
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in d.iterdir()) == ["run.sqlite"]


def test_unwritable_output_is_one_line(export_files, cache_dir, tmp_path):
    path = next(iter(export_files.values()))
    res = runner.invoke(app, ["report", "nvtx_sum", str(path), "--format", "csv",
                              "-o", str(tmp_path / "no" / "such" / "dir" / "x.csv"), "--cache-dir", str(cache_dir)])
    assert res.exit_code == 1
    assert res.output.startswith("Error: ") and len(res.output.strip().splitlines()) == 1
    assert "Traceback" not in res.output


@pytest.mark.parametrize("args", [["layers", "x.sqlite", "--depth", "-1"], ["db", "x.sqlite"], ["--bogus"],
                                  ["overhead", "x.sqlite", "--by", "foo"], ["diff", "x.sqlite"]])
def test_usage_errors_are_one_line_exit_1(args):
    """A missing option, a bad choice or an out-of-range value: one `Error:` line naming the --help to read."""
    res = runner.invoke(app, args)
    assert res.exit_code == 1
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and "--help`" in lines[0]
    assert "Traceback" not in res.output


@pytest.mark.parametrize("command", ["summarize", "overview", "findings"])
def test_answer_commands_fit_80_columns_on_every_export(export_files, cache_dir, command):
    for ident, path in export_files.items():
        res = runner.invoke(app, [command, str(path), "--cache-dir", str(cache_dir)], env={"COLUMNS": "80"})
        assert res.exit_code == 0, (ident, res.output)
        wide = [line for line in res.stdout.splitlines() if len(line) > 80]
        assert not wide, (ident, wide)


def test_summarize_fits_one_100x50_screen_above_the_findings(export_files, cache_dir):
    res = runner.invoke(app, ["summarize", str(export_files["gpt-tiny-train-fp32"]), "--cache-dir", str(cache_dir)],
                        env={"COLUMNS": "100"})
    lines = res.stdout.splitlines()
    findings_at = next(i for i, line in enumerate(lines) if line.startswith("Findings"))
    assert findings_at <= 50 and max(len(line) for line in lines[:findings_at]) <= 100


def test_summarize_json_contract(export_files, cache_dir):
    path = str(export_files["cnn-dataloader-train"])
    doc = json.loads(runner.invoke(app, ["summarize", path, "-f", "json", "--cache-dir", str(cache_dir)]).stdout)
    alone = json.loads(runner.invoke(app, ["findings", path, "-f", "json", "--cache-dir", str(cache_dir)]).stdout)
    assert doc["findings"] == alone and [f["recoverable_ns"] for f in alone] == sorted(
        (f["recoverable_ns"] for f in alone), reverse=True)
    keys = {"kernel_ns", "comm_transfer_ns", "comm_wait_ns", "memcpy_ns", "memset_ns", "runtime_ns", "dataloader_ns",
            "cpu_exec_ns", "other_ns"}
    for step in doc["overview"]["steps"]:
        assert set(step["breakdown"]) == keys and sum(step["breakdown"].values()) == step["wall_ns"]
    for gpu in doc["overview"]["gpus"]:
        assert {"device_id", "utilization_pct", "sm_efficiency_pct", "achieved_occupancy_pct", "tensor_core_pct"} <= set(gpu)
    # the headline is the steady state: GPU utilization within the steps, not over the whole capture
    assert doc["overview"]["gpus"][0]["utilization_pct"] > 5 * doc["capture"]["capture_gpu_busy_pct"]


def test_sql_starting_with_a_comment(export_files, cache_dir):
    path = str(export_files["gpt-tiny-forward"])
    bad = runner.invoke(app, ["sql", path, "-- note\nSELECT 1 AS x", "--cache-dir", str(cache_dir)])
    assert bad.exit_code == 1 and bad.output.count("\n") == 1 and "put -- before" in bad.output
    ok = runner.invoke(app, ["sql", path, "--cache-dir", str(cache_dir), "-f", "csv", "--", "-- note\nSELECT 1 AS x"])
    assert ok.exit_code == 0 and ok.stdout == "x\n1\n"


def test_summarize_without_runtime_says_what_it_cannot_do(export_files, tmp_path):
    """Kernels but no CUDA API table: the steps, breakdown and kernels are still there, the parts that need the
    launching calls are left out with one sentence saying why (not zeros)."""
    import shutil
    import sqlite3
    path = tmp_path / "noruntime.sqlite"
    shutil.copyfile(export_files["gpt-tiny-train-fp32"], path)
    with sqlite3.connect(path) as db:
        db.execute("DROP TABLE CUPTI_ACTIVITY_KIND_RUNTIME")
    res = runner.invoke(app, ["summarize", str(path), "-f", "json", "--cache-dir", str(tmp_path / "c")])
    assert res.exit_code == 0, res.output
    ov = json.loads(res.stdout)["overview"]
    assert ov["top_ops"] == [] and ov["top_api"] == [] and ov["top_kernels"]
    assert any("CUPTI_ACTIVITY_KIND_RUNTIME" in n for n in ov["notes"])
    assert ov["steps"] and sum(ov["steps"][0]["breakdown"].values()) == ov["steps"][0]["wall_ns"]


def test_version():
    import nsysql
    res = runner.invoke(app, ["--version"])
    assert res.exit_code == 0 and res.stdout == f"nsysql {nsysql.__version__}\n"


def test_python_dash_m_runs_the_cli():
    import subprocess
    import sys
    from pathlib import Path

    import nsysql
    root = Path(nsysql.__file__).resolve().parent.parent
    res = subprocess.run([sys.executable, "-m", "nsysql", "--version"], capture_output=True, text=True, cwd=root)
    assert res.returncode == 0 and res.stdout == f"nsysql {nsysql.__version__}\n", res.stderr
    res = subprocess.run([sys.executable, "-m", "nsysql", "no-such-command"], capture_output=True, text=True, cwd=root)
    assert res.returncode == 1 and res.stderr.startswith("Error: No such command"), res.stderr
