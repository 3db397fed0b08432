-- nsysql: normalize.nsys3.kernel v4
-- purpose: CUDA kernels (CUPTI_ACTIVITY_KIND_KERNEL) with names resolved; pid unpacked from globalPid. A view over kernel_int, whose names are ENUMs: the texts are cast back here, at no measurable cost to readers.
-- requires: kernel_int
-- params: none
-- columns:
--   kernel_id | BIGINT | id (row order of the export)
--   start_ns | BIGINT | ns
--   end_ns | BIGINT | ns
--   device_id | BIGINT | id
--   context_id | BIGINT | id
--   stream_id | BIGINT | id
--   correlation_id | BIGINT | id
--   pid | BIGINT | id
--   kernel_name | VARCHAR | text (demangled, with templates)
--   short_name | VARCHAR | text
--   mangled_name | VARCHAR | text
--   grid_x | BIGINT | count
--   grid_y | BIGINT | count
--   grid_z | BIGINT | count
--   block_x | BIGINT | count
--   block_y | BIGINT | count
--   block_z | BIGINT | count
--   registers_per_thread | BIGINT | count
--   static_smem_bytes | BIGINT | bytes
--   dynamic_smem_bytes | BIGINT | bytes
--   graph_node_id | BIGINT | id
--   launch_type | BIGINT | code (CUPTI launch type: 0 regular, 1 cooperative single-device, 2 cooperative multi-device)
--   green_context_id | BIGINT | id (NULL when the export predates green contexts)
CREATE VIEW kernel AS
SELECT kernel_id, start_ns, end_ns, device_id, context_id, stream_id, correlation_id,
       (global_pid >> 24) & 16777215 AS pid,
       CAST(kernel_name AS VARCHAR) AS kernel_name,
       CAST(short_name AS VARCHAR) AS short_name,
       CAST(mangled_name AS VARCHAR) AS mangled_name,
       grid_x, grid_y, grid_z, block_x, block_y, block_z,
       registers_per_thread, static_smem_bytes, dynamic_smem_bytes,
       graph_node_id, launch_type, green_context_id
FROM kernel_int;
