-- nsysql: reports.cuda_api_sum v2
-- purpose: CUDA runtime/driver API calls summed by name, identical to `nsys stats -r cuda_api_sum` (Nsight Systems 2025.3).
-- requires: runtime
-- params: none
-- notes: One row per name id, as NVIDIA's script groups (`GROUP BY nameId`): an export whose StringIds holds
--   one API name under two ids (seen in a 2022 MPI export) has two rows of that name, as nsys stats prints.
-- columns:
--   Time (%) | DOUBLE | pct of all API time | 1
--   Total Time (ns) | BIGINT | ns
--   Num Calls | BIGINT | count
--   Avg (ns) | DOUBLE | ns | 1
--   Med (ns) | DOUBLE | ns | 1
--   Min (ns) | BIGINT | ns
--   Max (ns) | BIGINT | ns
--   StdDev (ns) | DOUBLE | ns (sample standard deviation; 0 for one call) | 1
--   Name | VARCHAR | text
SELECT 100.0 * SUM(end_ns - start_ns) / SUM(SUM(end_ns - start_ns)) OVER () AS "Time (%)",
       SUM(end_ns - start_ns) AS "Total Time (ns)",
       COUNT(*) AS "Num Calls",
       AVG(end_ns - start_ns) AS "Avg (ns)",
       MEDIAN(end_ns - start_ns) AS "Med (ns)",
       MIN(end_ns - start_ns) AS "Min (ns)",
       MAX(end_ns - start_ns) AS "Max (ns)",
       COALESCE(STDDEV_SAMP(end_ns - start_ns), 0.0) AS "StdDev (ns)",
       api_short_name AS "Name"
FROM runtime
GROUP BY name_id, api_short_name
ORDER BY "Total Time (ns)" DESC, "Num Calls", "Name", name_id;
