-- nsysql: reports.cuda_gpu_mem_size_sum v1
-- purpose: Bytes moved by memory copies and set by memsets per operation kind (MB = 10^6 bytes), identical to `nsys stats -r cuda_gpu_mem_size_sum` (Nsight Systems 2025.3).
-- requires: memcpy|memset
-- params: none
-- columns:
--   Total (MB) | DOUBLE | MB (10^6 bytes) | 3
--   Count | BIGINT | count
--   Avg (MB) | DOUBLE | MB | 3
--   Med (MB) | DOUBLE | MB | 3
--   Min (MB) | DOUBLE | MB | 3
--   Max (MB) | DOUBLE | MB | 3
--   StdDev (MB) | DOUBLE | MB (sample standard deviation) | 3
--   Operation | VARCHAR | text
WITH ops AS (
    SELECT '[CUDA memcpy ' || copy_kind || ']' AS operation, bytes FROM memcpy
    UNION ALL
    SELECT '[CUDA memset]', bytes FROM memset
)
SELECT SUM(bytes) / 1e6 AS "Total (MB)",
       COUNT(*) AS "Count",
       AVG(bytes) / 1e6 AS "Avg (MB)",
       MEDIAN(bytes) / 1e6 AS "Med (MB)",
       MIN(bytes) / 1e6 AS "Min (MB)",
       MAX(bytes) / 1e6 AS "Max (MB)",
       COALESCE(STDDEV_SAMP(bytes), 0.0) / 1e6 AS "StdDev (MB)",
       operation AS "Operation"
FROM ops
GROUP BY operation
ORDER BY SUM(bytes) DESC, "Operation";
