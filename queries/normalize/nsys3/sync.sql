-- nsysql: normalize.nsys3.sync v2
-- purpose: CUDA synchronization events (CUPTI_ACTIVITY_KIND_SYNCHRONIZATION).
-- requires: raw.CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, raw.ENUM_CUPTI_SYNC_TYPE
-- params: none
-- columns:
--   start_ns | BIGINT | ns
--   end_ns | BIGINT | ns
--   device_id | BIGINT | id
--   stream_id | BIGINT | id
--   correlation_id | BIGINT | id
--   pid | BIGINT | id
--   sync_type | VARCHAR | text
--   event_sync_id | BIGINT | id (links a stream wait to its event record in cuda_event; NULL in exports before it)
CREATE TABLE sync AS
SELECT s.start AS start_ns,
       s."end" AS end_ns,
       s.deviceId AS device_id,
       s.streamId AS stream_id,
       s.correlationId AS correlation_id,
       (s.globalPid >> 24) & 16777215 AS pid,
       COALESCE(t.label, 'Unknown') AS sync_type,
       s.eventSyncId AS event_sync_id
FROM raw.CUPTI_ACTIVITY_KIND_SYNCHRONIZATION AS s
LEFT JOIN raw.ENUM_CUPTI_SYNC_TYPE AS t ON t.id = s.syncType
ORDER BY start_ns;
