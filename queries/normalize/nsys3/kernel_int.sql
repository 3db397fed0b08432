-- nsysql: normalize.nsys3.kernel_int v1
-- purpose: CUDA kernels (CUPTI_ACTIVITY_KIND_KERNEL) as stored: names as nsys_string ENUMs (see name), globalPid as recorded; the view kernel gives them as text and unpacks pid.
-- requires: raw.CUPTI_ACTIVITY_KIND_KERNEL, name
-- params: none
-- storage-of: kernel (a copy of the Parquet dataset leaves this table out: those hold its rows)
-- columns:
--   kernel_id | BIGINT | id (row order of the export)
--   start_ns | BIGINT | ns
--   end_ns | BIGINT | ns
--   device_id | BIGINT | id
--   context_id | BIGINT | id
--   stream_id | BIGINT | id
--   correlation_id | BIGINT | id
--   global_pid | BIGINT | id (nsys's serialized process id)
--   kernel_name | ENUM | text (demangled, with templates)
--   short_name | ENUM | text
--   mangled_name | ENUM | text
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
CREATE TABLE kernel_int AS
SELECT k.rowid AS kernel_id,
       k.start AS start_ns,
       k."end" AS end_ns,
       k.deviceId AS device_id,
       k.contextId AS context_id,
       k.streamId AS stream_id,
       k.correlationId AS correlation_id,
       k.globalPid AS global_pid,
       dn.name AS kernel_name,
       sn.name AS short_name,
       mn.name AS mangled_name,
       k.gridX AS grid_x, k.gridY AS grid_y, k.gridZ AS grid_z,
       k.blockX AS block_x, k.blockY AS block_y, k.blockZ AS block_z,
       k.registersPerThread AS registers_per_thread,
       k.staticSharedMemory AS static_smem_bytes,
       k.dynamicSharedMemory AS dynamic_smem_bytes,
       k.graphNodeId AS graph_node_id,
       k.launchType AS launch_type,
       k.greenContextId AS green_context_id
FROM (SELECT * FROM raw.CUPTI_ACTIVITY_KIND_KERNEL  -- greenContextId: NULL in exports without the column
      UNION ALL BY NAME SELECT CAST(NULL AS BIGINT) AS greenContextId WHERE false) AS k
LEFT JOIN name AS dn ON dn.name_id = k.demangledName
LEFT JOIN name AS sn ON sn.name_id = k.shortName
LEFT JOIN name AS mn ON mn.name_id = k.mangledName;  -- no ORDER BY: readers order what they show (a sort of every row saved)
