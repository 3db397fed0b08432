-- nsysql: analysis.comm v4
-- purpose: Communication against compute per rank (process and GPU) and step: compute, communication split into waiting for the last rank and transfer, the parts compute hides and those it does not, how late the rank arrived at the step's collectives, and the step's straggler (the rank the others wait for); each time a union of intervals, never a sum of durations.
-- requires: analysis.steady_steps, analysis.comm_waits, gpu_op, runtime, session, kernel|nvtx_range, macros.union_ns
-- params: none
-- notes: Classes of GPU ops: communication = the kernels of analysis.comm_instances (macros.comm_kernels: a kernel
--   named like NCCL's - ncclDevKernel_*, ncclKernel_*, `<unnamed>::oneRankReduce<...>` - or launched inside an
--   NVTX range of NCCL's domain, so an export without NVTX still has its communication);
--   memory = copies and memsets; compute = every other GPU op (kernels, CUDA graph executions). An op belongs to
--   the step whose span holds its launching call (start to end) on any thread of the step's process, as in
--   analysis.steps; a rank is (pid, device_id).
--   compute_ns, comm_ns and memory_ns are the unions of the rank's ops of that class in
--   the step; overlap_ns = the communication time during which the rank's own compute of the step runs
--   (|C ∩ K| = |C| + |K| - |C ∪ K|), exposed_comm_ns = comm_ns - overlap_ns. With one process per GPU, as
--   DDP runs, the rank's compute is the GPU's. step is analysis.steps' number, which counts the process's own
--   steps (1 = its first), so ranks of one export compare step by step. Rows only for ranks and steps with GPU
--   work; an export without steps has one window, step 0: the whole GPU activity (analysis.steady_steps).
-- optional: "analysed", "start_ns", "memory_ns", "comm_kernels", "exposed_pct", "overlap_ns", "collectives", "wall_ns", "pid", "device_id", "exposed_transfer_ns", "exposed_wait_ns", "comm_ns", "exposed_comm_ns"
-- columns:
--   rank | BIGINT | index (RANK of the process's environment, else the device id: analysis.comm_instances)
--   pid | BIGINT | id
--   device_id | BIGINT | id
--   step | BIGINT | index (the process's own step, as in `nsysql steps`: 1 = its first; 0 = no steps)
--   analysed | BOOLEAN | flag (a steady-state step; false = warm-up, see analysis.steady_steps)
--   start_ns | BIGINT | ns timestamp
--   wall_ns | BIGINT | ns
--   compute_ns | BIGINT | ns (union of the rank's compute ops in the step)
--   comm_ns | BIGINT | ns (union of its communication kernels)
--   overlap_ns | BIGINT | ns (communication while the rank's compute runs)
--   exposed_comm_ns | BIGINT | ns (communication with no compute running: comm_ns - overlap_ns)
--   memory_ns | BIGINT | ns (union of its copies and memsets)
--   comm_kernels | BIGINT | count
--   exposed_pct | DOUBLE | pct of comm_ns | 1
--   wait_ns | BIGINT | ns (union of its wait intervals: spinning until the collective's last rank arrives)
--   transfer_ns | BIGINT | ns (comm_ns - wait_ns)
--   exposed_wait_ns | BIGINT | ns (waiting with none of the rank's compute running)
--   exposed_transfer_ns | BIGINT | ns (exposed_comm_ns - exposed_wait_ns)
--   late_ns | BIGINT | ns (summed over the step's matched collectives: own arrival - first arrival)
--   collectives | BIGINT | count (the step's communication kernels matched across ranks)
--   straggler | BOOLEAN | flag (the rank the others wait for in this step)
WITH
waits AS (SELECT * FROM comm_waits),
op AS (
    SELECT o.op_kind, o.pid, o.device_id, o.start_ns, o.end_ns, rt.start_ns AS call_start_ns, rt.end_ns AS call_end_ns,
           CASE WHEN o.op_kind IN ('memcpy', 'memset') THEN 'memory'
                WHEN o.op_kind = 'kernel' AND o.op_id IN (SELECT kernel_id FROM waits) THEN 'comm'
                ELSE 'compute' END AS class
    FROM gpu_op AS o
    JOIN runtime AS rt ON rt.runtime_id = o.runtime_id
),
step AS (
    SELECT step, pid, range_start_ns AS start_ns, range_end_ns AS end_ns, wall_ns, analysed  -- the launches of its range
    FROM steady_steps WHERE pid IS NOT NULL
),
in_step AS (
    SELECT s.pid, o.device_id, s.step, o.class, o.start_ns, o.end_ns
    FROM op AS o
    ASOF JOIN step AS s ON s.pid = o.pid AND s.start_ns <= o.call_start_ns
    WHERE o.call_end_ns <= s.end_ns
    UNION ALL  -- the wait intervals of the step's communication kernels (analysis.comm_waits assigns them alike)
    SELECT pid, device_id, step, 'wait', start_ns, wait_end_ns FROM waits WHERE step IS NOT NULL AND wait_ns > 0
),
rank_step AS (  -- one number per (pid, device, step): union_ns groups on it
    SELECT pid, device_id, step, COUNT(*) FILTER (WHERE class = 'comm') AS comm_kernels,
           ROW_NUMBER() OVER (ORDER BY pid, device_id, step) AS grp
    FROM in_step
    GROUP BY pid, device_id, step
),
keyed AS (
    SELECT k.grp, i.class, i.start_ns AS s, i.end_ns AS e
    FROM in_step AS i JOIN rank_step AS k USING (pid, device_id, step)
),
compute_iv AS (SELECT grp, s, e FROM keyed WHERE class = 'compute'),
comm_iv AS (SELECT grp, s, e FROM keyed WHERE class = 'comm'),
memory_iv AS (SELECT grp, s, e FROM keyed WHERE class = 'memory'),
both_iv AS (SELECT grp, s, e FROM keyed WHERE class IN ('compute', 'comm')),
wait_iv AS (SELECT grp, s, e FROM keyed WHERE class = 'wait'),
wait_compute_iv AS (SELECT grp, s, e FROM keyed WHERE class IN ('compute', 'wait')),
compute_u AS (SELECT * FROM union_ns(compute_iv)),
comm_u AS (SELECT * FROM union_ns(comm_iv)),
memory_u AS (SELECT * FROM union_ns(memory_iv)),
both_u AS (SELECT * FROM union_ns(both_iv)),
wait_u AS (SELECT * FROM union_ns(wait_iv)),
wait_compute_u AS (SELECT * FROM union_ns(wait_compute_iv)),
late AS (
    SELECT pid, device_id, step, SUM(late_ns) AS late_ns, COUNT(*) FILTER (WHERE matched) AS collectives,
           MIN(rank) AS rank
    FROM waits WHERE step IS NOT NULL GROUP BY pid, device_id, step
),
figures AS (
    SELECT k.pid, k.device_id, k.step, k.comm_kernels,
           CAST(COALESCE(cu.busy_ns, 0) AS BIGINT) AS compute_ns,
           CAST(COALESCE(mu.busy_ns, 0) AS BIGINT) AS comm_ns,
           CAST(COALESCE(cu.busy_ns, 0) + COALESCE(mu.busy_ns, 0) - COALESCE(bu.busy_ns, 0) AS BIGINT) AS overlap_ns,
           CAST(COALESCE(me.busy_ns, 0) AS BIGINT) AS memory_ns,
           CAST(COALESCE(wu.busy_ns, 0) AS BIGINT) AS wait_ns,
           CAST(COALESCE(wcu.busy_ns, 0) - COALESCE(cu.busy_ns, 0) AS BIGINT) AS exposed_wait_ns
    FROM rank_step AS k
    LEFT JOIN compute_u AS cu ON cu.grp = k.grp
    LEFT JOIN comm_u AS mu ON mu.grp = k.grp
    LEFT JOIN both_u AS bu ON bu.grp = k.grp
    LEFT JOIN memory_u AS me ON me.grp = k.grp
    LEFT JOIN wait_u AS wu ON wu.grp = k.grp
    LEFT JOIN wait_compute_u AS wcu ON wcu.grp = k.grp
),
ranked AS (
    SELECT f.*, s.analysed, s.start_ns, s.wall_ns,
           COALESCE(l.rank, (SELECT rank FROM session), f.device_id) AS rank,
           CAST(COALESCE(l.late_ns, 0) AS BIGINT) AS late_ns, COALESCE(l.collectives, 0) AS collectives
    FROM figures AS f
    JOIN step AS s ON s.pid = f.pid AND s.step = f.step
    LEFT JOIN late AS l ON l.pid = f.pid AND l.device_id = f.device_id AND l.step = f.step
)
SELECT CAST(rank AS BIGINT) AS rank, pid, device_id, step, analysed, start_ns, wall_ns,
       compute_ns, comm_ns, overlap_ns, comm_ns - overlap_ns AS exposed_comm_ns, memory_ns,
       comm_kernels,
       100.0 * (comm_ns - overlap_ns) / NULLIF(comm_ns, 0) AS exposed_pct,
       wait_ns, comm_ns - wait_ns AS transfer_ns, exposed_wait_ns,
       comm_ns - overlap_ns - exposed_wait_ns AS exposed_transfer_ns,
       late_ns, CAST(collectives AS BIGINT) AS collectives,
       COUNT(*) OVER (PARTITION BY step) > 1 AND late_ns > 0
           AND late_ns = MAX(late_ns) OVER (PARTITION BY step) AS straggler
FROM ranked
ORDER BY step, rank, pid, device_id;
