-- nsysql: reports.nvtx_startend_sum v1
-- purpose: CPU time of NVTX start/end ranges summed by name, identical to `nsys stats -r nvtx_startend_sum` (Nsight Systems 2025.3).
-- requires: nvtx_range
-- params: none
-- notes: nvtx_sum restricted to StartEnd ranges, without the Style column. An unterminated range ends at the last
--   NVTX timestamp. Rows with equal total time come in name order; an export with NVTX data but no start/end
--   ranges gives an empty table (NVIDIA prints no rows either).
-- columns:
--   Time (%) | DOUBLE | pct of all start/end range time | 1
--   Total Time (ns) | BIGINT | ns
--   Instances | BIGINT | count
--   Avg (ns) | DOUBLE | ns | 1
--   Med (ns) | DOUBLE | ns | 1
--   Min (ns) | BIGINT | ns
--   Max (ns) | BIGINT | ns
--   StdDev (ns) | DOUBLE | ns (sample standard deviation; 0 for one instance) | 1
--   Range | VARCHAR | text (`<domain>:<text>`)
SELECT 100.0 * SUM(duration_ns) / SUM(SUM(duration_ns)) OVER () AS "Time (%)",
       SUM(duration_ns) AS "Total Time (ns)",
       COUNT(*) AS "Instances",
       AVG(duration_ns) AS "Avg (ns)",
       MEDIAN(duration_ns) AS "Med (ns)",
       MIN(duration_ns) AS "Min (ns)",
       MAX(duration_ns) AS "Max (ns)",
       COALESCE(STDDEV_SAMP(duration_ns), 0.0) AS "StdDev (ns)",
       range_name AS "Range"
FROM nvtx_range
WHERE style = 'StartEnd'
GROUP BY range_name
ORDER BY "Total Time (ns)" DESC, "Range";
