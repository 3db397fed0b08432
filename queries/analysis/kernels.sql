-- nsysql: analysis.kernels v1
-- purpose: Every kernel with the CUDA API call that launched it (matched on correlationId and process) and the innermost NVTX range around that call, in GPU start order.
-- requires: kernel, runtime, nvtx_path
-- params: none
-- columns:
--   kernel_id | BIGINT | id
--   start_ns | BIGINT | ns timestamp
--   end_ns | BIGINT | ns timestamp
--   duration_ns | BIGINT | ns
--   device_id | BIGINT | id
--   stream_id | BIGINT | id
--   pid | BIGINT | id
--   tid | BIGINT | id (launching thread; NULL without an API row)
--   correlation_id | BIGINT | id
--   kernel_name | VARCHAR | text (demangled)
--   short_name | VARCHAR | text
--   grid | VARCHAR | x,y,z
--   block | VARCHAR | x,y,z
--   registers_per_thread | BIGINT | count
--   shared_mem_bytes | BIGINT | bytes (static + dynamic)
--   api_name | VARCHAR | text
--   api_start_ns | BIGINT | ns timestamp
--   api_end_ns | BIGINT | ns timestamp
--   range_id | BIGINT | id (innermost enclosing NVTX range of the launch)
--   range_path | VARCHAR | text (its full path)
SELECT k.kernel_id, k.start_ns, k.end_ns, k.end_ns - k.start_ns AS duration_ns, k.device_id, k.stream_id,
       k.pid, rt.tid, k.correlation_id, k.kernel_name, k.short_name,
       k.grid_x || ',' || k.grid_y || ',' || k.grid_z AS grid,
       k.block_x || ',' || k.block_y || ',' || k.block_z AS block,
       k.registers_per_thread, k.static_smem_bytes + k.dynamic_smem_bytes AS shared_mem_bytes,
       rt.api_short_name AS api_name, rt.start_ns AS api_start_ns, rt.end_ns AS api_end_ns,
       rn.range_id, p.path AS range_path
FROM kernel AS k
LEFT JOIN runtime AS rt ON rt.correlation_id = k.correlation_id AND rt.pid = k.pid
LEFT JOIN runtime_nvtx AS rn ON rn.runtime_id = rt.runtime_id
LEFT JOIN nvtx_path AS p ON p.range_id = rn.range_id
ORDER BY k.start_ns, k.kernel_id;
