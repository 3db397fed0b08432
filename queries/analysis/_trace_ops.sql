-- nsysql: analysis._trace_ops v1
-- purpose: GPU ops (kernels, copies, sets, graph-level CUDA graphs) overlapping a time window, with their attribution (direction, layer, op, seq) and launching CUDA API call: the GPU tracks of `nsysql perfetto` and of the timeline of `nsysql html`.
-- requires: gpu_op, gpu_op_label, runtime
-- params: from_ns BIGINT, to_ns BIGINT (window, absolute)
-- notes: An op is in the window when it overlaps it (end >= from, start <= to); it keeps its own start and end.
-- columns:
--   op_kind | VARCHAR | kernel, memcpy, memset or graph
--   op_id | BIGINT | id
--   pid | BIGINT | id (the launching process)
--   device_id | BIGINT | id
--   stream_id | BIGINT | id
--   name | VARCHAR | text (kernel short name, or [CUDA memcpy ...] / [CUDA memset] / [CUDA graph ...])
--   full_name | VARCHAR | text (demangled kernel name with templates, or as name)
--   direction | VARCHAR | fprop, bprop, optim, comm or other
--   layer | VARCHAR | text ('?' when unknown)
--   op | VARCHAR | text (PyTorch op or autograd node; NULL when none)
--   seq | BIGINT | id (autograd sequence number; NULL when none)
--   bytes | BIGINT | bytes (copies and sets; NULL for kernels)
--   runtime_id | BIGINT | id (launching API call; NULL when the export has none)
--   launch_tid | BIGINT | id (thread of the launching call)
--   launch_api | VARCHAR | text (the launching call's short name)
--   correlation_id | BIGINT | id
--   start_ns | BIGINT | ns timestamp
--   end_ns | BIGINT | ns timestamp
SELECT o.op_kind, o.op_id, o.pid, o.device_id, o.stream_id,
       COALESCE(k.short_name, o.op_name) AS name, COALESCE(k.kernel_name, o.op_name) AS full_name,
       COALESCE(CAST(l.direction AS VARCHAR), 'other') AS direction, COALESCE(l.layer, '?') AS layer, l.op, l.seq,
       o.bytes, o.runtime_id, r.tid AS launch_tid, r.api_short_name AS launch_api, o.correlation_id,
       o.start_ns, o.end_ns
FROM gpu_op AS o
LEFT JOIN kernel AS k ON k.kernel_id = CASE WHEN o.op_kind = 'kernel' THEN o.op_id END  -- equi-join (see _plot_timeline_ops)
LEFT JOIN gpu_op_label AS l ON l.op_kind = o.op_kind AND l.op_id = o.op_id
LEFT JOIN runtime AS r ON r.runtime_id = o.runtime_id
WHERE o.end_ns >= $from_ns AND o.start_ns <= $to_ns
ORDER BY o.device_id, o.stream_id, o.start_ns, o.op_kind, o.op_id;
