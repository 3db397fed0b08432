"""Communication against compute per rank and step (analysis.comm, `nsysql comm`), checked against a plain walk of
the raw SQLite rows: NCCL kernels by name or by NCCL's NVTX domain around the launching call, each op in the step
whose span holds its launching call, unions and intersections computed in Python."""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import polars as pl
import pytest

from nsysql.comm import with_stragglers

from plainfindings import PlainFindings, intersection, length
from plainwalk import Plain, merge, plain_steps

FIXTURES = ["cnn-nccl-1gpu", "gpt-tiny-train-fp32", "cnn-pinned-train"]


def plain_comm(path) -> dict[tuple[int, int, int], dict[str, int]]:
    """{(pid, device, the process's own step): figures} from the raw rows."""
    pf = PlainFindings(path)
    plain = Plain(path)
    nccl_calls = {(c[2], c[0], c[1]) for c in plain.runtime.values()
                  if any(r[1].startswith("NCCL:") for r in plain.enclosing(c))}
    steps = plain_steps(pf.pa)
    own = defaultdict(int)
    for s in steps:
        own[s["pid"]] += 1
        s["own"] = own[s["pid"]]
    pieces: dict[tuple[int, int, int], dict[str, list]] = defaultdict(lambda: defaultdict(list))
    kernels_n: dict[tuple[int, int, int], int] = defaultdict(int)
    for o in pf.tl.ops:
        c = o["call"]
        if c is None:
            continue
        before = [s for s in steps if s["pid"] == o["pid"] and s["start"] <= c["start"]]
        if not before:
            continue
        step = max(before, key=lambda s: (s["start"], s["own"]))
        if c["end"] > step["end"]:
            continue
        if o["kind"] in ("memcpy", "memset"):
            cls = "memory"
        elif "nccl" in o["name"].lower() or (c["gtid"], c["start"], c["end"]) in nccl_calls:
            cls = "comm"
        else:
            cls = "compute"
        key = (o["pid"], o["device"], step["own"])
        pieces[key][cls].append((o["start"], o["end"]))
        kernels_n[key] += cls == "comm"
    out = {}
    for key, by_class in pieces.items():
        compute, comm = merge(by_class["compute"]), merge(by_class["comm"])
        overlap = intersection(comm, compute)
        out[key] = dict(compute_ns=length(compute), comm_ns=length(comm), overlap_ns=overlap,
                        exposed_comm_ns=length(comm) - overlap, memory_ns=length(merge(by_class["memory"])),
                        comm_kernels=kernels_n[key])
    return out


@pytest.mark.parametrize("fixture", FIXTURES)
def test_comm_equals_a_plain_walk_of_the_raw_rows(opened, export_files, fixture):
    got = opened[fixture].comm()
    want = plain_comm(export_files[fixture])
    assert want, "the fixture has steps with GPU work"
    assert {(r["pid"], r["device_id"], r["step"]) for r in got.iter_rows(named=True)} == set(want)
    for r in got.iter_rows(named=True):
        expect = want[(r["pid"], r["device_id"], r["step"])]
        assert {k: r[k] for k in expect} == expect
        assert r["overlap_ns"] + r["exposed_comm_ns"] == r["comm_ns"]


def test_the_nccl_capture_has_communication_and_the_others_none(opened):
    nccl = opened["cnn-nccl-1gpu"].comm()
    assert nccl["comm_ns"].min() > 0 and nccl["comm_kernels"].min() > 0
    assert opened["gpt-tiny-train-fp32"].comm()["comm_ns"].sum() == 0


def test_stragglers_are_the_ranks_with_the_most_compute_against_the_median():
    ranks = pl.DataFrame({
        "pid": [1, 2, 3, 1, 2, 3], "device_id": [0, 1, 2, 0, 1, 2], "step": [1, 1, 1, 2, 2, 2],
        "compute_ns": [100, 130, 90, 100, 100, 100], "comm_ns": [10] * 6,
    })
    out = with_stragglers(ranks).sort("step", "pid")
    assert out.filter(pl.col("slowest"))[["step", "pid"]].rows() == [(1, 2)]  # step 2: all equal, no straggler
    assert out["behind_median_ns"].to_list() == [0, 30, -10, 0, 0, 0]


def test_one_rank_has_no_straggler():
    one = pl.DataFrame({"pid": [1, 1], "device_id": [0, 0], "step": [1, 2], "compute_ns": [5, 6]})
    out = with_stragglers(one)
    assert out["slowest"].to_list() == [False, False] and out["behind_median_ns"].to_list() == [0, 0]


def test_comm_command_csv_has_the_contract_columns(export_files, tmp_path):
    from typer.testing import CliRunner

    from nsysql.cli import app
    result = CliRunner().invoke(app, ["comm", str(export_files["cnn-nccl-1gpu"]), "-f", "csv",
                                      "--cache-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    frame = pl.read_csv(result.stdout.encode())
    assert frame.columns[:3] == ["pid", "device_id", "step"]
    assert {"compute_ns", "comm_ns", "overlap_ns", "exposed_comm_ns"} <= set(frame.columns)
    assert (frame["overlap_ns"] + frame["exposed_comm_ns"] == frame["comm_ns"]).all()


def test_comm_command_over_several_exports_puts_export_and_rank_first(export_files, tmp_path):
    from typer.testing import CliRunner

    from nsysql.cli import app
    paths = [str(export_files[f]) for f in ("cnn-nccl-1gpu", "cnn-pinned-train")]
    result = CliRunner().invoke(app, ["comm", *paths, "-f", "csv", "--cache-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    frame = pl.read_csv(result.stdout.encode())
    assert frame.columns[:3] == ["export", "rank", "pid"]
    # the straggler of each step is found across the exports: per step at most the ranks of the two exports
    per_step = frame.group_by("step").agg(pl.col("slowest").sum().alias("n"), pl.len().alias("ranks"))
    assert (per_step["n"] <= 1).all() and per_step["ranks"].max() == 2


def test_comm_command_without_steps_is_one_line(export_files, tmp_path):
    from typer.testing import CliRunner

    from nsysql.cli import app
    cpu_only = Path(__file__).resolve().parent.parent / "fixtures" / "cpu-nvtx-osrt-nsys2022.4" / "export.sqlite.xz"
    result = CliRunner().invoke(app, ["comm", str(cpu_only), "--cache-dir", str(tmp_path)])
    assert result.exit_code == 1 and len(result.output.strip().splitlines()) == 1, result.output


def test_two_ranks_of_one_export_compare_step_by_step(tmp_path):
    """Two processes with their own steps 1-3 at the same time (scripts/make_synthetic.py two_ranks, numbers in its
    docstring): each rank's figures per step, against the plain walk, and rank 1 the straggler of every step."""
    import nsysql

    from conftest import make_synthetic
    path = make_synthetic().two_ranks().write(tmp_path / "two_ranks.sqlite")
    with nsysql.open(path, cache_dir=tmp_path / "cache") as ex:
        got = ex.comm()
    assert [(r["pid"], r["device_id"], r["step"]) for r in got.iter_rows(named=True)] == [
        (100, 0, 1), (200, 1, 1), (100, 0, 2), (200, 1, 2), (100, 0, 3), (200, 1, 3)]
    want = plain_comm(path)
    for r in got.iter_rows(named=True):
        assert {k: r[k] for k in want[(r["pid"], r["device_id"], r["step"])]} == \
               want[(r["pid"], r["device_id"], r["step"])]
        spelled = (400, 400, 50, 350) if r["pid"] == 100 else (500, 300, 50, 250)
        assert (r["compute_ns"], r["comm_ns"], r["overlap_ns"], r["exposed_comm_ns"]) == spelled
    out = with_stragglers(got)
    assert out.filter(pl.col("slowest"))[["pid", "step"]].rows() == [(200, 1), (200, 2), (200, 3)]
    assert set(out["behind_median_ns"].to_list()) == {-50, 50}
