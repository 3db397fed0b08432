-- nsysql: reports.nvtx_kern_sum v3
-- purpose: Kernel time grouped by enclosing NVTX range, launching process/thread and kernel name, identical to `nsys stats -r nvtx_kern_sum` (Nsight Systems 2025.3).
-- requires: kernel, runtime, nvtx_range
-- params: none
-- notes: A kernel belongs to every range on its launching thread's stack when its CUDA API call ran (not only the innermost),
--   so nested ranges each count it. Kernels outside every range form rows with an empty range name and NVTX Inst 0.
--   Written over the relations a Parquet dataset has (no storage tables such as nvtx_node or gpu_op_int), so
--   the file runs unchanged on DuckDB, Polars or Spark over `nsysql parquet` output.
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
launched AS (
    SELECT k.kernel_id, k.end_ns - k.start_ns AS dur, k.kernel_name, rt.runtime_id, rt.pid, rt.tid
    FROM kernel AS k
    LEFT JOIN runtime AS rt ON rt.correlation_id = k.correlation_id AND rt.pid = k.pid
),
combo AS (
    SELECT l.kernel_id, l.dur, l.kernel_name, l.pid, l.tid, r.range_id, r.range_name, r.style
    FROM launched AS l
    LEFT JOIN runtime_nvtx AS rn ON rn.runtime_id = l.runtime_id
    LEFT JOIN nvtx_ancestor AS a ON a.range_id = rn.range_id
    LEFT JOIN nvtx_range AS r ON r.range_id = a.ancestor_id
)
SELECT range_name AS "NVTX Range",
       style AS "Style",
       pid AS "PID",
       tid AS "TID",
       COUNT(DISTINCT range_id) AS "NVTX Inst",
       COUNT(DISTINCT kernel_id) AS "Kern Inst",
       SUM(dur) AS "Total Time (ns)",
       AVG(dur) AS "Avg (ns)",
       MEDIAN(dur) AS "Med (ns)",
       MIN(dur) AS "Min (ns)",
       MAX(dur) AS "Max (ns)",
       COALESCE(STDDEV_SAMP(dur), 0.0) AS "StdDev (ns)",
       kernel_name AS "Kernel Name"
FROM combo
GROUP BY pid, tid, range_name, style, kernel_name
ORDER BY "NVTX Range" NULLS FIRST, "PID" NULLS FIRST, "TID" NULLS FIRST, "Total Time (ns)" DESC, "Style", "Kernel Name";
