"""A job of many ranks, one export each (bench/simulate_ranks.py: copies of the real DDP pair fixtures/ddp-2gpu-rank0
and -rank1, each with its own pid, host, RANK and clock, one rank late): the straggler is the planted rank and every
rank's lateness is a plain walk's of the raw rows (tests/test_ranks.py's walk: NCCL kernels by name, instances
matched by the k-th kernel on each rank's n-th NCCL stream, each export put on the first one's clock by its UTC
session start and the median gap of the collective ends); and past one machine, Spark over the job's Parquet dataset
(nsysql/answers/job_spark.py) gives the same lateness and stragglers as the local run on 64 ranks."""
from __future__ import annotations

import importlib.util
from collections import defaultdict
from pathlib import Path

import polars as pl
import pytest
from spark_session import spark_or_skip

from test_ranks import Raw, instances, waits

pytestmark = pytest.mark.heavy  # 64 caches built for the Spark comparison: scheduled first under xdist

ROOT = Path(__file__).resolve().parents[1]
PAIR = [ROOT / "fixtures" / f"ddp-2gpu-rank{r}" / "export.sqlite.xz" for r in (0, 1)]


def _simulate(out: Path, ranks: int, late: int, osrt: bool = True) -> list[Path]:
    if not all(p.exists() for p in PAIR):
        pytest.skip("fixtures ddp-2gpu-rank0/1 absent")
    spec = importlib.util.spec_from_file_location("simulate_ranks", ROOT / "bench" / "simulate_ranks.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.simulate(out, ranks, late, *PAIR, osrt=osrt)
    return sorted(out.glob("rank_*.sqlite"))


def _median(values: list[int]) -> int:
    v = sorted(values)
    mid = len(v) // 2
    return int(v[mid] if len(v) % 2 else (v[mid - 1] + v[mid]) / 2)


def plain_job(paths: list[Path]) -> tuple[list[int], dict[tuple[int, int], int]]:
    """(each export's shift onto the first one's clock, {(pid, step): late_ns}) from the raw rows."""
    raws = [Raw(p) for p in paths]
    own = [instances(r, source=i) for i, r in enumerate(raws)]
    coarse = [r.utc - raws[0].utc for r in raws]
    first_end = {i["key"]: i["end"] for i in own[0]}
    shifts = [0] + [c + _median([first_end[i["key"]] - (i["end"] + c) for i in inst if i["key"] in first_end])
                    for c, inst in zip(coarse[1:], own[1:])]
    inst = waits([i for k, r in enumerate(raws) for i in instances(r, shift=shifts[k], source=k)])
    late: dict = defaultdict(int)
    for i in inst:
        if i["step"] is not None:
            late[(i["pid"], i["step"])] += i["late"]
    return shifts, dict(late)


@pytest.fixture(scope="module")
def eight(tmp_path_factory):
    return _simulate(tmp_path_factory.mktemp("sim8") / "job", 8, 5)


def test_the_straggler_of_a_simulated_job_is_the_planted_rank(eight, tmp_path):
    import nsysql
    from nsysql.answers.job_views import straggler_finding
    shifts, late = plain_job(eight)
    with nsysql.open_job(eight, cache_dir=tmp_path) as job:
        assert list(job.alignment.shifts_ns) == shifts
        got = job.comm().filter(pl.col("analysed"))
        finding = straggler_finding(job.exports)
    # the waiting ranks in runs: one short line for thousands of ranks
    assert finding["title"][0].startswith("Rank 5 arrives late; ranks 0-4, 6, 7 wait ")
    assert got["rank"].n_unique() == 8 and got["pid"].n_unique() == 8  # each export its own process and RANK
    assert {(r["pid"], r["step"]): r["late_ns"] for r in got.iter_rows(named=True)} == late
    stragglers = got.filter(pl.col("straggler"))
    assert set(stragglers["rank"]) == {5} and stragglers.height == got["step"].n_unique()
    assert stragglers.filter(pl.col("step") == 2)["late_ns"][0] > 25_000_000  # the 25 ms sleep of step 2


def test_spark_matches_the_collectives_of_64_ranks_as_the_local_run(tmp_path_factory):
    import nsysql
    from nsysql.answers import job_spark
    spark = spark_or_skip()
    work = tmp_path_factory.mktemp("sim64")
    paths = _simulate(work / "job", 64, 40, osrt=False)  # no OS runtime rows: the matching needs none
    ds = work / "ds"
    with nsysql.open_job(paths, cache_dir=work / "cache") as job:
        local = job.comm().filter(pl.col("step").is_not_null())
        for ex in job.exports:  # the job's Parquet dataset, one partition per rank (as `nsysql parquet` writes)
            ex.to_parquet(ds, name=ex.path.name.removesuffix(".sqlite"))
            ex.release()
    rows = job_spark.job_comm(spark, ds).collect()
    got = {(r["pid"], r["step"]): (r["late_ns"], r["straggler"]) for r in rows}
    want = {(r["pid"], r["step"]): (r["late_ns"], r["straggler"]) for r in local.iter_rows(named=True)}
    assert len(got) == 64 * 4 and got == want
    assert {r["pid"] for r in rows if r["straggler"]} == {100_040}  # rank 40's process (bench/simulate_ranks.py)
