"""The job analyses of nsysql/answers/job.py past one machine: the collectives of every rank matched, the clocks
aligned, each rank's lateness and the straggler of each step, in Spark SQL over the Parquet dataset of the job's
per-rank exports (`nsysql parquet rank*.sqlite -o DS`, one partition per rank; docs/cluster-cookbook.md).

The same rules as the local run, written for Spark (no ASOF join, no table macros): a rank is an (export, pid,
GPU) that ran communication kernels (gpu_op_attribution's `comm`); an instance's key is (the rank's n-th NCCL
stream by first use, the k-th kernel on it); a collective is matched when every rank has exactly one instance
and they name one operation. Each export is shifted onto the first export's clock (the least export name: the
order nsysql gives a sorted glob) by the UTC session starts, then by the median gap of its matched collective
ends to the first export's (truncated to whole ns, as job.link does). late_ns = start - the first arrival;
per (export, pid, GPU, step) the sum over the step's instances; the straggler of a step is the rank with the
largest late_ns when above 0 (job.restraggle). Only SQL here: the caller brings a SparkSession (PySpark is not a
dependency of nsysql).
"""
from __future__ import annotations

from pathlib import Path

TABLES = ("kernel", "gpu_op", "gpu_op_attribution", "runtime", "user_range", "session")

INSTANCES = r"""
WITH step AS (
    SELECT export, pid, row_number() OVER (PARTITION BY export, pid ORDER BY start_ns, range_id) AS step,
           start_ns, end_ns
    FROM user_range WHERE is_step
),
comm AS (
    SELECT k.export, k.kernel_id, k.pid, k.device_id, k.stream_id, k.start_ns, k.end_ns, k.kernel_name,
           r.start_ns AS call_start_ns, r.end_ns AS call_end_ns
    FROM kernel AS k
    JOIN gpu_op AS o ON o.export = k.export AND o.op_kind = 'kernel' AND o.op_id = k.kernel_id
    JOIN gpu_op_attribution AS a ON a.export = o.export AND a.op_kind = o.op_kind AND a.op_id = o.op_id
    LEFT JOIN runtime AS r ON r.export = o.export AND r.runtime_id = o.runtime_id
    WHERE a.direction = 'comm'
),
streams AS (
    SELECT export, pid, device_id, stream_id,
           row_number() OVER (PARTITION BY export, pid, device_id ORDER BY MIN(start_ns), stream_id) AS stream_order
    FROM comm GROUP BY export, pid, device_id, stream_id
)
SELECT c.export, c.pid, c.device_id, c.kernel_id, c.start_ns, c.end_ns,
       regexp_extract(c.kernel_name, 'nccl(?:Dev)?Kernel_([A-Za-z]+?)(?:_|\\(|$)', 1) AS operation,
       st.stream_order,
       row_number() OVER (PARTITION BY c.export, c.pid, c.device_id, c.stream_id
                          ORDER BY c.start_ns, c.kernel_id) AS seq,
       s.step
FROM comm AS c
JOIN streams AS st ON st.export = c.export AND st.pid = c.pid AND st.device_id = c.device_id
                  AND st.stream_id = c.stream_id
LEFT JOIN step AS s ON s.export = c.export AND s.pid = c.pid
                   AND s.start_ns <= c.call_start_ns AND c.call_end_ns <= s.end_ns
"""

MATCHED = """
WITH job AS (SELECT COUNT(*) AS ranks FROM (SELECT DISTINCT export, pid, device_id FROM comm_instances)),
coll AS (
    SELECT stream_order, seq, COUNT(*) AS n, COUNT(DISTINCT export, pid, device_id) AS distinct_ranks,
           COUNT(DISTINCT operation) AS operations
    FROM comm_instances GROUP BY stream_order, seq
)
SELECT i.*, c.n = (SELECT ranks FROM job) AND c.distinct_ranks = c.n AND c.operations = 1
            AND (SELECT ranks FROM job) > 1 AS matched
FROM comm_instances AS i JOIN coll AS c ON c.stream_order = i.stream_order AND c.seq = i.seq
"""

SHIFTS = """
WITH first AS (SELECT MIN(export) AS export FROM session),
coarse AS (
    SELECT s.export, s.utc_start_ns - f.utc_start_ns AS coarse_ns
    FROM session AS s
    CROSS JOIN (SELECT utc_start_ns FROM session WHERE export = (SELECT export FROM first)) AS f
),
ends AS (
    SELECT m.export, m.stream_order, m.seq, MAX(m.end_ns) + c.coarse_ns AS end_ns
    FROM comm_matched AS m JOIN coarse AS c ON c.export = m.export
    WHERE m.matched GROUP BY m.export, m.stream_order, m.seq, c.coarse_ns
),
ref AS (SELECT stream_order, seq, end_ns FROM ends WHERE export = (SELECT export FROM first)),
refine AS (
    SELECT e.export, CAST(percentile(r.end_ns - e.end_ns, 0.5) AS BIGINT) AS refine_ns
    FROM ends AS e JOIN ref AS r ON r.stream_order = e.stream_order AND r.seq = e.seq
    GROUP BY e.export
)
SELECT c.export, c.coarse_ns + CASE WHEN c.export = (SELECT export FROM first) THEN 0
                                    ELSE COALESCE(f.refine_ns, 0) END AS shift_ns
FROM coarse AS c LEFT JOIN refine AS f ON f.export = c.export
"""

LATE = """
WITH placed AS (
    SELECT m.*, m.start_ns + s.shift_ns AS job_start_ns
    FROM comm_matched AS m JOIN comm_shifts AS s ON s.export = m.export
),
inst AS (
    SELECT *, CASE WHEN matched THEN job_start_ns - MIN(job_start_ns) OVER (PARTITION BY stream_order, seq)
                   ELSE 0 END AS late_ns
    FROM placed
),
per_step AS (
    SELECT export, pid, device_id, step, SUM(late_ns) AS late_ns, SUM(CASE WHEN matched THEN 1 ELSE 0 END)
           AS collectives
    FROM inst WHERE step IS NOT NULL GROUP BY export, pid, device_id, step
)
SELECT *, COUNT(*) OVER (PARTITION BY step) > 1 AND late_ns > 0
          AND late_ns = MAX(late_ns) OVER (PARTITION BY step) AS straggler
FROM per_step
"""


def register(spark, dataset: str | Path) -> None:
    """The tables the job analyses read, every export's rows (`export` kept), as Spark temp views."""
    for table in TABLES:
        spark.read.parquet(str(Path(dataset) / table)).createOrReplaceTempView(table)


def job_comm(spark, dataset: str | Path | None = None):
    """Per (export, pid, device_id, step): late_ns, matched collectives and straggler, as a Spark DataFrame; with
    `dataset`, its tables are registered first (`register`). The steps in between stay as temp views
    (comm_instances, comm_matched, comm_shifts) for further queries."""
    if dataset is not None:
        register(spark, dataset)
    for name, sql in (("comm_instances", INSTANCES), ("comm_matched", MATCHED), ("comm_shifts", SHIFTS)):
        df = spark.sql(sql).cache()  # each step once: a view's plan is otherwise run again by every reader
        df.count()
        df.createOrReplaceTempView(name)
    return spark.sql(LATE)
