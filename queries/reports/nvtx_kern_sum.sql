-- nsysql: reports.nvtx_kern_sum v4
-- purpose: Kernel time grouped by enclosing NVTX range, launching process/thread and kernel name, identical to `nsys stats -r nvtx_kern_sum` (Nsight Systems 2025.3).
-- requires: kernel, runtime, nvtx_range
-- params: none
-- notes: A kernel belongs to every range on its launching thread's stack when its CUDA API call ran (not only the innermost),
--   so nested ranges each count it. Kernels outside every range form rows with an empty range name and NVTX Inst 0.
--   Written over the relations a Parquet dataset has (no storage tables such as nvtx_node or gpu_op_int), so
--   the file runs unchanged on DuckDB, Polars or Spark over `nsysql parquet` output.
-- optional: "Style", "PID", "NVTX Inst", "TID", "Avg (ns)"
-- columns:
--   NVTX Range | VARCHAR | text (`<domain>:<text>`; empty = no range)
--   Style | VARCHAR | PushPop or StartEnd
--   PID | BIGINT | id
--   TID | BIGINT | id
--   NVTX Inst | BIGINT | count (range instances containing these kernels)
--   Kern Inst | BIGINT | count
--   Total Time (ns) | BIGINT | ns
--   Avg (ns) | DOUBLE | ns | 1
--   Med (ns) | DOUBLE | ns | 1
--   Min (ns) | BIGINT | ns
--   Max (ns) | BIGINT | ns
--   StdDev (ns) | DOUBLE | ns (sample standard deviation) | 1
--   Kernel Name | VARCHAR | text (demangled)
WITH
-- kernel names are long (templates), like the range texts below: one integer per distinct name, so that the
-- grouping (two distinct counts and a median over every kernel x enclosing range) hashes integers, not names
kernel_names AS (
    SELECT kernel_name, row_number() OVER (ORDER BY kernel_name) AS kernel_key
    FROM (SELECT DISTINCT kernel_name FROM kernel)
),
launched AS (
    SELECT k.kernel_id, k.end_ns - k.start_ns AS dur, kn.kernel_key, rt.runtime_id, rt.pid, rt.tid
    FROM kernel AS k
    JOIN kernel_names AS kn ON kn.kernel_name IS NOT DISTINCT FROM k.kernel_name
    LEFT JOIN runtime AS rt ON rt.correlation_id = k.correlation_id AND rt.pid = k.pid
),
-- the range texts are long (op markers): group on an integer per distinct (text, style) and look the text up after
names AS (
    SELECT range_name, style, row_number() OVER (ORDER BY range_name, style) AS name_key
    FROM (SELECT DISTINCT range_name, style FROM nvtx_range)
),
range_key AS (
    SELECT r.range_id, n.name_key
    FROM nvtx_range AS r
    JOIN names AS n ON (n.range_name IS NOT DISTINCT FROM r.range_name) AND (n.style IS NOT DISTINCT FROM r.style)
),
combo AS (
    SELECT l.kernel_id, l.dur, l.kernel_key, l.pid, l.tid, a.ancestor_id AS range_id, rk.name_key
    FROM launched AS l
    LEFT JOIN runtime_nvtx AS rn ON rn.runtime_id = l.runtime_id
    LEFT JOIN nvtx_ancestor AS a ON a.range_id = rn.range_id
    LEFT JOIN range_key AS rk ON rk.range_id = a.ancestor_id
),
grouped AS (
    SELECT name_key, pid, tid, kernel_key,
           COUNT(DISTINCT range_id) AS nvtx_inst,
           COUNT(DISTINCT kernel_id) AS kern_inst,
           SUM(dur) AS total_ns,
           AVG(dur) AS avg_ns,
           MEDIAN(dur) AS med_ns,
           MIN(dur) AS min_ns,
           MAX(dur) AS max_ns,
           COALESCE(STDDEV_SAMP(dur), 0.0) AS stddev_ns
    FROM combo
    GROUP BY name_key, pid, tid, kernel_key
)
SELECT n.range_name AS "NVTX Range",
       n.style AS "Style",
       g.pid AS "PID",
       g.tid AS "TID",
       g.nvtx_inst AS "NVTX Inst",
       g.kern_inst AS "Kern Inst",
       g.total_ns AS "Total Time (ns)",
       g.avg_ns AS "Avg (ns)",
       g.med_ns AS "Med (ns)",
       g.min_ns AS "Min (ns)",
       g.max_ns AS "Max (ns)",
       g.stddev_ns AS "StdDev (ns)",
       kn.kernel_name AS "Kernel Name"
FROM grouped AS g
LEFT JOIN names AS n USING (name_key)
JOIN kernel_names AS kn USING (kernel_key)
ORDER BY "NVTX Range" NULLS FIRST, "PID" NULLS FIRST, "TID" NULLS FIRST, "Total Time (ns)" DESC, "Style", "Kernel Name";
