-- nsysql: reports.cuda_gpu_kern_sum v1
-- purpose: GPU time per kernel name (demangled), identical to `nsys stats -r cuda_gpu_kern_sum` (Nsight Systems 2025.3).
-- requires: kernel
-- params: none
-- columns:
--   Time (%) | DOUBLE | pct of all kernel time | 1
--   Total Time (ns) | BIGINT | ns
--   Instances | BIGINT | count
--   Avg (ns) | DOUBLE | ns | 1
--   Med (ns) | DOUBLE | ns | 1
--   Min (ns) | BIGINT | ns
--   Max (ns) | BIGINT | ns
--   StdDev (ns) | DOUBLE | ns (sample standard deviation) | 1
--   Name | VARCHAR | text (demangled kernel name)
SELECT 100.0 * SUM(end_ns - start_ns) / SUM(SUM(end_ns - start_ns)) OVER () AS "Time (%)",
       SUM(end_ns - start_ns) AS "Total Time (ns)",
       COUNT(*) AS "Instances",
       AVG(end_ns - start_ns) AS "Avg (ns)",
       MEDIAN(end_ns - start_ns) AS "Med (ns)",
       MIN(end_ns - start_ns) AS "Min (ns)",
       MAX(end_ns - start_ns) AS "Max (ns)",
       COALESCE(STDDEV_SAMP(end_ns - start_ns), 0.0) AS "StdDev (ns)",
       kernel_name AS "Name"
FROM kernel
GROUP BY kernel_name
ORDER BY "Total Time (ns)" DESC, "Instances", "Name";
