-- nsysql: analysis._cp_ops v3
-- purpose: The GPU ops of the critical-path graph (docs/critical-path.md): every op of a process with steps, its launching call, stream, layer and direction, and for NCCL kernels of a matched collective the last rank's arrival.
-- requires: analysis.steady_steps, analysis.comm_waits, gpu_op, gpu_op_attribution, user_range
-- params: $lo_ns BIGINT default NULL, $hi_ns BIGINT default NULL (the window: only the rows overlapping [lo_ns, hi_ns], exactly the rows of the whole answer that overlap it; NULL: no bound on that side)
-- notes: last_start_ns is L of analysis.comm_waits (the latest start of the collective's instances, over every
--   export of a job when nsysql/answers/job.py has put the job's matches in), last_pid and last_kernel_id name the
--   instance that started then when it is in this export (else NULL: another export's rank arrived last).
--   Unmatched NCCL kernels have is_comm true and last_start_ns NULL.
-- columns:
--   op_kind | VARCHAR | kernel, memcpy, memset or graph
--   op_id | BIGINT | id
--   pid | BIGINT | id
--   device_id | BIGINT | id
--   stream_id | BIGINT | id
--   start_ns | BIGINT | ns timestamp
--   end_ns | BIGINT | ns timestamp
--   op_name | VARCHAR | text
--   runtime_id | BIGINT | id (launching call)
--   layer | VARCHAR | text (layer path; NULL: unknown)
--   direction | VARCHAR | text (fprop, bprop, optim, comm, other)
--   is_comm | BOOLEAN | flag (a communication kernel of analysis.comm_waits)
--   operation | VARCHAR | text (the collective's operation; NULL for other ops)
--   collective | VARCHAR | text (analysis.comm_waits' matching key; NULL for other ops)
--   last_start_ns | BIGINT | ns timestamp (matched collectives only)
--   last_pid | BIGINT | id (matched collectives only)
--   last_kernel_id | BIGINT | id (matched collectives only)
WITH
procs AS (SELECT DISTINCT pid FROM steady_steps),
attr AS (
    SELECT CAST(a.op_kind AS VARCHAR) AS op_kind, a.op_id, CAST(a.direction AS VARCHAR) AS direction, u.layer
    FROM gpu_op_attribution AS a LEFT JOIN user_range AS u ON u.range_id = a.layer_range_id
),
cw AS (  -- one export's rows (a job's are put in per export, on its own clock)
    SELECT kernel_id, pid, operation, matched, last_start_ns, collective,
           MAX(start_ns) OVER (PARTITION BY collective) = last_start_ns AS last_here,
           -- one instance, the same whatever the row order, when two started at the same instant
           arg_max(pid, (start_ns, pid, kernel_id)) OVER (PARTITION BY collective) AS last_pid,
           arg_max(kernel_id, (start_ns, pid, kernel_id)) OVER (PARTITION BY collective) AS last_kernel_id
    FROM comm_waits
)
SELECT o.op_kind, o.op_id, o.pid, o.device_id, o.stream_id, o.start_ns, o.end_ns, o.op_name, o.runtime_id,
       a.layer, a.direction, cw.kernel_id IS NOT NULL AS is_comm, cw.operation, cw.collective,
       CASE WHEN cw.matched THEN cw.last_start_ns END AS last_start_ns,
       CASE WHEN cw.matched AND cw.last_here THEN cw.last_pid END AS last_pid,
       CASE WHEN cw.matched AND cw.last_here THEN cw.last_kernel_id END AS last_kernel_id
FROM gpu_op AS o
LEFT JOIN attr AS a ON a.op_kind = o.op_kind AND a.op_id = o.op_id
LEFT JOIN cw ON o.op_kind = 'kernel' AND cw.kernel_id = o.op_id AND cw.pid = o.pid
WHERE o.pid IN (SELECT pid FROM procs)
  AND ($lo_ns IS NULL OR o.end_ns >= $lo_ns) AND ($hi_ns IS NULL OR o.start_ns <= $hi_ns)
ORDER BY o.pid, o.device_id, o.stream_id, o.start_ns, o.op_kind, o.op_id;
