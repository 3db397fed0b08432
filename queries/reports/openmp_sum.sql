-- nsysql: reports.openmp_sum v1
-- purpose: OpenMP events summed by kind and name, identical to `nsys stats -r openmp_sum` (Nsight Systems 2025.3).
-- requires: openmp_event
-- params: none
-- notes: As NVIDIA: each OPENMP_EVENT_KIND_* table is summed on its own, so a name found in two tables (a sync
--   region and the wait inside it, say) is two rows; Time (%) is of the time of all OpenMP events listed, not of the
--   run. Ties in total time: by table and name id here; NVIDIA's order of them varies from run to run (it reads
--   the tables in the order of a Python set).
-- columns:
--   Time (%) | DOUBLE | pct of all OpenMP event time | 1
--   Total Time (ns) | BIGINT | ns
--   Count | BIGINT | count
--   Avg (ns) | DOUBLE | ns | 1
--   Med (ns) | DOUBLE | ns | 1
--   Min (ns) | BIGINT | ns
--   Max (ns) | BIGINT | ns
--   StdDev (ns) | DOUBLE | ns (sample standard deviation; 0 for one event) | 1
--   Name | VARCHAR | text
SELECT 100.0 * SUM(end_ns - start_ns) / SUM(SUM(end_ns - start_ns)) OVER () AS "Time (%)",
       SUM(end_ns - start_ns) AS "Total Time (ns)",
       COUNT(*) AS "Count",
       AVG(end_ns - start_ns) AS "Avg (ns)",
       MEDIAN(end_ns - start_ns) AS "Med (ns)",
       MIN(end_ns - start_ns) AS "Min (ns)",
       MAX(end_ns - start_ns) AS "Max (ns)",
       COALESCE(STDDEV_SAMP(end_ns - start_ns), 0.0) AS "StdDev (ns)",
       name AS "Name"
FROM openmp_event
GROUP BY kind, name_id, name
ORDER BY "Total Time (ns)" DESC, kind, name_id;
