-- nsysql: analysis.ranges v1
-- purpose: NVTX ranges with depth, parent, full path and thread, in start order.
-- requires: nvtx_range, nvtx_path
-- params: none
-- columns:
--   range_id | BIGINT | id
--   range_name | VARCHAR | text (`<domain>:<text>`, as nsys stats names it)
--   text | VARCHAR | text
--   domain | VARCHAR | text
--   style | VARCHAR | PushPop or StartEnd
--   start_ns | BIGINT | ns timestamp
--   end_ns | BIGINT | ns timestamp
--   duration_ns | BIGINT | ns
--   is_open | BOOLEAN | flag (no end in the capture)
--   depth | BIGINT | count (0 = top level)
--   parent_id | BIGINT | id
--   path | VARCHAR | text (texts from the top-level range down, joined by '/')
--   pid | BIGINT | id
--   tid | BIGINT | id
--   thread_name | VARCHAR | text
SELECT r.range_id, r.range_name, r.text, r.domain, r.style, r.start_ns, r.end_ns, r.duration_ns, r.is_open,
       r.depth, r.parent_id, p.path, r.pid, r.tid, t.thread_name
FROM nvtx_range AS r
LEFT JOIN nvtx_path AS p USING (range_id)
LEFT JOIN thread AS t ON t.global_tid = r.global_tid
ORDER BY r.start_ns, r.depth, r.range_id;
