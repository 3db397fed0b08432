-- nsysql: analysis.launch_overhead v1
-- purpose: Per kernel launch: time in the CUDA API call, time queued before the GPU started it, and kernel time.
-- requires: kernel, runtime
-- params: none
-- notes: queue_ns = kernel start - API call end, floored at 0 (a kernel can start before its launch call returns).
--   Kernels without a matching API row are left out. Kernel rows only: a CUDA graph traced at graph level has
--   none (analysis.overhead_by_* count each of its launches).
-- columns:
--   kernel_id | BIGINT | id
--   pid | BIGINT | id
--   tid | BIGINT | id
--   api_name | VARCHAR | text
--   api_start_ns | BIGINT | ns timestamp
--   api_ns | BIGINT | ns
--   queue_ns | BIGINT | ns
--   kernel_ns | BIGINT | ns
--   kernel_start_ns | BIGINT | ns timestamp
--   device_id | BIGINT | id
--   stream_id | BIGINT | id
--   kernel_name | VARCHAR | text
SELECT k.kernel_id, rt.pid, rt.tid, rt.api_short_name AS api_name, rt.start_ns AS api_start_ns,
       rt.end_ns - rt.start_ns AS api_ns, GREATEST(k.start_ns - rt.end_ns, 0) AS queue_ns,
       k.end_ns - k.start_ns AS kernel_ns, k.start_ns AS kernel_start_ns, k.device_id, k.stream_id, k.kernel_name
FROM kernel AS k
JOIN runtime AS rt ON rt.correlation_id = k.correlation_id AND rt.pid = k.pid
ORDER BY rt.start_ns, k.start_ns, k.kernel_id;
