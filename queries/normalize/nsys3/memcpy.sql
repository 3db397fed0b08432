-- nsysql: normalize.nsys3.memcpy v3
-- purpose: CUDA memory copies (CUPTI_ACTIVITY_KIND_MEMCPY) with copy and memory kinds as NVIDIA labels them (Host-to-Device, Pageable, Pinned, Device ...).
-- requires: raw.CUPTI_ACTIVITY_KIND_MEMCPY, raw.ENUM_CUDA_MEMCPY_OPER, raw.ENUM_CUDA_MEM_KIND
-- params: none
-- columns:
--   memcpy_id | BIGINT | id
--   start_ns | BIGINT | ns
--   end_ns | BIGINT | ns
--   device_id | BIGINT | id
--   stream_id | BIGINT | id
--   correlation_id | BIGINT | id
--   pid | BIGINT | id
--   bytes | BIGINT | bytes
--   copy_kind | VARCHAR | text
--   src_kind | VARCHAR | text
--   dst_kind | VARCHAR | text
--   graph_node_id | BIGINT | id
--   context_id | BIGINT | id
--   green_context_id | BIGINT | id (NULL when the export predates green contexts)
--   src_device_id | BIGINT | id (device of the source; NULL when not a device or the export lacks the column)
--   dst_device_id | BIGINT | id (device of the destination; NULL likewise)
CREATE TABLE memcpy AS
SELECT m.rowid AS memcpy_id,
       m.start AS start_ns,
       m."end" AS end_ns,
       m.deviceId AS device_id,
       m.streamId AS stream_id,
       m.correlationId AS correlation_id,
       (m.globalPid >> 24) & 16777215 AS pid,
       m.bytes,
       COALESCE(op.label, 'Unknown') AS copy_kind,
       COALESCE(sk.label, 'Unknown') AS src_kind,
       COALESCE(dk.label, 'Unknown') AS dst_kind,
       m.graphNodeId AS graph_node_id,
       m.contextId AS context_id,
       m.greenContextId AS green_context_id,
       m.srcDeviceId AS src_device_id,
       m.dstDeviceId AS dst_device_id
FROM (SELECT * FROM raw.CUPTI_ACTIVITY_KIND_MEMCPY  -- greenContextId: NULL in exports without the column
      UNION ALL BY NAME SELECT CAST(NULL AS BIGINT) AS greenContextId, CAST(NULL AS BIGINT) AS srcDeviceId,
                                CAST(NULL AS BIGINT) AS dstDeviceId WHERE false) AS m
LEFT JOIN raw.ENUM_CUDA_MEMCPY_OPER AS op ON op.id = m.copyKind
LEFT JOIN raw.ENUM_CUDA_MEM_KIND AS sk ON sk.id = m.srcKind
LEFT JOIN raw.ENUM_CUDA_MEM_KIND AS dk ON dk.id = m.dstKind
ORDER BY memcpy_id;
