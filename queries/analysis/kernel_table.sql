-- nsysql: analysis.kernel_table v3
-- purpose: One row per GPU op (kernel, memcpy, memset) in GPU start order, charged to its direction, layer, PyTorch op and input shapes: the PyProf kernel table from a plain nsys export (how each is found: normalize.nsys3.gpu_op_attribution).
-- requires: gpu_op, gpu_op_label, kernel, runtime
-- params: none
-- optional: "seq", "device", "pid", "tid", "stream", "block", "grid", "params", "start_ns", "op"
-- text-min: "kernel" 24
-- columns:
--   idx | BIGINT | position (1 = first GPU op to start)
--   direction | VARCHAR | fprop, bprop, optim, comm or other
--   layer | VARCHAR | text (user NVTX path without op markers and without the step range; '?' when unknown)
--   op | VARCHAR | text (aten op, e.g. aten::addmm; for bprop the autograd node, e.g. AddmmBackward0)
--   params | VARCHAR | text (input shapes as recorded by emit_nvtx(record_shapes=True); for bprop those of the forward op)
--   kernel | VARCHAR | text (full demangled kernel name, or [CUDA memcpy <kind>] / [CUDA memset])
--   start_ns | BIGINT | ns timestamp
--   duration_ns | BIGINT | ns
--   grid | VARCHAR | (x, y, z) blocks; NULL for copies and sets
--   block | VARCHAR | (x, y, z) threads; NULL for copies and sets
--   stream | BIGINT | id
--   device | BIGINT | id
--   pid | BIGINT | id (launching process)
--   tid | BIGINT | id (launching thread; NULL when the export has no launching call)
--   seq | BIGINT | id (autograd sequence number, when there is one)
WITH numbered AS (  -- the position in GPU start order, numbered on the narrow table before the joins widen it
    SELECT *, ROW_NUMBER() OVER (ORDER BY start_ns, op_kind, op_id) AS idx FROM gpu_op
)
SELECT o.idx,
       a.direction, a.layer, a.op, a.params,
       o.op_name AS kernel,
       o.start_ns, o.end_ns - o.start_ns AS duration_ns,
       CASE WHEN o.op_kind = 'kernel' THEN format('({}, {}, {})', k.grid_x, k.grid_y, k.grid_z) END AS grid,
       CASE WHEN o.op_kind = 'kernel' THEN format('({}, {}, {})', k.block_x, k.block_y, k.block_z) END AS block,
       o.stream_id AS stream, o.device_id AS device,
       COALESCE(r.pid, o.pid) AS pid, r.tid, a.seq
FROM numbered AS o
JOIN gpu_op_label AS a USING (op_kind, op_id)
LEFT JOIN kernel AS k ON k.kernel_id = CASE WHEN o.op_kind = 'kernel' THEN o.op_id END  -- an equi-join: with `AND o.op_kind = ...` DuckDB chose a nested loop
LEFT JOIN runtime AS r ON r.runtime_id = o.runtime_id
ORDER BY o.idx;
