-- nsysql: analysis._trace_ranges v1
-- purpose: NVTX ranges overlapping a time window, per thread, with their nesting: the NVTX tracks of `nsysql perfetto` and of the timeline of `nsysql html`.
-- requires: nvtx_range, user_range, thread
-- params: from_ns BIGINT, to_ns BIGINT (window, absolute)
-- notes: nested is true for push/pop ranges that begin and end on their own thread: they nest on it; start/end
--   ranges and ranges ending on another thread may overlap others and are drawn apart.
-- columns:
--   range_id | BIGINT | id
--   pid | BIGINT | id
--   tid | BIGINT | id
--   thread_name | VARCHAR | text
--   text | VARCHAR | text (without domain)
--   domain | VARCHAR | text ('' = default domain)
--   depth | BIGINT | count (0 = top level)
--   is_op_marker | BOOLEAN | flag (not a user range: an op marker or a library range)
--   nested | BOOLEAN | flag (push/pop on one thread)
--   start_ns | BIGINT | ns timestamp
--   end_ns | BIGINT | ns timestamp
SELECT r.range_id, r.pid, r.tid, COALESCE(t.thread_name, 'tid ' || r.tid) AS thread_name, r.text, r.domain,
       r.depth, u.range_id IS NULL AS is_op_marker,
       r.style = 'PushPop' AND r.end_global_tid IS NULL AS nested, r.start_ns, r.end_ns
FROM nvtx_range AS r
LEFT JOIN user_range AS u ON u.range_id = r.range_id
LEFT JOIN thread AS t ON t.global_tid = r.global_tid
WHERE r.end_ns >= $from_ns AND r.start_ns <= $to_ns
ORDER BY r.pid, r.tid, r.start_ns, r.depth, r.range_id;
