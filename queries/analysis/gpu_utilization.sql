-- nsysql: analysis.gpu_utilization v1
-- purpose: Per GPU: busy time (union of kernels, copies and sets) against the span from its first to last op and against the whole capture.
-- requires: gpu_op
-- params: none
-- columns:
--   device_id | BIGINT | id
--   first_op_ns | BIGINT | ns timestamp
--   last_op_ns | BIGINT | ns timestamp
--   active_span_ns | BIGINT | ns (last op end - first op start)
--   busy_ns | BIGINT | ns (union of op intervals)
--   idle_ns | BIGINT | ns (active span - busy)
--   busy_pct_of_span | DOUBLE | pct | 1
--   busy_pct_of_capture | DOUBLE | pct | 1
SELECT b.device_id, MIN(b.start_ns) AS first_op_ns, MAX(b.end_ns) AS last_op_ns,
       MAX(b.end_ns) - MIN(b.start_ns) AS active_span_ns,
       CAST(SUM(b.end_ns - b.start_ns) AS BIGINT) AS busy_ns,
       CAST(MAX(b.end_ns) - MIN(b.start_ns) - SUM(b.end_ns - b.start_ns) AS BIGINT) AS idle_ns,
       100.0 * SUM(b.end_ns - b.start_ns) / NULLIF(MAX(b.end_ns) - MIN(b.start_ns), 0) AS busy_pct_of_span,
       100.0 * SUM(b.end_ns - b.start_ns) / NULLIF((SELECT MAX(duration_ns) FROM capture_span), 0) AS busy_pct_of_capture
FROM gpu_busy AS b
GROUP BY b.device_id
ORDER BY b.device_id;
