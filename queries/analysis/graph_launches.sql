-- nsysql: analysis.graph_launches v2
-- purpose: CUDA graphs traced at graph level (graph_trace, nsys's default --cuda-graph-trace=graph) in one row: how many launches of how many graphs and their GPU time, and the bubble between consecutive replays, for the summary's note that the kernels inside are not in the export.
-- requires: kernel|memcpy|memset|graph_trace, gpu_busy
-- params: none
-- rows: one
-- notes: The bubble between two consecutive graph executions on one device is the time the device was idle
--   between the end of one and the start of the next (gpu_busy: no kernel, copy, set or graph running), so work
--   launched between them is not counted as a bubble; replay_gap_median_ns is the median over such pairs (NULL
--   with fewer than two executions on a device), replay_gap_ns their sum.
-- columns:
--   launches | BIGINT | count (graph executions)
--   graphs | BIGINT | count (distinct graph ids)
--   graph_ns | BIGINT | ns (sum of graph execution durations)
--   replay_gap_median_ns | BIGINT | ns (median idle time between consecutive graph executions of a device)
--   replay_gap_ns | BIGINT | ns (sum of that idle time)
WITH
execs AS (
    SELECT device_id, start_ns, end_ns,
           LEAD(start_ns) OVER (PARTITION BY device_id ORDER BY start_ns, end_ns) AS next_start_ns
    FROM graph_trace
),
pairs AS (  -- the device's idle time between one execution's end and the next one's start
    SELECT e.device_id, e.end_ns, e.next_start_ns,
           COALESCE((SELECT SUM(LEAST(b.end_ns, e.next_start_ns) - GREATEST(b.start_ns, e.end_ns))
                     FROM gpu_busy AS b
                     WHERE b.device_id = e.device_id AND b.start_ns < e.next_start_ns AND b.end_ns > e.end_ns), 0)
             AS busy_between_ns
    FROM execs AS e WHERE e.next_start_ns IS NOT NULL AND e.next_start_ns > e.end_ns
),
gaps AS (
    SELECT GREATEST(next_start_ns - end_ns - busy_between_ns, 0) AS idle_ns FROM pairs
    UNION ALL  -- back to back (or overlapping): no bubble
    SELECT 0 FROM execs WHERE next_start_ns IS NOT NULL AND next_start_ns <= end_ns
)
SELECT (SELECT COUNT(*) FROM graph_trace) AS launches, (SELECT COUNT(DISTINCT graph_id) FROM graph_trace) AS graphs,
       (SELECT CAST(COALESCE(SUM(end_ns - start_ns), 0) AS BIGINT) FROM graph_trace) AS graph_ns,
       CAST((SELECT MEDIAN(idle_ns) FROM gaps) AS BIGINT) AS replay_gap_median_ns,
       CAST((SELECT SUM(idle_ns) FROM gaps) AS BIGINT) AS replay_gap_ns;
