-- nsysql: analysis._trace_calls v1
-- purpose: CUDA runtime and driver API calls overlapping a time window, per thread: the CUDA API tracks of `nsysql perfetto` and of the timeline of `nsysql html`.
-- requires: runtime, thread
-- params: from_ns BIGINT, to_ns BIGINT (window, absolute)
-- columns:
--   runtime_id | BIGINT | id
--   pid | BIGINT | id
--   tid | BIGINT | id
--   thread_name | VARCHAR | text
--   name | VARCHAR | text (short API name, e.g. cudaLaunchKernel)
--   correlation_id | BIGINT | id
--   start_ns | BIGINT | ns timestamp
--   end_ns | BIGINT | ns timestamp
SELECT r.runtime_id, r.pid, r.tid, COALESCE(t.thread_name, 'tid ' || r.tid) AS thread_name,
       r.api_short_name AS name, r.correlation_id, r.start_ns, r.end_ns
FROM runtime AS r
LEFT JOIN thread AS t ON t.global_tid = r.global_tid
WHERE r.end_ns >= $from_ns AND r.start_ns <= $to_ns
ORDER BY r.pid, r.tid, r.start_ns, r.runtime_id;
