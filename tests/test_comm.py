"""Communication against compute per rank and step (analysis.comm, `nsysql comm`), checked against a plain walk of
the raw SQLite rows: NCCL kernels by name or by NCCL's NVTX domain around the launching call, each op in the step
whose span holds its launching call, unions and intersections computed in Python."""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import polars as pl
import pytest

from plainfindings import PlainFindings, intersection, length
from plainwalk import Plain, merge, pid_of, plain_steps

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
        elif "nccl" in o["name"].lower() or "::oneRankReduce<" in o["name"] or (c["gtid"], c["start"], c["end"]) in nccl_calls:
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


def test_one_rank_has_no_wait_and_no_straggler(opened):
    one = opened["cnn-nccl-1gpu"].comm()
    assert one["wait_ns"].sum() == 0 and one["late_ns"].sum() == 0 and not one["straggler"].any()
    assert (one["transfer_ns"] == one["comm_ns"]).all()


def test_comm_command_csv_has_the_contract_columns(export_files, tmp_path):
    from typer.testing import CliRunner

    from nsysql.cli.app import app
    result = CliRunner().invoke(app, ["comm", str(export_files["cnn-nccl-1gpu"]), "-f", "csv",
                                      "--cache-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    frame = pl.read_csv(result.stdout.encode())
    assert frame.columns[:4] == ["rank", "pid", "device_id", "step"]
    assert {"compute_ns", "comm_ns", "overlap_ns", "exposed_comm_ns"} <= set(frame.columns)
    assert (frame["overlap_ns"] + frame["exposed_comm_ns"] == frame["comm_ns"]).all()


@pytest.mark.parametrize("fixture", ["ddp-2gpu-torchrun", "fsdp-2gpu-torchrun"])
def test_comm_table_fits_80_columns_keeping_who_waits_for_whom(fixture, tmp_path):
    """At 80 columns the table keeps rank, step, compute, wait, transfer, late and straggler, and no line is wider."""
    from typer.testing import CliRunner

    from nsysql.cli.app import app
    export = Path(__file__).resolve().parents[1] / "fixtures" / fixture / "export.sqlite.xz"
    result = CliRunner().invoke(app, ["comm", str(export), "--cache-dir", str(tmp_path)], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    header = " ".join(lines[1:3]).split()
    assert {"rank", "step", "compute", "wait", "transfer", "late", "straggler"} <= set(header)


def test_comm_command_over_several_exports_puts_export_and_rank_first(export_files, tmp_path):
    from typer.testing import CliRunner

    from nsysql.cli.app import app
    paths = [str(export_files[f]) for f in ("cnn-nccl-1gpu", "cnn-pinned-train")]
    result = CliRunner().invoke(app, ["comm", *paths, "-f", "csv", "--cache-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    frame = pl.read_csv(result.stdout.encode())
    assert frame.columns[:3] == ["export", "rank", "pid"]
    # two separate runs (their sessions do not overlap): no job, nothing matched, nobody waits
    assert frame["wait_ns"].sum() == 0 and not frame["straggler"].any()


def test_comm_command_without_steps_is_one_line(export_files, tmp_path):
    from typer.testing import CliRunner

    from nsysql.cli.app import app
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
        # rank 1 arrives 200 ns after rank 0 at each step's all-reduce: rank 0 spins [1400, 1600), 150 ns of it
        # with no compute ([1050, 1450) runs until 1450); rank 1 waits for nobody
        waits = (200, 200, 150, 200, 0, False) if r["pid"] == 100 else (0, 300, 0, 250, 200, True)
        assert (r["wait_ns"], r["transfer_ns"], r["exposed_wait_ns"], r["exposed_transfer_ns"], r["late_ns"],
                r["straggler"]) == waits
        assert (r["rank"], r["collectives"]) == (r["device_id"], 1)


def test_comm_without_nvtx_finds_nccl_by_its_kernels(export_files, tmp_path):
    """The NCCL capture as nsys writes it without --trace=nvtx (no NVTX_EVENTS table; derived from the fixture here):
    the steps are the iterations of its GPU op sequence, and the communication is found by kernel name alone: NCCL's one-rank reduction kernel. Checked against the raw rows."""
    import shutil
    import sqlite3
    path = tmp_path / "no-nvtx.sqlite"
    shutil.copyfile(export_files["cnn-nccl-1gpu"], path)
    with sqlite3.connect(path) as db:
        db.execute("DROP TABLE NVTX_EVENTS")
    import nsysql
    ex = nsysql.open(path, cache_dir=tmp_path / "cache")
    got = ex.comm().to_dicts()
    db = sqlite3.connect(path)
    strings = dict(db.execute("SELECT id, value FROM StringIds"))
    calls = {(pid_of(g), corr): (s, e, g) for s, e, g, corr in db.execute(
        "SELECT start, end, globalTid, correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME")}
    ops = [("kernel", s, e, dev, pid_of(g), corr, strings[n]) for s, e, dev, g, corr, n in db.execute(
        "SELECT start, end, deviceId, globalPid, correlationId, demangledName FROM CUPTI_ACTIVITY_KIND_KERNEL")]
    for table in ("CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"):
        ops += [("memory", s, e, dev, pid_of(g), corr, "") for s, e, dev, g, corr in db.execute(
            f"SELECT start, end, deviceId, globalPid, correlationId FROM {table}")]
    launches = defaultdict(int)
    for op in ops:
        if (op[4], op[5]) in calls:
            launches[calls[(op[4], op[5])][2]] += 1
    busiest = min(launches, key=lambda g: (-launches[g], pid_of(g), g))
    # without NVTX the steps are the iterations of the GPU op sequence (docs/steps.md): one row per step,
    # each over the ops its window launched; the windows themselves are checked in tests/test_program_shapes.py
    windows = ex.run("analysis.steady_steps").sort("step").to_dicts()
    assert windows and {w["source"] for w in windows} == {"kernel-pattern"}
    assert [(r["pid"], r["step"]) for r in got] == [(pid_of(busiest), w["step"]) for w in windows]
    total_comm = 0
    for row, w in zip(got, windows):
        pieces: dict[str, list] = defaultdict(list)
        comm_kernels, devices = 0, set()
        for kind, s, e, dev, pid, corr, name in ops:
            call = calls.get((pid, corr))
            if pid != pid_of(busiest) or call is None or not (w["start_ns"] <= call[0] and call[1] <= w["end_ns"]):
                continue
            devices.add(dev)
            cls = "memory" if kind == "memory" else "comm" if "::oneRankReduce<" in name else "compute"
            pieces[cls].append((s, e))
            comm_kernels += cls == "comm"
        assert devices == {row["device_id"]}  # one GPU: one row a step
        comm, compute = merge(pieces["comm"]), merge(pieces["compute"])
        assert row["comm_kernels"] == comm_kernels
        total_comm += comm_kernels
        assert (row["comm_ns"], row["compute_ns"], row["overlap_ns"], row["memory_ns"]) == (
            length(comm), length(compute), intersection(comm, compute), length(merge(pieces["memory"])))
    assert total_comm > 0
    ex.close()
