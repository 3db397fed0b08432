-- nsysql: analysis.plot_window v1
-- purpose: The time window of `nsysql plot timeline`: the capture's start (the plot's time origin) and the window's absolute bounds from --start-ms/--end-ms relative to it (NULL = capture start / end).
-- requires: none
-- params: start_ms DOUBLE, end_ms DOUBLE (milliseconds after the capture start; NULL for the capture's own bounds)
-- notes: The capture span is ANALYSIS_DETAILS's; an export without it falls back to the first and last NVTX range,
--   API call or GPU op.
-- columns:
--   origin_ns | BIGINT | ns (capture start)
--   from_ns | BIGINT | ns
--   to_ns | BIGINT | ns
WITH seen AS (
    SELECT MIN(start_ns) AS first_ns, MAX(end_ns) AS last_ns FROM (
        SELECT start_ns, end_ns FROM nvtx_range
        UNION ALL SELECT start_ns, end_ns FROM runtime
        UNION ALL SELECT start_ns, end_ns FROM gpu_op)
),
span AS (
    SELECT COALESCE((SELECT MIN(start_ns) FROM capture_span), s.first_ns) AS origin_ns,
           COALESCE((SELECT MAX(end_ns) FROM capture_span), s.last_ns) AS end_ns
    FROM seen AS s
)
SELECT origin_ns,
       CAST(origin_ns + COALESCE(CAST($start_ms AS DOUBLE), 0) * 1e6 AS BIGINT) AS from_ns,
       CAST(CASE WHEN $end_ms IS NULL THEN end_ns ELSE origin_ns + CAST($end_ms AS DOUBLE) * 1e6 END AS BIGINT) AS to_ns
FROM span
ORDER BY origin_ns;
