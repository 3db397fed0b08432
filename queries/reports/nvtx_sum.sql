-- nsysql: reports.nvtx_sum v1
-- purpose: CPU time of NVTX ranges summed by name and style, identical to `nsys stats -r nvtx_sum` (Nsight Systems 2025.3).
-- requires: nvtx_range
-- params: none
-- optional: "Style"
-- columns:
--   Time (%) | DOUBLE | pct of all range time | 1
--   Total Time (ns) | BIGINT | ns
--   Instances | BIGINT | count
--   Avg (ns) | DOUBLE | ns | 1
--   Med (ns) | DOUBLE | ns | 1
--   Min (ns) | BIGINT | ns
--   Max (ns) | BIGINT | ns
--   StdDev (ns) | DOUBLE | ns (sample standard deviation) | 1
--   Style | VARCHAR | PushPop or StartEnd
--   Range | VARCHAR | text (`<domain>:<text>`)
SELECT 100.0 * SUM(duration_ns) / SUM(SUM(duration_ns)) OVER () AS "Time (%)",
       SUM(duration_ns) AS "Total Time (ns)",
       COUNT(*) AS "Instances",
       AVG(duration_ns) AS "Avg (ns)",
       MEDIAN(duration_ns) AS "Med (ns)",
       MIN(duration_ns) AS "Min (ns)",
       MAX(duration_ns) AS "Max (ns)",
       COALESCE(STDDEV_SAMP(duration_ns), 0.0) AS "StdDev (ns)",
       style AS "Style",
       range_name AS "Range"
FROM nvtx_range
GROUP BY range_name, style
ORDER BY "Total Time (ns)" DESC, "Range", "Style";
