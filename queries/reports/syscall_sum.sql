-- nsysql: reports.syscall_sum v1
-- purpose: System calls (futex, ioctl, read, ...) summed by name, identical to `nsys stats -r syscall_sum` (Nsight Systems 2025.3).
-- requires: syscall
-- params: none
-- notes: As NVIDIA: the calls of event class 107; Time (%) is of the time of all system calls listed, not of the
--   run. Ties in total time: by count and name here, in SQLite's order in NVIDIA's.
-- columns:
--   Time (%) | DOUBLE | pct of all system-call time | 1
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
       syscall_name AS "Name"
FROM syscall
WHERE event_class = 107
GROUP BY syscall_name
ORDER BY "Total Time (ns)" DESC, "Num Calls", "Name";
