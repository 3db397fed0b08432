-- nsysql: normalize.nsys3.nvtx_range v5
-- purpose: NVTX push/pop and start/end ranges with NVIDIA's naming (`<domain>:<text>`), depth and parent on their thread (full paths: analysis.ranges).
-- requires: nvtx_node, nvtx_name
-- params: none
-- notes: A view: nvtx_node (integers) joined with nvtx_name (each name once), so the first open stores no text
--   per range (writing 1.36M rows with their texts cost ~2.5 s at x220); the readers that print texts join
--   them in, those that filter on flags first (user ranges, NCCL's domain) join few.
--   An unterminated range (NULL end) ends at the last NVTX timestamp, as nsys stats does (is_open = true).
--   Nesting follows NVIDIA's tree: the parent is the innermost range on the same thread that encloses this one.
--   (nvtx_node says how it is computed.) Ranges that end on another thread
--   (endGlobalTid set) keep depth 0 and no parent, and nsys ignores them for GPU projection too.
-- columns:
--   range_id | BIGINT | id (row order of NVTX_EVENTS)
--   start_ns | BIGINT | ns
--   end_ns | BIGINT | ns
--   duration_ns | BIGINT | ns
--   is_open | BOOLEAN | flag (no end event in the capture)
--   global_tid | BIGINT | id
--   pid | BIGINT | id
--   tid | BIGINT | id
--   end_global_tid | BIGINT | id (set when the range ended on another thread)
--   range_name | VARCHAR | text (`<domain>:<text>`, as nsys stats prints it)
--   text | VARCHAR | text (without domain)
--   domain | VARCHAR | text ('' = default domain)
--   style | VARCHAR | PushPop or StartEnd
--   depth | BIGINT | count (0 = top level)
--   parent_id | BIGINT | id
--   is_op_marker | BOOLEAN | flag (a range PyTorch's emit_nvtx adds per op: `aten::mm, seq = 3, op_id = 7, sizes = ...`, `AddmmBackward0, seq = 3, ...`, `autograd::engine::evaluate_function: ...`, `Optimizer.step#...`)
CREATE VIEW nvtx_range AS
SELECT r.range_id, r.start_ns, r.end_ns, r.duration_ns, r.is_open, r.global_tid, r.pid, r.tid, r.end_global_tid,
       n.range_name, n.text, n.domain, n.style, r.depth, r.parent_id, n.is_op_marker
FROM nvtx_node AS r
JOIN nvtx_name AS n USING (name_id);
