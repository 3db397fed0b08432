-- nsysql: analysis._plot_timeline_ops v2
-- purpose: GPU ops (kernels, copies, sets) overlapping a time window with their device, stream and attributed direction, for the GPU rows of `nsysql plot timeline`.
-- requires: gpu_op, gpu_op_attribution
-- params: from_ns BIGINT, to_ns BIGINT (window, absolute)
-- columns:
--   device_id | BIGINT | id
--   stream_id | BIGINT | id
--   op_kind | VARCHAR | kernel, memcpy or memset
--   name | VARCHAR | text (kernel short name, or [CUDA memcpy ...] / [CUDA memset])
--   direction | VARCHAR | fprop, bprop, optim, comm or other
--   start_ns | BIGINT | ns timestamp
--   end_ns | BIGINT | ns timestamp
SELECT o.device_id, o.stream_id, o.op_kind, COALESCE(k.short_name, o.op_name) AS name,
       COALESCE(CAST(a.direction AS VARCHAR), 'other') AS direction, o.start_ns, o.end_ns
FROM gpu_op AS o
LEFT JOIN kernel AS k ON k.kernel_id = CASE WHEN o.op_kind = 'kernel' THEN o.op_id END  -- an equi-join: with `AND o.op_kind = ...` DuckDB chose a nested loop
LEFT JOIN gpu_op_attribution AS a ON a.op_kind = o.op_kind AND a.op_id = o.op_id
WHERE o.end_ns >= $from_ns AND o.start_ns <= $to_ns
ORDER BY o.device_id, o.stream_id, o.start_ns, o.op_kind, o.op_id;
