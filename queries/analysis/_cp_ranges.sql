-- nsysql: analysis._cp_ranges v3
-- purpose: The user ranges that name CPU work in the critical-path graph (docs/critical-path.md): each push/pop user range of a process with steps, on its thread.
-- requires: analysis.steady_steps, user_range, nvtx_range
-- params: $lo_ns BIGINT default NULL, $hi_ns BIGINT default NULL (the window: only the rows overlapping [lo_ns, hi_ns], exactly the rows of the whole answer that overlap it; NULL: no bound on that side)
-- notes: Ranges ended on another thread than they began (start/end ranges) are left out: they nest in no thread's
--   stack.
-- columns:
--   range_id | BIGINT | id
--   pid | BIGINT | id
--   global_tid | BIGINT | id
--   start_ns | BIGINT | ns timestamp
--   end_ns | BIGINT | ns timestamp
--   user_depth | INTEGER | count
--   text | VARCHAR | text
--   layer | VARCHAR | text (user_range's path: without op markers and the step range)
SELECT u.range_id, u.pid, u.global_tid, u.start_ns, u.end_ns, u.user_depth, r.text, u.layer
FROM user_range AS u JOIN nvtx_range AS r ON r.range_id = u.range_id
WHERE u.pid IN (SELECT DISTINCT pid FROM steady_steps) AND r.end_global_tid IS NULL AND u.end_ns IS NOT NULL
  AND ($lo_ns IS NULL OR u.end_ns >= $lo_ns) AND ($hi_ns IS NULL OR u.start_ns <= $hi_ns)
ORDER BY u.global_tid, u.start_ns, u.user_depth;
