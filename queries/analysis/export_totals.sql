-- nsysql: analysis.export_totals v1
-- purpose: One row of totals for comparing exports: capture span, kernels, summed kernel time, GPU busy time (union of kernel, memcpy and memset intervals per device, added over devices) and the GPUs' active span.
-- requires: none
-- params: none
-- rows: one
-- columns:
--   duration_ns | BIGINT | ns (capture span)
--   kernels | BIGINT | count
--   kernel_ns | BIGINT | ns (sum of kernel durations)
--   gpu_busy_ns | BIGINT | ns (union per device, summed over devices)
--   gpu_span_ns | BIGINT | ns (first GPU op start to last GPU op end, any device)
SELECT (SELECT MAX(duration_ns) FROM capture_span) AS duration_ns,
       (SELECT COUNT(*) FROM kernel) AS kernels,
       CAST((SELECT COALESCE(SUM(end_ns - start_ns), 0) FROM kernel) AS BIGINT) AS kernel_ns,
       CAST((SELECT COALESCE(SUM(end_ns - start_ns), 0) FROM gpu_busy) AS BIGINT) AS gpu_busy_ns,
       CAST((SELECT COALESCE(MAX(end_ns) - MIN(start_ns), 0) FROM gpu_busy) AS BIGINT) AS gpu_span_ns;
