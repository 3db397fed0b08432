-- nsysql: macros.kernel_launches v1
-- purpose: Every kernel launch with its launching CUDA call: `kernel_launches(kernel, graph_trace, runtime)` returns one row per kernel, and per CUDA graph traced at graph level (one launch whose kernel is the whole graph, named `[CUDA graph <id>]`), that has a launching call: the kernel's interval, device and name, the call's id, thread and interval, and the API, queue and kernel times.
-- requires: none
-- params: none
-- notes: A kernel and its launching call match on correlationId AND process (correlation ids repeat across
--   processes); kernels without a call in the export are left out. api = call end - call start; queue = kernel
--   start - call end, floored at 0 (a kernel can start before its launch call returns); kernel = kernel end -
--   kernel start. The normalized tables are passed by name. DuckDB reads only the columns a caller selects.
--   analysis.overhead_by_kernel, overhead_by_thread and overhead_by_range read it.
-- columns:
--   kernel_start_ns | BIGINT | ns timestamp
--   kernel_end_ns | BIGINT | ns timestamp
--   device_id | BIGINT | id
--   kernel_name | VARCHAR | text (demangled; `[CUDA graph <id>]` for a graph)
--   runtime_id | BIGINT | id
--   global_tid | BIGINT | id
--   pid | BIGINT | id
--   tid | BIGINT | id
--   api_start_ns | BIGINT | ns timestamp
--   api_end_ns | BIGINT | ns timestamp
--   api_ns | BIGINT | ns
--   queue_ns | BIGINT | ns
--   kernel_ns | BIGINT | ns
CREATE OR REPLACE TEMP MACRO kernel_launches(kernel, graph_trace, runtime) AS TABLE
SELECT k.start_ns AS kernel_start_ns, k.end_ns AS kernel_end_ns, k.device_id, k.kernel_name, rt.runtime_id,
       rt.global_tid, rt.pid, rt.tid, rt.start_ns AS api_start_ns, rt.end_ns AS api_end_ns,
       rt.end_ns - rt.start_ns AS api_ns, GREATEST(k.start_ns - rt.end_ns, 0) AS queue_ns,
       k.end_ns - k.start_ns AS kernel_ns
FROM (SELECT start_ns, end_ns, device_id, correlation_id, pid, kernel_name FROM query_table(kernel)
      UNION ALL  -- CUDA graphs traced at graph level: one launch, its kernels as one
      SELECT start_ns, end_ns, device_id, correlation_id, pid, '[CUDA graph ' || graph_id || ']'
      FROM query_table(graph_trace)) AS k
JOIN query_table(runtime) AS rt ON rt.correlation_id = k.correlation_id AND rt.pid = k.pid;
