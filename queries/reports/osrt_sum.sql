-- nsysql: reports.osrt_sum v2
-- purpose: OS runtime library calls (poll, read, pthread_*, ...) summed by name, identical to `nsys stats -r osrt_sum` (Nsight Systems 2025.3).
-- requires: osrt
-- params: none
-- notes: One row per name id, as NVIDIA's script groups (`GROUP BY nameId`): a name stored under two ids in
--   StringIds gives two rows, as nsys stats prints.
-- columns:
--   Time (%) | DOUBLE | pct of all OS runtime time | 1
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
       api_name AS "Name"
FROM osrt
GROUP BY name_id, api_name
ORDER BY "Total Time (ns)" DESC, "Num Calls", "Name", name_id;
