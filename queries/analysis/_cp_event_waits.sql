-- nsysql: analysis._cp_event_waits v2
-- purpose: Cross-stream waits of the critical-path graph (docs/critical-path.md): the op that waits (the first op launched on the waiting stream after cudaStreamWaitEvent) and the op it waits for (the last op launched on the recording stream before cudaEventRecord).
-- requires: analysis.steady_steps, sync, cuda_event, runtime, gpu_op
-- params: none
-- notes: A stream wait is a `sync` row of sync_type `Stream wait sync`; its record is the cuda_event row with the same
--   event_sync_id and process; each call is found by correlation id and process. "Launched before/after" compares the
--   start times of the launching calls. A wait or record with no op on its side gives no row.
-- columns:
--   pid | BIGINT | id
--   op_kind | VARCHAR | text (the waiting op)
--   op_id | BIGINT | id
--   source_kind | VARCHAR | text (the op waited for)
--   source_id | BIGINT | id
WITH
procs AS (SELECT DISTINCT pid FROM steady_steps),
launched_all AS (
    SELECT o.op_kind, o.op_id, o.pid, o.device_id, o.stream_id, o.start_ns, r.start_ns AS call_ns
    FROM gpu_op AS o JOIN runtime AS r USING (runtime_id) WHERE o.pid IN (SELECT pid FROM procs)
),
last_of_call AS (  -- of the ops one call launched on a stream (a CUDA graph's nodes), the last to start ...
    SELECT DISTINCT ON (pid, device_id, stream_id, call_ns) * FROM launched_all
    ORDER BY pid, device_id, stream_id, call_ns, start_ns DESC, op_kind, op_id
),
first_of_call AS (  -- ... and the first: a record follows the call's last op, a wait precedes its first
    SELECT DISTINCT ON (pid, device_id, stream_id, call_ns) * FROM launched_all
    ORDER BY pid, device_id, stream_id, call_ns, start_ns, op_kind, op_id
),
waits AS (
    SELECT s.pid, s.device_id, s.stream_id AS wait_stream, s.event_sync_id, r.start_ns AS wait_call_ns
    FROM sync AS s JOIN runtime AS r ON r.pid = s.pid AND r.correlation_id = s.correlation_id
    WHERE s.sync_type = 'Stream wait sync' AND s.event_sync_id IS NOT NULL AND s.pid IN (SELECT pid FROM procs)
),
records AS (
    SELECT e.pid, e.device_id, e.stream_id AS record_stream, e.event_sync_id, r.start_ns AS record_call_ns
    FROM cuda_event AS e JOIN runtime AS r ON r.pid = e.pid AND r.correlation_id = e.correlation_id
    WHERE e.event_sync_id IS NOT NULL AND e.pid IN (SELECT pid FROM procs)
),
pairs AS (
    SELECT DISTINCT w.pid, w.device_id, w.wait_stream, w.wait_call_ns, c.record_stream, c.record_call_ns
    FROM waits AS w JOIN records AS c ON c.pid = w.pid AND c.event_sync_id = w.event_sync_id
),
source AS (
    SELECT p.*, l.op_kind AS source_kind, l.op_id AS source_id
    FROM pairs AS p ASOF JOIN last_of_call AS l
      ON l.pid = p.pid AND l.device_id = p.device_id AND l.stream_id = p.record_stream AND p.record_call_ns >= l.call_ns
),
target AS (
    SELECT s.*, l.op_kind, l.op_id
    FROM source AS s ASOF JOIN first_of_call AS l
      ON l.pid = s.pid AND l.device_id = s.device_id AND l.stream_id = s.wait_stream AND s.wait_call_ns <= l.call_ns
)
SELECT DISTINCT pid, op_kind, op_id, source_kind, source_id FROM target
ORDER BY pid, op_kind, op_id, source_kind, source_id;
