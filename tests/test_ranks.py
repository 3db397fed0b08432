"""Several GPUs: collectives matched across ranks, wait and transfer, lateness and the straggler, on real 2-GPU
captures: our own fixtures (fixtures/ddp-2gpu-torchrun, ddp-2gpu-rank0 + ddp-2gpu-rank1: DDP, rank 1 sleeps 25 ms
inside `dataloader` in profiled step 2; fixtures/fsdp-2gpu-torchrun: FSDP2, rank 1 20 ms late in every step) and
those in ../shared/samples/ddp-2gpu/ (DDP, the same planted straggler; skipped where ../shared is absent). Every
figure is checked against a plain walk of the raw SQLite rows written here: NCCL kernels by name, instances
matched by the k-th kernel on each rank's n-th NCCL stream, steps from the `profiled_step` ranges, unions in
Python."""
from __future__ import annotations

import lzma
import re
import shutil
import sqlite3
from collections import defaultdict
from pathlib import Path

import polars as pl
import pytest

from plainfindings import intersection, length
from plainwalk import merge

SAMPLES = Path(__file__).resolve().parents[2] / "shared" / "samples" / "ddp-2gpu"
OWN = Path(__file__).resolve().parents[1] / "fixtures"
SOURCES = {"torchrun": SAMPLES / "torchrun", "rank0": SAMPLES / "rank0", "rank1": SAMPLES / "rank1",
           "own-torchrun": OWN / "ddp-2gpu-torchrun", "own-rank0": OWN / "ddp-2gpu-rank0",
           "own-rank1": OWN / "ddp-2gpu-rank1", "own-fsdp": OWN / "fsdp-2gpu-torchrun"}


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    """name -> the decompressed export; a name whose export is not here skips the test that asks for it."""
    folder = tmp_path_factory.mktemp("ddp")

    class Lazy(dict):
        def __missing__(self, name):
            source = SOURCES[name] / "export.sqlite.xz"
            if not source.exists():
                pytest.skip(f"{source} is not here")
            target = folder / f"{name}.sqlite"
            with lzma.open(source) as src, target.open("wb") as dst:
                shutil.copyfileobj(src, dst)
            self[name] = target
            return target
    return Lazy()


def _pid(global_id: int) -> int:
    return (global_id >> 24) & 0xFFFFFF


class Raw:
    """The rows the plain walk needs, read with sqlite3."""

    def __init__(self, path: Path):
        db = sqlite3.connect(path)
        names = dict(db.execute("SELECT id, value FROM StringIds"))
        calls = {(_pid(g), c): (s, e) for s, e, g, c in db.execute(
            "SELECT start, end, globalTid, correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME")}
        self.ops = []  # (kind, pid, device, stream, start, end, name, call)
        for s, e, dev, st, g, c, n in db.execute("SELECT start, end, deviceId, streamId, globalPid, correlationId, "
                                                 "demangledName FROM CUPTI_ACTIVITY_KIND_KERNEL"):
            kind = "comm" if "nccl" in names[n].lower() else "compute"
            self.ops.append((kind, _pid(g), dev, st, s, e, names[n], calls.get((_pid(g), c))))
        for table in ("CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"):
            for s, e, dev, st, g, c in db.execute(f"SELECT start, end, deviceId, streamId, globalPid, correlationId "
                                                  f"FROM {table}"):
                self.ops.append(("memory", _pid(g), dev, st, s, e, "", calls.get((_pid(g), c))))
        steps = defaultdict(list)
        for s, e, g in db.execute("SELECT start, end, globalTid FROM NVTX_EVENTS WHERE text = 'profiled_step' "
                                  "AND end IS NOT NULL ORDER BY start"):
            steps[_pid(g)].append((s, e))
        self.steps = {pid: {k + 1: se for k, se in enumerate(sorted(v))} for pid, v in steps.items()}
        env = [v for n, v in db.execute("SELECT name, value FROM META_DATA_CAPTURE")
               if n == "PROCESS_0:ENVIRONMENT_VARIABLE" and v.startswith("RANK=")]
        self.rank = int(env[0].split("=")[1].strip('"')) if env else None
        self.utc = db.execute("SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME").fetchone()[0]

    def steps_by_pid(self) -> list[tuple[int, int]]:
        """Every (start, end) of the step ranges, of every process."""
        return [se for steps in self.steps.values() for se in steps.values()]

    def step_of(self, op) -> int | None:
        """The step whose span holds the launching call, start to end."""
        call = op[7]
        if call is None:
            return None
        for k, (s, e) in self.steps.get(op[1], {}).items():
            if s <= call[0] and call[1] <= e:
                return k
        return None


def _operation(name: str) -> str:
    return re.search(r"nccl(?:Dev)?Kernel_([A-Za-z]+?)(?:_|\(|$)", name).group(1)


def instances(raw: Raw, shift: int = 0, source: int = 0) -> list[dict]:
    """Each NCCL kernel with its matching key: (n-th NCCL stream of its rank by first use, k-th kernel on it)."""
    comm = sorted((o for o in raw.ops if o[0] == "comm"), key=lambda o: o[4])
    first_use: dict = {}
    for o in comm:
        first_use.setdefault((o[1], o[2]), {}).setdefault(o[3], o[4])
    seq: dict = defaultdict(int)
    out = []
    for o in comm:
        order = sorted(first_use[(o[1], o[2])], key=lambda st: (first_use[(o[1], o[2])][st], st)).index(o[3]) + 1
        seq[(o[1], o[2], o[3])] += 1
        out.append(dict(source=source, pid=o[1], device=o[2], stream=o[3], key=(order, seq[(o[1], o[2], o[3])]),
                        op=_operation(o[6]), start=o[4] + shift, end=o[5] + shift, step=raw.step_of(o),
                        rank=raw.rank if raw.rank is not None else o[2]))
    return out


def waits(inst: list[dict]) -> list[dict]:
    """Each instance with wait [start, min(end, L)), late = start - first arrival, for matched collectives."""
    ranks = {(i["source"], i["pid"], i["device"]) for i in inst}
    by_key = defaultdict(list)
    for i in inst:
        by_key[i["key"]].append(i)
    for group in by_key.values():
        matched = (len(group) == len(ranks) > 1 and len({(i["source"], i["pid"], i["device"]) for i in group}) == len(group)
                   and len({i["op"] for i in group}) == 1)
        last, first = max(i["start"] for i in group), min(i["start"] for i in group)
        for i in group:
            i["matched"] = matched
            i["wait_end"] = max(i["start"], min(i["end"], last)) if matched else i["start"]
            i["late"] = i["start"] - first if matched else 0
    return inst


def plain_comm(raw: Raw, inst: list[dict], shift: int = 0) -> dict:
    """{(pid, step): figures} of analysis.comm's new columns, from the raw rows."""
    pieces = defaultdict(lambda: defaultdict(list))
    for o in raw.ops:
        step = raw.step_of(o)
        if step is not None:
            pieces[(o[1], step)][o[0]].append((o[4], o[5]))
    late, collectives = defaultdict(int), defaultdict(int)
    for i in inst:
        if i["step"] is not None:
            key = (i["pid"], i["step"])
            if i["wait_end"] > i["start"]:
                pieces[key]["wait"].append((i["start"] - shift, i["wait_end"] - shift))
            late[key] += i["late"]
            collectives[key] += i["matched"]
    out = {}
    for key, by in pieces.items():
        comm, wait, compute = merge(by["comm"]), merge(by["wait"]), merge(by["compute"])
        exposed_comm = length(comm) - intersection(comm, compute)
        exposed_wait = length(wait) - intersection(wait, compute)
        out[key] = dict(comm_ns=length(comm), wait_ns=length(wait), transfer_ns=length(comm) - length(wait),
                        exposed_wait_ns=exposed_wait, exposed_transfer_ns=exposed_comm - exposed_wait,
                        late_ns=late[key], collectives=collectives[key])
    return out


def _stragglers(rows: list[dict]) -> set[tuple[int, int]]:
    """(pid, step) of the rank with the largest late_ns in each step of several ranks, when above 0."""
    by_step = defaultdict(list)
    for r in rows:
        by_step[r["step"]].append(r)
    out = set()
    for group in by_step.values():
        top = max(r["late_ns"] for r in group)
        out |= {(r["pid"], r["step"]) for r in group if len(group) > 1 and top > 0 and r["late_ns"] == top}
    return out


COLUMNS = ("comm_ns", "wait_ns", "transfer_ns", "exposed_wait_ns", "exposed_transfer_ns", "late_ns", "collectives")


# (export, collectives matched per rank, the step where rank 1 was made late or None: every step)
ONE_EXPORT = [("torchrun", 78, 2), ("own-torchrun", 22, 2), ("own-fsdp", 48, None)]


@pytest.mark.parametrize("name,collectives,planted", ONE_EXPORT, ids=[c[0] for c in ONE_EXPORT])
def test_one_torchrun_export_matches_collectives_and_splits_wait_from_transfer(sample, tmp_path, name, collectives,
                                                                              planted):
    import nsysql
    raw = Raw(sample[name])
    inst = waits(instances(raw))
    want = plain_comm(raw, inst)
    with nsysql.open(sample[name], cache_dir=tmp_path) as ex:
        got = ex.comm()
        matched = ex.run("analysis.comm_waits")
    assert matched["matched"].sum() == sum(i["matched"] for i in inst) == 2 * collectives
    assert {(r["pid"], r["step"]) for r in got.iter_rows(named=True)} == set(want)
    for r in got.iter_rows(named=True):
        assert {k: r[k] for k in COLUMNS} == want[(r["pid"], r["step"])], (r["pid"], r["step"])
        assert r["rank"] == r["device_id"]  # no RANK in one nsys over torchrun: ranks by device
    assert {(r["pid"], r["step"]) for r in got.filter(pl.col("straggler")).iter_rows(named=True)} == \
        _stragglers(got.to_dicts())
    # the planted straggler: rank 1 sleeps in step 2 (every step with FSDP): the straggler there, and rank 0 waits
    # for it more than in any other step
    for step in ([planted] if planted else range(1, 5)):
        assert got.filter((pl.col("step") == step) & pl.col("straggler"))["rank"].to_list() == [1]
    rank0 = got.filter(pl.col("rank") == 0).sort("step")
    if planted:
        assert rank0["wait_ns"].arg_max() == planted - 1 and rank0["wait_ns"][planted - 1] > 20_000_000
    else:
        assert rank0["wait_ns"].min() > 15_000_000


@pytest.mark.parametrize("names,collectives", [(("rank0", "rank1"), 78), (("own-rank0", "own-rank1"), 22)],
                         ids=["shared", "own"])
def test_per_rank_exports_are_aligned_and_give_the_job_view(sample, tmp_path, names, collectives):
    from typer.testing import CliRunner

    from nsysql.cli.app import app
    raws = [Raw(sample[names[0]]), Raw(sample[names[1]])]
    assert [r.rank for r in raws] == [0, 1]
    # the plain alignment: the median of (rank 0's end - rank 1's end) over the collectives both have
    first = [instances(r, source=i) for i, r in enumerate(raws)]
    ends0 = {i["key"]: i["end"] for i in first[0]}
    gaps = sorted(ends0[i["key"]] - i["end"] for i in first[1] if i["key"] in ends0)
    shift = gaps[len(gaps) // 2] if len(gaps) % 2 else (gaps[len(gaps) // 2 - 1] + gaps[len(gaps) // 2]) // 2
    assert abs(shift - (raws[1].utc - raws[0].utc)) < 100_000  # the session starts agree to 0.1 ms
    inst = waits(instances(raws[0]) + instances(raws[1], shift=shift, source=1))
    want = {**plain_comm(raws[0], [i for i in inst if i["source"] == 0]),
            **plain_comm(raws[1], [i for i in inst if i["source"] == 1], shift=shift)}
    result = CliRunner().invoke(app, ["comm", str(sample[names[0]]), str(sample[names[1]]), "-f", "csv",
                                      "--cache-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert f"put on {names[0]}'s clock" in result.stderr and f"{collectives} collectives matched" in result.stderr
    got = pl.read_csv(result.stdout.encode())
    assert got["rank"].to_list() == [0] * 4 + [1] * 4  # RANK of each process's environment
    for r in got.iter_rows(named=True):
        assert {k: r[k] for k in COLUMNS} == want[(r["pid"], r["step"])], (r["pid"], r["step"])
    assert {(r["pid"], r["step"]) for r in got.filter(pl.col("straggler")).iter_rows(named=True)} == \
        _stragglers(got.to_dicts())
    assert got.filter((pl.col("step") == 2) & pl.col("straggler"))["rank"].to_list() == [1]


@pytest.mark.parametrize("name", ["torchrun", "own-torchrun", "own-fsdp"])
def test_breakdown_adds_up_and_utilization_leaves_waiting_out(sample, tmp_path, name):
    import nsysql
    raw = Raw(sample[name])
    inst = waits(instances(raw))
    with nsysql.open(sample[name], cache_dir=tmp_path) as ex:
        bd = ex.run("analysis.step_breakdown")
        gpus = ex.run("analysis.overview_gpus")
    cats = [c for c in bd.columns if c.endswith("_ns") and c != "wall_ns"]
    assert "comm_transfer_ns" in cats and "comm_wait_ns" in cats
    assert (bd.select(pl.sum_horizontal(cats)).to_series() == bd["wall_ns"]).all()
    assert bd["comm_wait_ns"].sum() > 0
    # GPU 0 waits for rank 1: the plain walk's busy (ops with NCCL kernels cut to their transfer part) and
    # wait-only time over the analysed steps
    assert gpus["device_id"].to_list() == [0, 1]  # the job's GPUs only (the shared sample's capture saw 4)
    for g in gpus.iter_rows(named=True):
        busy = wait_only = window = 0
        for pid, (s, e) in ((p, se) for p in raw.steps for se in raw.steps[p].values()):
            if not any(o[1] == pid and o[2] == g["device_id"] for o in raw.ops):
                continue
            window += e - s
            ops = [(max(o[4], s), min(o[5], e)) for o in raw.ops
                   if o[1] == pid and o[2] == g["device_id"] and o[0] != "comm" and o[4] < e and o[5] > s]
            ops += [(max(i["wait_end"], s), min(i["end"], e)) for i in inst
                    if i["pid"] == pid and i["device"] == g["device_id"] and i["wait_end"] < e and i["end"] > s
                    and i["end"] > i["wait_end"]]
            spins = [(max(i["start"], s), min(i["wait_end"], e)) for i in inst
                     if i["pid"] == pid and i["device"] == g["device_id"] and i["start"] < e and i["wait_end"] > s
                     and i["wait_end"] > i["start"]]
            busy += length(merge(ops))
            wait_only += length(merge(ops + spins)) - length(merge(ops))
        assert g["busy_ns"] == busy
        assert g["utilization_pct"] == pytest.approx(100.0 * busy / window)
        assert g["comm_wait_pct"] == pytest.approx(100.0 * wait_only / window)
    assert gpus.filter(pl.col("device_id") == 0)["comm_wait_pct"][0] > 20


@pytest.mark.parametrize("name", ["torchrun", "own-torchrun", "own-fsdp"])
def test_the_top_finding_of_a_job_with_a_late_rank_is_the_straggler(sample, tmp_path, name):
    import nsysql
    with nsysql.open(sample[name], cache_dir=tmp_path) as ex:
        found = ex.findings()
        comm = ex.comm().filter(pl.col("analysed"))
    top = found.row(0, named=True)
    assert top["rule"] == "straggler" and top["title"].startswith("Rank 1 arrives late")
    # recoverable: the waiting rank's exposed wait over the analysed steps (one waiting rank: its own)
    assert top["recoverable_ns"] == comm.filter(pl.col("rank") == 0)["exposed_wait_ns"].sum()
    # no rule repeats per rank: each fires once for the job
    assert found["rule"].n_unique() == found.height


def test_a_collective_one_rank_lacks_is_left_unmatched_and_said(sample, tmp_path):
    """Rank 1's last NCCL kernel removed (a copy of the torchrun export): rank 0's last collective has no partner,
    so it is unmatched (all transfer, no wait), the others still match, and `comm` says so in one line."""
    from typer.testing import CliRunner

    from nsysql.cli.app import app
    path = tmp_path / "cut.sqlite"
    shutil.copyfile(sample["torchrun"], path)
    with sqlite3.connect(path) as db:
        (rowid,) = db.execute(
            "SELECT k.rowid FROM CUPTI_ACTIVITY_KIND_KERNEL AS k JOIN StringIds AS s ON s.id = k.demangledName "
            "WHERE s.value LIKE 'nccl%' AND k.deviceId = 1 ORDER BY k.start DESC LIMIT 1").fetchone()
        db.execute("DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE rowid = ?", (rowid,))
    raw = Raw(path)
    inst = waits(instances(raw))
    assert sum(not i["matched"] for i in inst) == 1
    result = CliRunner().invoke(app, ["comm", str(path), "-f", "csv", "--cache-dir", str(tmp_path / "cache")])
    assert result.exit_code == 0, result.output
    assert "note: 1 of 155 communication kernels of 2 ranks were not matched across ranks" in result.stderr
    got = pl.read_csv(result.stdout.encode())
    want = plain_comm(raw, inst)
    for r in got.iter_rows(named=True):
        assert {k: r[k] for k in COLUMNS} == want[(r["pid"], r["step"])], (r["pid"], r["step"])


FORMATS = SAMPLES / "formats"
RECIPES = FORMATS / "recipes"


@pytest.mark.skipif(not (FORMATS / "export-include-blobs.sqlite.xz").exists(), reason="no formats sample")
def test_collectives_match_by_communicator_and_count_as_nvidias_recipes(tmp_path):
    """The formats sample with NCCL's payloads: instances keyed by (communicator, k-th call), the same waits as by
    stream order on the export without payloads; per operation the counts of NVIDIA's nccl_sum and
    nccl_gpu_proj_sum, and a bus bandwidth from a plain decode of the payloads."""
    import csv

    import nsysql

    from test_nccl_payload import plain_decode
    paths = {}
    for name in ("export-include-blobs", "export"):
        paths[name] = tmp_path / f"{name}.sqlite"
        with lzma.open(FORMATS / f"{name}.sqlite.xz") as src, paths[name].open("wb") as dst:
            shutil.copyfileobj(src, dst)
    got = {}
    for name, path in paths.items():
        with nsysql.open(path, cache_dir=tmp_path / "cache") as ex:
            got[name] = (ex.run("analysis.comm_waits"), ex.run("analysis.collectives"))
    blobs, plain = got["export-include-blobs"], got["export"]
    assert blobs[0]["collective"].str.starts_with("comm ").all()
    assert plain[0]["collective"].str.starts_with("stream ").all()
    keys = ["kernel_id", "matched", "wait_end_ns", "late_ns"]
    assert blobs[0].select(keys).sort("kernel_id").equals(plain[0].select(keys).sort("kernel_id"))
    # NVIDIA's recipes count NCCL's API ranges per operation on every rank: one kernel per call here
    for recipe in ("nccl_sum", "nccl_gpu_proj_sum"):
        with (RECIPES / recipe / "all_stats.csv").open() as f:
            counts = {r["Text"]: int(r["Count"]) for r in csv.DictReader(f)}
        for row in plain[1].iter_rows(named=True):
            assert counts["nccl" + row["operation"]] == row["instances"], (recipe, row["operation"])
    # bus bandwidth: NCCL's message size of each kernel's call (a plain decode of its payload) x nccl-tests' bus
    # factor, over the transfer time of the matched kernels, from the raw rows
    raw = Raw(paths["export-include-blobs"])
    inst = waits(instances(raw))
    decoded = plain_decode(paths["export-include-blobs"])
    db = sqlite3.connect(paths["export-include-blobs"])
    ranges = [(rowid, s, e, g) for rowid, s, e, g in db.execute(
        "SELECT n.rowid, n.start, n.end, n.globalTid FROM NVTX_EVENTS AS n LEFT JOIN StringIds AS t ON t.id = n.textId "
        "WHERE COALESCE(n.text, t.value) LIKE 'nccl%' AND n.end IS NOT NULL")]
    calls = {(_pid(g), c): (s, e, g) for s, e, g, c in db.execute(
        "SELECT start, end, globalTid, correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME")}
    kernels = {(_pid(g), s, dev, st): c for s, g, dev, st, c in db.execute(
        "SELECT start, globalPid, deviceId, streamId, correlationId FROM CUPTI_ACTIVITY_KIND_KERNEL")}
    moved, spent = defaultdict(float), defaultdict(int)
    for i in inst:
        s, e, g = calls[(i["pid"], kernels[(i["pid"], i["start"], i["device"], i["stream"])])]
        (rowid,) = [r for r, rs, re_, rg in ranges if rg == g and rs <= s and e <= re_]
        size = decoded[rowid]["message_bytes"]
        factor = {"AllReduce": 2 * (2 - 1) / 2, "AllGather": 1, "ReduceScatter": 1}.get(i["op"], 1.0)
        if i["matched"]:
            moved[i["op"]] += size * factor
            spent[i["op"]] += i["end"] - max(i["start"], i["wait_end"])
    for row in blobs[1].iter_rows(named=True):
        assert row["bus_gb_per_s"] == pytest.approx(moved[row["operation"]] / spent[row["operation"]])
    assert plain[1]["bus_gb_per_s"].is_null().all()


def test_open_job_gives_the_job_view_in_python(sample, tmp_path):
    """`nsysql.open_job`: the per-rank exports on one clock (DESIGN.md measured 400.019 ms between these two by
    matched collective ends), the straggler finding first, naming rank 1, one finding per rule."""
    import nsysql
    with nsysql.open_job([sample["rank0"], sample["rank1"]], cache_dir=tmp_path) as job:
        assert abs(job.alignment.shifts_ns[1] + 400_019_000) < 5_000 and job.alignment.residual_ns < 50_000
        found = job.findings()
        assert found["rule"][0] == "straggler" and found["title"][0].startswith("Rank 1 arrives late")
        assert found["rule"].n_unique() == found.height
        ov = job.overview()
        assert sorted(ov.gpus["device_id"].to_list()) == [0, 1] and ov.breakdown["pid"].n_unique() == 2
    with pytest.raises(nsysql.NsysqlError, match="not the ranks of one job"):
        nsysql.open_job([sample["rank0"], sample["torchrun"]], cache_dir=tmp_path)


def test_commands_answer_for_the_job_given_one_export_per_rank(tmp_path):
    """Our per-rank fixtures through the CLI: summarize, overview and findings read them as one job (the ranks
    first, the straggler finding first, every rank's steps); a missing export or exports that are not one job get
    one line and exit 1."""
    import json

    from typer.testing import CliRunner

    from nsysql.cli.app import app
    pair = [str(OWN / "ddp-2gpu-rank0" / "export.sqlite.xz"), str(OWN / "ddp-2gpu-rank1" / "export.sqlite.xz")]
    cache = ["--cache-dir", str(tmp_path / "cache")]
    runner = CliRunner()
    res = runner.invoke(app, ["summarize", *pair, "-f", "json", *cache])
    assert res.exit_code == 0, res.output
    assert "2 exports of one job" in res.stderr
    doc = json.loads(res.stdout)
    rows = doc["communication"]["rows"]
    assert {r["rank"] for r in rows} == {0, 1} and {r["step"] for r in rows} == {1, 2, 3, 4}
    assert [r["rank"] for r in rows if r["straggler"] and r["step"] == 2] == [1]
    assert doc["findings"][0]["rule"] == "straggler" and doc["findings"][0]["title"].startswith("Rank 1 arrives late")
    assert len({f["rule"] for f in doc["findings"]}) == len(doc["findings"])
    assert sorted(g["device_id"] for g in doc["overview"]["gpus"]) == [0, 1]
    res = runner.invoke(app, ["findings", *pair, "--top", "1", *cache], env={"COLUMNS": "80"})
    assert res.exit_code == 0 and "1. Rank 1 arrives late" in res.stdout, res.output
    res = runner.invoke(app, ["overview", *pair, *cache], env={"COLUMNS": "80"})
    assert res.exit_code == 0 and "2 r1" in res.stdout and "waiting for other ranks" in res.stdout, res.output
    assert max(len(line) for line in res.stdout.splitlines()) <= 80
    for bad, words in (([pair[0], str(tmp_path / "nope.sqlite")], "nope: "),
                       ([pair[0], str(OWN / "cnn-pinned-train" / "export.sqlite.xz")], "not the ranks of one job")):
        for command in ("findings", "overview"):
            res = runner.invoke(app, [command, *bad, *cache])
            assert res.exit_code == 1 and words in res.output and len(res.output.strip().splitlines()) == 1, \
                res.output


def test_job_overview_step_statistics_over_every_rank(sample, tmp_path):
    """The job's step statistics are over both ranks' analysed steps: count, mean, median and max wall time of the
    `profiled_step` ranges read from the raw rows of each export."""
    import statistics

    import nsysql
    walls = [e - s for name in ("own-rank0", "own-rank1") for s, e in Raw(sample[name]).steps_by_pid()]
    with nsysql.open_job([sample["own-rank0"], sample["own-rank1"]], cache_dir=tmp_path) as job:
        stats = job.overview().stats
    assert stats["analysed_steps"] == len(walls) == 8 and stats["max_ns"] == max(walls)
    assert stats["mean_ns"] == pytest.approx(statistics.fmean(walls))
    assert stats["median_ns"] == pytest.approx(statistics.median(walls))


@pytest.mark.parametrize("name,overruns", [("torchrun", True), ("own-torchrun", False), ("own-fsdp", False)])
def test_steps_overrun_is_the_busy_time_past_each_step(sample, tmp_path, name, overruns):
    """steps' overrun_ns: the union of the step's ops (launched inside it on any thread of its process) after the
    step's end; GPU busy above 100 % only with an overrun."""
    import nsysql
    raw = Raw(sample[name])
    want = defaultdict(list)
    for o in raw.ops:
        step = raw.step_of(o)
        if step is not None:
            end = raw.steps[o[1]][step][1]
            if o[5] > end:
                want[(o[1], step)].append((max(o[4], end), o[5]))
    with nsysql.open(sample[name], cache_dir=tmp_path) as ex:
        steps = ex.steps()
    for r in steps.iter_rows(named=True):
        assert r["overrun_ns"] == length(merge(want[(r["pid"], r["step"])])), (r["pid"], r["step"])
        assert r["gpu_busy_pct"] <= 100 or r["overrun_ns"] > 0
    if overruns:  # the shared capture's all-reduces run past the step (148 % busy in rank 0's step 2)
        assert steps["overrun_ns"].max() > 0 and steps["gpu_busy_pct"].max() > 100


@pytest.mark.skipif(not (FORMATS / "export.sqlite.xz").exists(), reason="no formats sample")
def test_collectives_command_says_what_payloads_would_add(tmp_path):
    """`nsysql collectives` without NCCL's payloads: one note naming `--include-blobs=true`, and no empty size or
    bandwidth columns in the table; with them, no note and both columns."""
    from typer.testing import CliRunner

    from nsysql.cli.app import app
    cache = ["--cache-dir", str(tmp_path / "cache")]
    res = CliRunner().invoke(app, ["collectives", str(FORMATS / "export.sqlite.xz"), *cache], env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    assert "--include-blobs=true" in res.stderr and "bus_gb" not in res.stdout and "AllReduce" in res.stdout
    res = CliRunner().invoke(app, ["collectives", str(FORMATS / "export-include-blobs.sqlite.xz"), "--wide", *cache])
    assert res.exit_code == 0 and not res.stderr and "bus_gb" in res.stdout, res.output
