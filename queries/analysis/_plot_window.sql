-- nsysql: analysis._plot_window v2
-- purpose: The time window of `nsysql plot timeline`: the capture's start (the time origin of plots and of the times tables show) and the window's absolute bounds from --start-ms/--end-ms relative to it (NULL = capture start / end).
-- requires: none
-- params: start_ms DOUBLE, end_ms DOUBLE (milliseconds after the capture start; NULL for the capture's own bounds)
-- notes: The capture span is ANALYSIS_DETAILS's, when the export's events lie on its clock: an export without it,
--   or whose first event is earlier than its start or later than its end (Nsight Systems 2022.4 can write
--   ANALYSIS_DETAILS on another clock), falls back to the first and last NVTX range, API call or GPU op. OS
--   runtime calls are not looked at: the first ones start before the capture (before ANALYSIS_DETAILS's start).
-- columns:
--   origin_ns | BIGINT | ns timestamp (capture start)
--   from_ns | BIGINT | ns timestamp
--   to_ns | BIGINT | ns timestamp
WITH seen AS (
    SELECT MIN(start_ns) AS first_ns, MAX(end_ns) AS last_ns FROM (
        SELECT start_ns, end_ns FROM nvtx_range
        UNION ALL SELECT start_ns, end_ns FROM runtime
        UNION ALL SELECT start_ns, end_ns FROM gpu_op)
),
cap AS (
    SELECT MIN(start_ns) AS start_ns, MAX(end_ns) AS end_ns FROM capture_span
),
span AS (
    SELECT CASE WHEN same_clock THEN c.start_ns ELSE s.first_ns END AS origin_ns,
           CASE WHEN same_clock THEN c.end_ns ELSE s.last_ns END AS end_ns
    FROM seen AS s, cap AS c,
         LATERAL (SELECT c.start_ns IS NOT NULL
                         AND (s.first_ns IS NULL OR s.first_ns BETWEEN c.start_ns AND c.end_ns) AS same_clock)
)
SELECT origin_ns,
       CAST(origin_ns + COALESCE(CAST($start_ms AS DOUBLE), 0) * 1e6 AS BIGINT) AS from_ns,
       CAST(CASE WHEN $end_ms IS NULL THEN end_ns ELSE origin_ns + CAST($end_ms AS DOUBLE) * 1e6 END AS BIGINT) AS to_ns
FROM span
ORDER BY origin_ns;
