-- nsysql: reports.cuda_gpu_mem_time_sum v1
-- purpose: GPU time of memory copies and memsets per operation kind, identical to `nsys stats -r cuda_gpu_mem_time_sum` (Nsight Systems 2025.3).
-- requires: memcpy|memset
-- params: none
-- columns:
--   Time (%) | DOUBLE | pct of all memory-operation time | 1
--   Total Time (ns) | BIGINT | ns
--   Count | BIGINT | count
--   Avg (ns) | DOUBLE | ns | 1
--   Med (ns) | DOUBLE | ns | 1
--   Min (ns) | BIGINT | ns
--   Max (ns) | BIGINT | ns
--   StdDev (ns) | DOUBLE | ns (sample standard deviation) | 1
--   Operation | VARCHAR | text
WITH ops AS (
    SELECT '[CUDA memcpy ' || copy_kind || ']' AS operation, end_ns - start_ns AS dur FROM memcpy
    UNION ALL
    SELECT '[CUDA memset]', end_ns - start_ns FROM memset
)
SELECT 100.0 * SUM(dur) / SUM(SUM(dur)) OVER () AS "Time (%)",
       SUM(dur) AS "Total Time (ns)",
       COUNT(*) AS "Count",
       AVG(dur) AS "Avg (ns)",
       MEDIAN(dur) AS "Med (ns)",
       MIN(dur) AS "Min (ns)",
       MAX(dur) AS "Max (ns)",
       COALESCE(STDDEV_SAMP(dur), 0.0) AS "StdDev (ns)",
       operation AS "Operation"
FROM ops
GROUP BY operation
ORDER BY "Total Time (ns)" DESC, "Count", "Operation";
