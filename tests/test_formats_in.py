"""Parquet and Arrow folders as inputs (nsysql/store/formats_in.py): the shared formats sample (one 2-GPU DDP run
exported by nsys 2025.3.1 as SQLite, parquetdir and arrowdir) gives identical outputs from each, and nothing is
written beside the folders. nsys's single-file `--type arrow` export (`.arrows`) is made here from the arrowdir:
its tables' streams one after another, as nsys writes it (on the GPU machine, 54 of the 55 streams of a real
`.arrows` were byte for byte the arrowdir's files of the same report; docs/getting-started.md). Skipped where
../shared is absent."""
from __future__ import annotations

import json
import lzma
import shutil
import tarfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

import nsysql
from nsysql.cli.app import app

FORMATS = Path(__file__).resolve().parents[1] / ".." / "shared" / "samples" / "ddp-2gpu" / "formats"
pytestmark = pytest.mark.skipif(not (FORMATS / "parquetdir.tar.xz").is_file(),
                                reason="../shared/samples/ddp-2gpu/formats is absent")

COMMANDS = {
    "summarize-json": ["summarize", "-f", "json"],
    "kernels-csv": ["kernels", "-f", "csv"],
    "comm-csv": ["comm", "-f", "csv"],
    "steps-csv": ["steps", "-f", "csv"],
}


def _unpacked(tmp: Path) -> dict[str, Path]:
    out = {}
    for kind in ("parquetdir", "arrowdir"):
        with tarfile.open(FORMATS / f"{kind}.tar.xz") as tar:
            tar.extractall(tmp / kind, filter="data")
        out[kind] = tmp / kind / "ddp2"
    # nsys's help calls arrowdir's files Arrow IPC *files*; 2025.3.1 writes streams: the file format is read too
    import polars as pl
    out["arrowdir-files"] = tmp / "arrowdir-files" / "ddp2"
    out["arrowdir-files"].mkdir(parents=True)
    for stream in out["arrowdir"].iterdir():
        pl.read_ipc_stream(stream).write_ipc(out["arrowdir-files"] / stream.name)
    out["arrow"] = tmp / "arrow" / "ddp2.arrows"
    out["arrow"].parent.mkdir()
    out["arrow"].write_bytes(b"".join(p.read_bytes() for p in sorted(out["arrowdir"].iterdir())))
    out["sqlite"] = tmp / "sqlite" / "ddp2.sqlite"
    out["sqlite"].parent.mkdir()
    with lzma.open(FORMATS / "export.sqlite.xz") as src, out["sqlite"].open("wb") as dst:
        shutil.copyfileobj(src, dst)
    return out


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> dict[str, Path]:
    return _unpacked(tmp_path_factory.mktemp("formats"))


def _listing(folder: Path) -> dict[str, tuple[int, int]]:
    return {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(folder.iterdir())}


def _run(args: list[str], path: Path, cache: Path) -> tuple[int, str, str]:
    res = CliRunner().invoke(app, args + [str(path), "--cache-dir", str(cache)],
                             env={"NSYSQL_AHEAD": "off", "COLUMNS": "100"})
    assert "Traceback" not in res.output, res.output
    # an error line names the input (its file name), summarize's JSON too (`export`): the same once taken out
    stdout = res.stdout
    if args[0] == "summarize" and res.exit_code == 0:
        answer = json.loads(stdout)
        assert answer.pop("export") == str(path)
        stdout = json.dumps(answer, indent=1)
    return res.exit_code, stdout, res.stderr.replace(str(path), "EXPORT").replace(path.name, "EXPORT")


@pytest.fixture(scope="module")
def outputs(sources, tmp_path_factory) -> dict[str, dict[str, tuple[int, str, str]]]:
    before = {kind: _listing(path.parent) for kind, path in sources.items()}
    out: dict[str, dict] = {}
    for kind, path in sources.items():
        cache = tmp_path_factory.mktemp(f"cache-{kind}")
        runs = {name: _run(args, path, cache) for name, args in COMMANDS.items()}
        for report in nsysql.reports():
            runs[f"report {report}"] = _run(["report", report, "-f", "csv"], path, cache)
        out[kind] = runs
    after = {kind: _listing(path.parent) for kind, path in sources.items()}
    assert after == before, "something was written beside an export"
    return out


@pytest.mark.parametrize("kind", ["parquetdir", "arrowdir", "arrowdir-files", "arrow"])
def test_every_output_is_the_sqlite_exports(outputs, kind):
    sqlite, other = outputs["sqlite"], outputs[kind]
    assert sqlite.keys() == other.keys()
    differ = [name for name in sqlite if sqlite[name] != other[name]]
    assert not differ, f"{kind} differs from SQLite in: {', '.join(differ)}"


def test_the_outputs_compared_have_rows(outputs):
    """Not a comparison of empty answers: the sample has kernels, steps, NCCL collectives, and most reports."""
    sqlite = outputs["sqlite"]
    assert all(sqlite[name][0] == 0 for name in COMMANDS), {n: sqlite[n][2] for n in COMMANDS}
    assert json.loads(sqlite["summarize-json"][1])
    for name in ("kernels-csv", "comm-csv", "steps-csv"):
        assert len(sqlite[name][1].splitlines()) > 2, name
    answered = [name for name in sqlite if name.startswith("report") and sqlite[name][0] == 0]
    assert len(answered) >= 15, answered


def test_rows_match_the_raw_tables(sources, tmp_path):
    """The values the folders give equal the SQLite export's, table by table, row by row (rowid order), read with
    sqlite3 and Polars themselves: the unsigned columns of Parquet and Arrow wrap round as SQLite stores them."""
    import sqlite3

    import polars as pl
    con = sqlite3.connect(f"file:{sources['sqlite']}?mode=ro", uri=True)
    table = "CUPTI_ACTIVITY_KIND_KERNEL"
    columns = [r[1] for r in con.execute(f"PRAGMA table_info({table})")]
    rows = con.execute(f"SELECT rowid, * FROM {table} ORDER BY rowid").fetchall()
    frame = pl.read_ipc_stream(sources["arrowdir"] / f"{table}.arrow")
    assert frame.columns == columns and frame.height == len(rows)
    with nsysql.open(sources["arrowdir"], cache_dir=tmp_path / "a") as ex, \
            nsysql.open(sources["parquetdir"], cache_dir=tmp_path / "p") as px:
        for handle in (ex, px):
            got = handle.sql("SELECT kernel_id, start_ns, end_ns, device_id, stream_id FROM kernel ORDER BY kernel_id")
            want = [(r[0], r[1 + columns.index("start")], r[1 + columns.index("end")],
                     r[1 + columns.index("deviceId")], r[1 + columns.index("streamId")]) for r in rows]
            assert got.rows() == want
    pid = [r[0] for r in con.execute("SELECT globalPid FROM DIAGNOSTIC_EVENT WHERE globalPid < 0 LIMIT 1")]
    if pid:  # a value above 2^63 in Parquet's UBIGINT: the SQLite export's negative number
        assert pl.read_parquet(sources["parquetdir"] / "DIAGNOSTIC_EVENT.parquet")["globalPid"].max() > 2 ** 63
