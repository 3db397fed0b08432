"""A .nsys-rep given as an export (nsysql/store/nsys_rep.py), with a stand-in `nsys` script: the call path that the GPU
machine runs with the real nsys (docs/getting-started.md). The stand-in answers `--version`, and `export` by
copying a real SQLite export to the `-o` path (or failing, for a report whose bytes say `broken`), logging every
call, so the test sees which nsys ran, with what arguments, and how often. Its messages are the real nsys's: on the
GPU machine, nsys 2025.3.1 answered a report cut to 1 MB with "Exportation error: Section Table Reference magic
number mismatch." and exit 1, and exported ddp2.nsys-rep (--type sqlite --include-blobs=true) to a SQLite file
that gives the same kernels and comm CSVs as ../shared's export-include-blobs.sqlite."""
from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nsysql.cli.app import app
from nsysql.store import nsys_rep

STAND_IN = '''#!{python}
import os, shutil, sys
args = sys.argv[1:]
with open(os.environ["STANDIN_LOG"], "a") as log:
    log.write(" ".join(args) + "\\n")
if args == ["--version"]:
    print("NVIDIA Nsight Systems version " + os.environ.get("STANDIN_VERSION", "2025.3.1.90-253135822126v0"))
    sys.exit(0)
out, report = args[args.index("-o") + 1], args[-1]
print("Processing events...")
if b"broken" in open(report, "rb").read():
    open(out, "wb").write(b"half an export")  # what an export cut short leaves
    print("Exportation error: Section Table Reference magic number mismatch.")  # nsys 2025.3.1, a cut report
    sys.exit(1)
shutil.copyfile(os.environ["STANDIN_SQLITE"], out)
'''


@pytest.fixture
def stand_in(tmp_path, export_files, monkeypatch):
    """(folder holding `nsys`, the SQLite export it writes, its call log)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    nsys = bin_dir / "nsys"
    nsys.write_text(STAND_IN.format(python=sys.executable))
    nsys.chmod(nsys.stat().st_mode | stat.S_IXUSR)
    sqlite = export_files["gpt-tiny-forward"]
    log = tmp_path / "calls.log"
    monkeypatch.setenv("STANDIN_SQLITE", str(sqlite))
    monkeypatch.setenv("STANDIN_LOG", str(log))
    monkeypatch.delenv("NSYS", raising=False)
    monkeypatch.setattr(nsys_rep, "INSTALL_GLOBS", ())  # only the nsys the test names
    monkeypatch.setattr(nsys_rep, "_chosen", None)
    return bin_dir, sqlite, log


def _report(tmp_path: Path, content: bytes = b"NVIDIA Tegra Profiler Report, a stand-in") -> Path:
    folder = tmp_path / "reports"
    folder.mkdir(exist_ok=True)
    report = folder / "run.nsys-rep"
    report.write_bytes(content)
    return report


def _run(args: list[str], env: dict | None = None):
    res = CliRunner().invoke(app, args, env={"NSYSQL_AHEAD": "off", "COLUMNS": "100", **(env or {})})
    assert "Traceback" not in res.output, res.output
    return res


def _exports(log: Path) -> list[str]:
    return [line for line in log.read_text().splitlines() if line.startswith("export")] if log.exists() else []


def test_report_is_exported_once_into_the_cache(stand_in, tmp_path):
    bin_dir, sqlite, log = stand_in
    report = _report(tmp_path)
    cache = tmp_path / "cache"
    want = _run(["kernels", "-f", "csv", str(sqlite), "--cache-dir", str(tmp_path / "other")])
    got = _run(["kernels", "-f", "csv", str(report), "--cache-dir", str(cache), "--nsys", str(bin_dir / "nsys")])
    assert got.exit_code == 0 and want.exit_code == 0, got.stderr
    assert got.stdout == want.stdout and len(got.stdout.splitlines()) > 2
    [call] = _exports(log)
    args = call.split()
    assert args[:3] == ["export", "--type", "sqlite"] and "--include-blobs=true" in args
    out = Path(args[args.index("-o") + 1])
    assert out.parent.parent == cache and out.parent.name.startswith(".building-")  # written aside, then renamed
    assert sorted(p.name for p in report.parent.iterdir()) == ["run.nsys-rep"]  # nothing beside the report
    assert [p.name for p in cache.glob("run-*.sqlite")]  # the export, kept in the cache
    assert not [p for p in cache.iterdir() if p.name.startswith(".building-")]
    # again: the cached export is read, nsys only asked its version
    again = _run(["steps", "-f", "csv", str(report), "--cache-dir", str(cache), "--nsys", str(bin_dir / "nsys")])
    assert again.exit_code == 0 and len(_exports(log)) == 1
    # another nsys version exports again: its export may differ
    other = _run(["kernels", "-f", "csv", str(report), "--cache-dir", str(cache)],
                 env={"NSYS": str(bin_dir / "nsys"), "STANDIN_VERSION": "2025.4.1.1-1"})
    assert other.exit_code == 0 and other.stdout == want.stdout and len(_exports(log)) == 2


def test_nsys_is_found_on_path_and_in_nsys_env(stand_in, tmp_path, monkeypatch):
    bin_dir, _, log = stand_in
    report = _report(tmp_path)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    assert nsys_rep.find() == bin_dir / "nsys"
    monkeypatch.setenv("NSYS", str(bin_dir))  # a folder holding nsys does too
    assert nsys_rep.find() == bin_dir / "nsys"
    res = _run(["kernels", "-f", "csv", str(report), "--cache-dir", str(tmp_path / "cache")])
    assert res.exit_code == 0 and len(_exports(log)) == 1


def test_without_nsys_one_line_names_the_command(stand_in, tmp_path, monkeypatch):
    report = _report(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    res = _run(["kernels", str(report), "--cache-dir", str(tmp_path / "cache")], env={"PATH": str(tmp_path / "empty")})
    assert res.exit_code == 1
    [line] = res.stderr.splitlines()
    assert line.startswith("Error: ") and "no nsys was found" in line
    assert "nsys export --type sqlite --include-blobs=true -o run.sqlite run.nsys-rep" in line
    bad = _run(["kernels", str(report), "--nsys", str(tmp_path / "nowhere" / "nsys")])
    assert bad.exit_code == 1 and len(bad.stderr.splitlines()) == 1 and "no nsys program there" in bad.stderr


def test_a_failed_export_leaves_nothing(stand_in, tmp_path):
    bin_dir, _, log = stand_in
    report = _report(tmp_path, b"broken report")
    cache = tmp_path / "cache"
    res = _run(["summarize", str(report), "--cache-dir", str(cache), "--nsys", str(bin_dir / "nsys")])
    assert res.exit_code == 1 and len(_exports(log)) == 1
    [line] = res.stderr.splitlines()
    assert "nsys could not export this report (Exportation error: Section Table Reference magic number" in line
    assert "nsys export --type sqlite --include-blobs=true" in line
    assert not list(cache.glob("*.sqlite")) and not list(cache.glob(".building-*"))  # no export, whole or half
    assert sorted(p.name for p in report.parent.iterdir()) == ["run.nsys-rep"]


def test_an_interrupted_export_leaves_nothing(stand_in, tmp_path, monkeypatch):
    """Ctrl-C while nsys runs: nsys is stopped and its half-written export removed."""
    bin_dir, _, _ = stand_in
    report = _report(tmp_path)
    cache = tmp_path / "cache"
    cache.mkdir()

    def interrupted(command):
        Path(command[command.index("-o") + 1]).write_bytes(b"half")
        raise KeyboardInterrupt
    monkeypatch.setattr(nsys_rep, "_run", interrupted)
    monkeypatch.setattr(nsys_rep, "_chosen", str(bin_dir / "nsys"))
    with pytest.raises(KeyboardInterrupt):
        nsys_rep.exported(report, cache)
    assert list(cache.iterdir()) == []
