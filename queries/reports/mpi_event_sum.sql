-- nsysql: reports.mpi_event_sum v1
-- purpose: MPI calls summed by kind (p2p, start-wait, other, collectives) and name, identical to `nsys stats -r mpi_event_sum` (Nsight Systems 2025.3).
-- requires: mpi_event
-- params: none
-- notes: As NVIDIA: every row of the four MPI event tables counts (an MPI_Waitall is one row per request, an
--   MPI_Sendrecv whose directions differ two rows); Time (%) is of the time of all MPI rows listed, not of the run.
--   Ties in total time keep NVIDIA's order: by Source, then by the name's StringIds id.
-- columns:
--   Time (%) | DOUBLE | pct of all MPI time listed | 1
--   Total Time (ns) | BIGINT | ns
--   Instances | BIGINT | count
--   Avg (ns) | DOUBLE | ns | 1
--   Med (ns) | DOUBLE | ns | 1
--   Min (ns) | BIGINT | ns
--   Max (ns) | BIGINT | ns
--   StdDev (ns) | DOUBLE | ns (sample standard deviation; 0 for one call) | 1
--   Source | VARCHAR | text (p2p, start-wait, other or collectives)
--   Name | VARCHAR | text
SELECT 100.0 * SUM(end_ns - start_ns) / SUM(SUM(end_ns - start_ns)) OVER () AS "Time (%)",
       SUM(end_ns - start_ns) AS "Total Time (ns)",
       COUNT(*) AS "Instances",
       AVG(end_ns - start_ns) AS "Avg (ns)",
       MEDIAN(end_ns - start_ns) AS "Med (ns)",
       MIN(end_ns - start_ns) AS "Min (ns)",
       MAX(end_ns - start_ns) AS "Max (ns)",
       COALESCE(STDDEV_SAMP(end_ns - start_ns), 0.0) AS "StdDev (ns)",
       source AS "Source",
       name AS "Name"
FROM mpi_event
GROUP BY source, name_id, name
ORDER BY "Total Time (ns)" DESC NULLS LAST, source, name_id;
