-- nsysql: analysis._plot_timeline_ranges v1
-- purpose: NVTX ranges overlapping a time window, with the row each is drawn on in `nsysql plot timeline`: per thread, one row per nesting level of the ranges shown.
-- requires: nvtx_range, user_range, thread
-- params: from_ns BIGINT, to_ns BIGINT (window, absolute), op_markers BOOLEAN (also PyTorch op markers and library ranges)
-- notes: Without op markers the level is user_range.user_depth (nesting among user ranges only), so hiding markers
--   leaves no empty rows; with them it is the full nesting depth. Ranges ending on another thread sit at level 0.
-- columns:
--   range_id | BIGINT | id
--   pid | BIGINT | id
--   tid | BIGINT | id
--   thread_name | VARCHAR | text
--   level | BIGINT | count (0 = outermost shown)
--   text | VARCHAR | text
--   is_op_marker | BOOLEAN | flag (op marker or library range)
--   start_ns | BIGINT | ns timestamp
--   end_ns | BIGINT | ns timestamp
SELECT r.range_id, r.pid, r.tid, COALESCE(t.thread_name, 'tid ' || r.tid) AS thread_name,
       CASE WHEN $op_markers THEN r.depth ELSE u.user_depth END AS level,
       r.text, u.range_id IS NULL AS is_op_marker, r.start_ns, r.end_ns
FROM nvtx_range AS r
LEFT JOIN user_range AS u ON u.range_id = r.range_id
LEFT JOIN thread AS t ON t.global_tid = r.global_tid
WHERE r.end_ns >= $from_ns AND r.start_ns <= $to_ns AND ($op_markers OR u.range_id IS NOT NULL)
ORDER BY r.pid, r.tid, level, r.start_ns, r.range_id;
