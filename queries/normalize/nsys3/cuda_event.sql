-- nsysql: normalize.nsys3.cuda_event v1
-- purpose: CUDA event records (CUPTI_ACTIVITY_KIND_CUDA_EVENT): the stream an event was recorded on and the cudaEventRecord call, linked to the stream waits of `sync` by event_sync_id.
-- requires: raw.CUPTI_ACTIVITY_KIND_CUDA_EVENT
-- params: none
-- notes: A stream wait (sync_type `Stream wait sync`) with the same event_sync_id and process waits for the work
--   recorded before this record on its stream (analysis._cp_event_waits).
-- columns:
--   device_id | BIGINT | id
--   stream_id | BIGINT | id
--   correlation_id | BIGINT | id (of the cudaEventRecord call)
--   pid | BIGINT | id
--   event_id | BIGINT | id
--   event_sync_id | BIGINT | id
CREATE TABLE cuda_event AS
SELECT e.deviceId AS device_id,
       e.streamId AS stream_id,
       e.correlationId AS correlation_id,
       (e.globalPid >> 24) & 16777215 AS pid,
       e.eventId AS event_id,
       e.eventSyncId AS event_sync_id
FROM raw.CUPTI_ACTIVITY_KIND_CUDA_EVENT AS e
ORDER BY pid, correlation_id;
