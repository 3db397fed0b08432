-- nsysql: analysis._plot_window v3
-- purpose: The time window of `nsysql plot timeline`: the capture's first event (the time origin of plots and of the times tables show) and the window's absolute bounds from --start-ms/--end-ms relative to it (NULL = the first event / the last event's end).
-- requires: none
-- params: start_ms DOUBLE, end_ms DOUBLE (milliseconds since the capture's first event; NULL for the events' own bounds)
-- notes: One clock: the window comes from the events themselves, never from ANALYSIS_DETAILS, whose start/stop can
--   be on another clock than the events (Nsight Systems 2022.4 wrote one 0.23 s after every event; other
--   exports' start lies seconds before the first event). The first event is the earliest start of an NVTX range,
--   a CUDA API call or a GPU op (kernel, copy, set, graph); the window ends at the latest end among them. OS
--   runtime calls count only in an export with none of those: nsys traces them from the process's launch, before
--   the profiled program's first CUDA call or range. The `_ns` columns everywhere keep NVIDIA's timestamps;
--   people see ms since origin_ns.
-- columns:
--   origin_ns | BIGINT | ns timestamp (the capture's first event)
--   from_ns | BIGINT | ns timestamp
--   to_ns | BIGINT | ns timestamp
WITH
seen AS (
    SELECT MIN(start_ns) AS first_ns, MAX(end_ns) AS last_ns FROM (
        SELECT start_ns, end_ns FROM nvtx_range
        UNION ALL SELECT start_ns, end_ns FROM runtime
        UNION ALL SELECT start_ns, end_ns FROM gpu_op)
),
span AS (  -- an export of OS runtime calls only (a CPU program traced with --trace=osrt): those
    SELECT COALESCE(s.first_ns, o.first_ns) AS origin_ns, COALESCE(s.last_ns, o.last_ns) AS end_ns
    FROM seen AS s, (SELECT MIN(start_ns) AS first_ns, MAX(end_ns) AS last_ns FROM osrt
                     WHERE (SELECT first_ns FROM seen) IS NULL) AS o
)
SELECT origin_ns,
       CAST(origin_ns + COALESCE(CAST($start_ms AS DOUBLE), 0) * 1e6 AS BIGINT) AS from_ns,
       CAST(CASE WHEN $end_ms IS NULL THEN end_ns ELSE origin_ns + CAST($end_ms AS DOUBLE) * 1e6 END AS BIGINT) AS to_ns
FROM span
ORDER BY origin_ns;
