"""The several-exports analyses on Spark SQL over the Parquet dataset of a two-rank job (`nsysql parquet` of
ddp-2gpu-rank0 and ddp-2gpu-rank1): every rank's steps and `comm`'s per-rank figures (communication kernels and the
union of their intervals per rank and step), computed in Spark over all exports at once (the `export` column
kept, as docs/cluster-cookbook.md's "All ranks at once" says), equal to nsysql's own results."""
from __future__ import annotations

import polars as pl
import pytest
from spark_session import spark_or_skip
from typer.testing import CliRunner

from nsysql.cli.app import app

# a Spark JVM (CI installs PySpark): dealt out first under xdist (conftest.py)
pytestmark = pytest.mark.heavy

RANKS = ["ddp-2gpu-rank0", "ddp-2gpu-rank1"]

STEPS = """
SELECT export, pid, row_number() OVER (PARTITION BY export, pid ORDER BY start_ns, range_id) AS step,
       start_ns, end_ns, end_ns - start_ns AS wall_ns
FROM user_range WHERE is_step
"""

# per rank (export, pid, device) and step: the communication kernels launched in the step (their launching call
# starts inside the step's span, in the step's process) and the union of their intervals (gaps and islands)
COMM = f"""
WITH step AS ({STEPS}),
comm AS (
    SELECT o.export, o.pid, o.device_id, o.start_ns, o.end_ns, r.start_ns AS call_ns
    FROM gpu_op AS o
    JOIN gpu_op_attribution AS a ON a.export = o.export AND a.op_kind = o.op_kind AND a.op_id = o.op_id
    JOIN runtime AS r ON r.export = o.export AND r.runtime_id = o.runtime_id
    WHERE o.op_kind = 'kernel' AND a.direction = 'comm'
),
in_step AS (
    SELECT c.export, c.pid, c.device_id, s.step, c.start_ns, c.end_ns
    FROM comm AS c JOIN step AS s ON s.export = c.export AND s.pid = c.pid
                                 AND c.call_ns >= s.start_ns AND c.call_ns <= s.end_ns
),
marked AS (
    SELECT *, MAX(end_ns) OVER (PARTITION BY export, pid, device_id, step ORDER BY start_ns, end_ns
                                ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reached
    FROM in_step
),
islands AS (
    SELECT *, SUM(CASE WHEN reached IS NULL OR start_ns > reached THEN 1 ELSE 0 END)
                  OVER (PARTITION BY export, pid, device_id, step ORDER BY start_ns, end_ns
                        ROWS UNBOUNDED PRECEDING) AS island
    FROM marked
),
spans AS (
    SELECT export, pid, device_id, step, MAX(end_ns) - MIN(start_ns) AS ns, COUNT(*) AS n
    FROM islands GROUP BY export, pid, device_id, step, island
)
SELECT export, pid, device_id, step, SUM(n) AS comm_kernels, SUM(ns) AS comm_ns
FROM spans GROUP BY export, pid, device_id, step
"""


@pytest.fixture(scope="module")
def job(export_files, tmp_path_factory, cache_dir):
    """(the dataset of both ranks, their paths)."""
    if any(r not in export_files for r in RANKS):
        pytest.skip("fixtures ddp-2gpu-rank0/1 absent")
    paths = [str(export_files[r]) for r in RANKS]
    ds = tmp_path_factory.mktemp("job") / "ds"
    res = CliRunner().invoke(app, ["parquet", *paths, "-o", str(ds), "--cache-dir", str(cache_dir)])
    assert res.exit_code == 0, res.output
    return ds, paths


@pytest.fixture(scope="module")
def spark(job):
    session = spark_or_skip()
    ds, _ = job
    for table in ("user_range", "gpu_op", "gpu_op_attribution", "runtime"):
        session.read.parquet(str(ds / table)).createOrReplaceTempView(table)  # every export, `export` kept
    return session


def _nsysql(command: str, paths: list[str], cache_dir, tmp_path) -> pl.DataFrame:
    out = tmp_path / f"{command}.csv"
    res = CliRunner().invoke(app, [command, *paths, "-f", "csv", "-o", str(out), "--cache-dir", str(cache_dir)])
    assert res.exit_code == 0, res.output
    return pl.read_csv(out)


def test_every_ranks_steps_on_spark(spark, job, cache_dir, tmp_path):
    _, paths = job
    got = sorted(tuple(r) for r in spark.sql(STEPS).collect())
    want = _nsysql("steps", paths, cache_dir, tmp_path)
    assert set(want["export"]) == set(RANKS)
    expected = sorted(want.select("export", "pid", "step", "start_ns", "end_ns", "wall_ns").iter_rows())
    assert len(got) >= 2 * 3 and got == expected


def test_comm_per_rank_figures_on_spark(spark, job, cache_dir, tmp_path):
    _, paths = job
    got = {(r["export"], r["pid"], r["device_id"], r["step"]): (r["comm_kernels"], r["comm_ns"])
           for r in spark.sql(COMM).collect()}
    want = _nsysql("comm", paths, cache_dir, tmp_path).filter(pl.col("comm_kernels") > 0)
    expected = {(r["export"], r["pid"], r["device_id"], r["step"]): (r["comm_kernels"], r["comm_ns"])
                for r in want.iter_rows(named=True)}
    assert {k[0] for k in expected} == set(RANKS)
    assert got == expected
