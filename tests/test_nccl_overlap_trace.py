"""`nsysql report nccl_gpu_overlap_trace` against NVIDIA's recipe `nsys recipe nccl_gpu_overlap_trace` (rank_trace.csv).

NVIDIA's output is in ../shared/samples/ddp-2gpu/formats/recipes/ (Nsight Systems 2025.3.1 on a 2-GPU DDP run);
those tests skip where ../shared is absent. That rank_trace.csv lists every kernel of its report with its start,
end, process and device, so the export its numbers come from is rebuilt from its own rows, and nsysql's report of
it must be NVIDIA's file, row for row and byte for byte. (The export.sqlite.xz beside it is a later run of the same
workload: the same kernels per device, other times and process ids; it is checked against plain loops below.)
Every other expected value is worked out here, by hand (a synthetic export) or by plain loops over the raw SQLite
rows, never copied from nsysql's output.
"""
from __future__ import annotations

import bisect
import csv
import io
import lzma
import sqlite3
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

import nsysql
from nsysql.cli.app import app
from nsysql.present.render import to_csv
from nsysql.sql import catalog

from conftest import FIXTURES, REPO, make_synthetic

runner = CliRunner()
NAME = "nccl_gpu_overlap_trace"
DDP = REPO.parent / "shared" / "samples" / "ddp-2gpu" / "formats"
RANK_TRACE = DDP / "recipes" / NAME / "rank_trace.csv"
HEADER = ["Name", "Start", "End", "PID", "DeviceID", "Communication Overlap", "Compute Overlap", "Rank"]
needs_shared = pytest.mark.skipif(not RANK_TRACE.exists(), reason="../shared/samples/ddp-2gpu is not here")


def csv_text(df) -> str:
    q = catalog.get(f"reports.{NAME}")
    return to_csv(df, {c.name: c.decimals for c in q.columns if c.decimals is not None})


def csv_rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def report_rows(path: Path, cache: Path) -> list[list[str]]:
    with nsysql.open(path, cache_dir=cache) as ex:
        return csv_rows(csv_text(ex.report(NAME)))


# -- the recipe's rule, in plain Python ------------------------------------------------------------------
def pandas_round_1(x: float) -> float:
    """pandas' round(1): numpy's rint(x * 10) / 10 (Python's round() of a float to an integer is rint)."""
    return round(x * 10) / 10


def covered(kid: int, s: int, e: int, others: list[tuple[int, int, int]], longest: int) -> int:
    """Time of kernel `kid` (s to e) that at least one other of `others` ((start, id, end), sorted) covers:
    each overlap clipped to the kernel, the pieces merged (a union, never a sum)."""
    lo, hi = bisect.bisect_left(others, (s - longest,)), bisect.bisect_left(others, (e,))
    pieces = sorted((max(s, os_), min(e, oe)) for os_, oid, oe in others[lo:hi]
                    if oid != kid and min(e, oe) > max(s, os_))
    total, cur_s, cur_e = 0, 0, None
    for ps, pe in pieces:
        if cur_e is None or ps > cur_e:
            total += 0 if cur_e is None else cur_e - cur_s
            cur_s, cur_e = ps, pe
        else:
            cur_e = max(cur_e, pe)
    return total + (0 if cur_e is None else cur_e - cur_s)


def plain_rows(kernels: list[tuple]) -> list[list[str]]:
    """The recipe's rank_trace rows (CSV cells) from (id, short name, start, end, pid, device), in export order.
    Communication kernel: short name starting with 'nccl'; none in the export: no rows. Kernels meet only those of
    their (pid, device); rows per (pid, device), the communication kernels first, each kind in export order; a zero
    duration leaves the cells empty (NaN)."""
    if not any(k[1].startswith("nccl") for k in kernels):
        return []
    groups: dict[tuple[int, int], list[tuple]] = {}
    for k in kernels:
        groups.setdefault((k[4], k[5]), []).append(k)
    out = []
    for key in sorted(groups):
        kinds: dict[bool, list[tuple]] = {True: [], False: []}
        for k in groups[key]:
            kinds[k[1].startswith("nccl")].append(k)
        timeline = {kind: sorted((k[2], k[0], k[3]) for k in ks) for kind, ks in kinds.items()}
        longest = {kind: max((k[3] - k[2] for k in ks), default=0) for kind, ks in kinds.items()}
        for kind in (True, False):
            for kid, name, s, e, pid, dev in kinds[kind]:
                pct = ["" if e == s else repr(pandas_round_1(covered(kid, s, e, timeline[other], longest[other])
                                                             / (e - s) * 100))
                       for other in (True, False)]  # communication, then compute
                out.append([name, str(s), str(e), str(pid), str(dev), *pct, "0"])
    return out


def raw_kernels(path: Path) -> list[tuple]:
    """(rowid, short name, start, end, pid, device) of every kernel with a process, read by sqlite3 alone from an
    export (.sqlite, or .sqlite.xz decompressed in memory)."""
    con = sqlite3.connect(":memory:")
    try:
        if path.suffix == ".xz":
            with lzma.open(path) as f:
                con.deserialize(f.read())
        else:
            con.close()
            con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        return con.execute(
            'SELECT k.rowid, s.value, k.start, k."end", (k.globalPid >> 24) & 16777215, k.deviceId '
            "FROM CUPTI_ACTIVITY_KIND_KERNEL AS k JOIN StringIds AS s ON s.id = k.shortName "
            "WHERE k.globalPid IS NOT NULL ORDER BY k.rowid").fetchall()
    finally:
        con.close()


# -- NVIDIA's own rank_trace.csv ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def recipe_export(tmp_path_factory) -> Path:
    """An export of exactly the kernels NVIDIA's rank_trace.csv lists (name, start, end, process, device), in start
    order as nsys writes them: the recipe's input as far as its numbers go."""
    if not RANK_TRACE.exists():
        pytest.skip("../shared/samples/ddp-2gpu is not here")
    with RANK_TRACE.open(newline="") as f:
        rows = list(csv.reader(f))[1:]
    synth = make_synthetic()
    b = synth.SyntheticExport()
    for i, (name, start, end, pid, dev, *_) in sorted(enumerate(rows), key=lambda r: (int(r[1][1]), r[0])):
        b.kernel(name, int(start), int(end), pid=int(pid), correlation_id=i + 1, device=int(dev))
    return b.write(tmp_path_factory.mktemp("recipe") / "ddp2.sqlite")


@needs_shared
def test_nvidia_rank_trace_row_for_row(recipe_export, tmp_path):
    """Every row and column of NVIDIA's rank_trace.csv, through the Python API: 8,064 kernels of two ranks, 78 NCCL
    kernels each; 2,516 rows with communication overlap (up to 100.0), 103 with compute overlap (up to 96.6)."""
    with RANK_TRACE.open(newline="") as f:
        theirs = list(csv.reader(f))
    mine = report_rows(recipe_export, tmp_path / "cache")
    assert mine[0] == theirs[0] == HEADER
    assert len(mine) == len(theirs) == 8065
    for i, (a, b) in enumerate(zip(mine, theirs)):
        assert a == b, f"row {i} differs"


@needs_shared
def test_nvidia_rank_trace_cli_csv(recipe_export, tmp_path):
    """`nsysql report nccl_gpu_overlap_trace EXPORT -f csv` is NVIDIA's rank_trace.csv, byte for byte."""
    res = runner.invoke(app, ["report", NAME, str(recipe_export), "-f", "csv", "--cache-dir", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert res.stdout == RANK_TRACE.read_text()


@needs_shared
def test_shared_export(tmp_path):
    """The 2-GPU export (opened as .sqlite.xz) against plain loops over its raw rows, every row and column;
    its kernels are those NVIDIA's rank_trace.csv lists (the same names per device, the same counts)."""
    kernels = raw_kernels(DDP / "export.sqlite.xz")
    expected = plain_rows(kernels)
    mine = report_rows(DDP / "export.sqlite.xz", tmp_path / "cache")
    assert mine[0] == HEADER
    assert len(mine) - 1 == len(expected) == 8064
    for i, (a, b) in enumerate(zip(mine[1:], expected)):
        assert a == b, f"row {i} differs"
    assert {r[6] for r in expected} != {"0.0"}, "no compute overlap at all: a poor check"
    with RANK_TRACE.open(newline="") as f:
        theirs = list(csv.reader(f))[1:]
    assert Counter((r[4], r[0]) for r in theirs) == Counter((str(k[5]), k[1]) for k in kernels)


# -- fixtures without NVIDIA's NCCL kernels ----------------------------------------------------------------
def test_no_nccl_kernels_no_rows(tmp_path):
    """A capture without NCCL: the header alone in csv (the recipe writes no rows for it), and a note in the table."""
    path = FIXTURES / "cnn-pinned-train" / "export.sqlite.xz"
    assert plain_rows(raw_kernels(path)) == []
    assert report_rows(path, tmp_path) == [HEADER]
    res = runner.invoke(app, ["report", NAME, str(path), "--cache-dir", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert "(no rows)" in res.stdout and "no kernel named nccl*" in res.stdout


def test_one_rank_nccl_is_compute(tmp_path):
    """One GPU: NCCL's collectives run `oneRankReduce` kernels, whose short name does not start with `nccl`, so
    the recipe counts none as communication and lists nothing (nsysql's own comm analysis does count them)."""
    path = FIXTURES / "cnn-nccl-1gpu" / "export.sqlite.xz"
    kernels = raw_kernels(path)
    assert sum(k[1] == "oneRankReduce" for k in kernels) == 310
    assert plain_rows(kernels) == []
    assert report_rows(path, tmp_path) == [HEADER]


# -- hand-worked ---------------------------------------------------------------------------------------------
def test_hand_worked(tmp_path):
    """Pid 100 on device 0: NCCL kernels A 0-1000 and B 500-1500 (streams 2, 3), compute C1 200-400, C2 300-700,
    C3 900-1300 (streams 7, 8), a zero-length compute Z at 250, and the NCCL kernel D 2000-2400 alone; pid 100 on
    device 1: E 0-100 (NCCL) and F 0-800 (compute), 100 of 800 = 12.5; pid 200 on device 0: compute G 0-400000 and
    K 0-400, NCCL H 1000-1999 and I 399-400: I covers 1 ns of K, 0.25 %, which pandas rounds to 0.2 (rint(2.5) = 2,
    where half-up gives 0.3), and H and I 1000 ns of G, 0.25 % again. Pid 100's kernels never meet pid 200's, though
    both run on device 0."""
    b = make_synthetic().SyntheticExport()
    k = 0

    def kernel(name, s, e, pid, dev=0, stream=7):
        nonlocal k
        k += 1
        b.kernel(name, s, e, pid=pid, correlation_id=k, device=dev, stream=stream)

    kernel("ncclDevKernel_AllReduce_A", 0, 1000, 100, stream=2)
    kernel("elementwise_C1", 200, 400, 100)
    kernel("zero_Z", 250, 250, 100)
    kernel("elementwise_C2", 300, 700, 100, stream=8)
    kernel("ncclDevKernel_AllGather_B", 500, 1500, 100, stream=3)
    kernel("gemm_C3", 900, 1300, 100)
    kernel("ncclDevKernel_Broadcast_D", 2000, 2400, 100, stream=2)
    kernel("ncclDevKernel_E", 0, 100, 100, dev=1, stream=2)
    kernel("gemm_F", 0, 800, 100, dev=1)
    kernel("gemm_G", 0, 400000, 200, stream=9)
    kernel("ncclDevKernel_H", 1000, 1999, 200, stream=2)
    kernel("gemm_K", 0, 400, 200)
    kernel("ncclDevKernel_I", 399, 400, 200, stream=3)
    path = b.write(tmp_path / "hand.sqlite")
    # A: B covers 500-1000 (50.0); compute C1 200-400 + C2 300-700 = 200-700, C3 900-1000: 600 of 1000 (60.0)
    # B: A covers 500-1000 (50.0); compute C2 500-700, C3 900-1300: 600 of 1000 (60.0)
    # C1: NCCL A covers it all (100.0); C2 covers 300-400 (50.0); Z adds nothing
    # Z: zero length: empty cells. C2: A 300-700 (100.0); C1 300-400 (25.0). C3: A, B 900-1300 (100.0); 0.0
    # G: H 1000-1999 and I 399-400, 1000 of 400000 = 0.25 -> 0.2; K 0-400 of 400000 = 0.1
    # H: no other NCCL kernel meets it (0.0), G covers it (100.0); I: G and K (100.0); K: I 1 of 400, G all
    assert report_rows(path, tmp_path / "cache") == [HEADER,
        ["ncclDevKernel_AllReduce_A", "0", "1000", "100", "0", "50.0", "60.0", "0"],
        ["ncclDevKernel_AllGather_B", "500", "1500", "100", "0", "50.0", "60.0", "0"],
        ["ncclDevKernel_Broadcast_D", "2000", "2400", "100", "0", "0.0", "0.0", "0"],
        ["elementwise_C1", "200", "400", "100", "0", "100.0", "50.0", "0"],
        ["zero_Z", "250", "250", "100", "0", "", "", "0"],
        ["elementwise_C2", "300", "700", "100", "0", "100.0", "25.0", "0"],
        ["gemm_C3", "900", "1300", "100", "0", "100.0", "0.0", "0"],
        ["ncclDevKernel_E", "0", "100", "100", "1", "0.0", "100.0", "0"],
        ["gemm_F", "0", "800", "100", "1", "12.5", "0.0", "0"],
        ["ncclDevKernel_H", "1000", "1999", "200", "0", "0.0", "100.0", "0"],
        ["ncclDevKernel_I", "399", "400", "200", "0", "0.0", "100.0", "0"],
        ["gemm_G", "0", "400000", "200", "0", "0.2", "0.1", "0"],
        ["gemm_K", "0", "400", "200", "0", "0.2", "100.0", "0"],
    ]
    assert plain_rows(raw_kernels(path)) == report_rows(path, tmp_path / "cache")[1:]



# -- NVIDIA's recipe on the very export it ran on: our own 2-GPU fixture ----------------------------------
OWN = FIXTURES / "ddp-2gpu-torchrun"


def test_equals_nvidias_recipe_on_the_fixture_it_ran_on(tmp_path):
    """fixtures/ddp-2gpu-torchrun: `nsys recipe nccl_gpu_overlap_trace --csv` ran on the GPU machine on this
    capture's report (fixtures/README.md); its rank_trace.csv equals the report row for row, through the library
    and byte for byte through the CLI."""
    with lzma.open(OWN / "recipes" / NAME / "rank_trace.csv.xz", "rt", newline="") as f:
        want_text = f.read()
    want = csv_rows(want_text)
    assert want[0] == HEADER and len(want) > 1000
    assert report_rows(OWN / "export.sqlite.xz", tmp_path / "cache") == want
    res = runner.invoke(app, ["report", NAME, str(OWN / "export.sqlite.xz"), "-f", "csv",
                              "--cache-dir", str(tmp_path / "cache")])
    assert res.exit_code == 0, res.output
    assert res.stdout.replace("\r\n", "\n") == want_text.replace("\r\n", "\n")
