-- nsysql: reports.openacc_sum v1
-- purpose: OpenACC events summed by name and source line (`Compute construct@jacobi.c:42`), identical to `nsys stats -r openacc_sum` (Nsight Systems 2025.3).
-- requires: openacc_event
-- params: none
-- notes: As NVIDIA: an event with a source file is named `<event>@<file>:<line>`, one without (device init,
--   runtime shutdown) by the event alone, and events of the same name are summed whatever table they are in.
--   Time (%) is of the time of all OpenACC events listed, not of the run. Ties in total time: by name, as NVIDIA's.
-- text-min: "Name" 44
-- columns:
--   Time (%) | DOUBLE | pct of all OpenACC event time | 1
--   Total Time (ns) | BIGINT | ns
--   Num Calls | BIGINT | count
--   Avg (ns) | DOUBLE | ns | 1
--   Med (ns) | DOUBLE | ns | 1
--   Min (ns) | BIGINT | ns
--   Max (ns) | BIGINT | ns
--   StdDev (ns) | DOUBLE | ns (sample standard deviation; 0 for one event) | 1
--   Name | VARCHAR | text
WITH named AS (
    SELECT CASE WHEN source_file IS NOT NULL THEN name || '@' || source_file || ':' || line ELSE name END AS name,
           end_ns - start_ns AS ns
    FROM openacc_event
)
SELECT 100.0 * SUM(ns) / SUM(SUM(ns)) OVER () AS "Time (%)",
       SUM(ns) AS "Total Time (ns)",
       COUNT(*) AS "Num Calls",
       AVG(ns) AS "Avg (ns)",
       MEDIAN(ns) AS "Med (ns)",
       MIN(ns) AS "Min (ns)",
       MAX(ns) AS "Max (ns)",
       COALESCE(STDDEV_SAMP(ns), 0.0) AS "StdDev (ns)",
       name AS "Name"
FROM named
GROUP BY name
ORDER BY "Total Time (ns)" DESC, name NULLS FIRST;
