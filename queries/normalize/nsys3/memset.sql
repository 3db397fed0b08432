-- nsysql: normalize.nsys3.memset v2
-- purpose: CUDA memsets (CUPTI_ACTIVITY_KIND_MEMSET).
-- requires: raw.CUPTI_ACTIVITY_KIND_MEMSET, raw.ENUM_CUDA_MEM_KIND
-- params: none
-- columns:
--   memset_id | BIGINT | id
--   start_ns | BIGINT | ns
--   end_ns | BIGINT | ns
--   device_id | BIGINT | id
--   stream_id | BIGINT | id
--   correlation_id | BIGINT | id
--   pid | BIGINT | id
--   bytes | BIGINT | bytes
--   value | BIGINT | byte value
--   mem_kind | VARCHAR | text
--   graph_node_id | BIGINT | id
--   context_id | BIGINT | id
--   green_context_id | BIGINT | id (NULL when the export predates green contexts)
CREATE TABLE memset AS
SELECT m.rowid AS memset_id,
       m.start AS start_ns,
       m."end" AS end_ns,
       m.deviceId AS device_id,
       m.streamId AS stream_id,
       m.correlationId AS correlation_id,
       (m.globalPid >> 24) & 16777215 AS pid,
       m.bytes,
       m.value,
       COALESCE(mk.label, 'Unknown') AS mem_kind,
       m.graphNodeId AS graph_node_id,
       m.contextId AS context_id,
       m.greenContextId AS green_context_id
FROM (SELECT * FROM raw.CUPTI_ACTIVITY_KIND_MEMSET  -- greenContextId: NULL in exports without the column
      UNION ALL BY NAME SELECT CAST(NULL AS BIGINT) AS greenContextId WHERE false) AS m
LEFT JOIN raw.ENUM_CUDA_MEM_KIND AS mk ON mk.id = m.memKind
ORDER BY memset_id;
