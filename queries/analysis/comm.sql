-- nsysql: analysis.comm v2
-- purpose: Communication against compute per rank (process and GPU) and step: the step's compute time, communication time, the part of the communication that compute hides (overlap) and the part it does not (exposed), each a union of intervals, never a sum of durations.
-- requires: analysis.steady_steps, gpu_op, runtime, runtime_nvtx, nvtx_ancestor, kernel|nvtx_range, macros.comm_kernels, macros.union_ns
-- params: none
-- notes: Classes of GPU ops: communication = a kernel whose demangled name contains `nccl` (any case:
--   ncclDevKernel_*, ncclKernel_*), or whose launching CUDA call lies inside an NVTX range of NCCL's domain
--   (ncclAllReduce, ncclGroupEnd, ...), or NCCL's one-rank reduction kernel `<unnamed>::oneRankReduce<...>`:
--   macros.comm_kernels, so an export without NVTX still has its communication;
--   memory = copies and memsets; compute = every other GPU op (kernels, CUDA graph executions). An op belongs to
--   the step whose span holds its launching call (start to end) on any thread of the step's process, as in
--   analysis.steps; a rank is (pid, device_id).
--   compute_ns, comm_ns and memory_ns are the unions of the rank's ops of that class in
--   the step; overlap_ns = the communication time during which the rank's own compute of the step runs
--   (|C ∩ K| = |C| + |K| - |C ∪ K|), exposed_comm_ns = comm_ns - overlap_ns. With one process per GPU, as
--   DDP runs, the rank's compute is the GPU's. step is analysis.steps' number, which counts the process's own
--   steps (1 = its first), so ranks of one export compare step by step. Rows only for ranks and steps with GPU
--   work; an export without steps has one window, step 0: the whole GPU activity (analysis.steady_steps).
-- columns:
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
WITH
kernel_op AS (
    SELECT op_id AS kernel_id, op_name AS kernel_name, pid, correlation_id FROM gpu_op WHERE op_kind = 'kernel'
),
comm_kernel AS (  -- queries/macros/comm_kernels.sql
    SELECT kernel_id FROM comm_kernels(kernel_op, runtime, runtime_nvtx, nvtx_ancestor, nvtx_range)
),
op AS (
    SELECT o.op_kind, o.pid, o.device_id, o.start_ns, o.end_ns, rt.start_ns AS call_start_ns, rt.end_ns AS call_end_ns,
           CASE WHEN o.op_kind IN ('memcpy', 'memset') THEN 'memory'
                WHEN o.op_kind = 'kernel' AND o.op_id IN (SELECT kernel_id FROM comm_kernel) THEN 'comm'
                ELSE 'compute' END AS class
    FROM gpu_op AS o
    JOIN runtime AS rt ON rt.runtime_id = o.runtime_id
),
step AS (
    SELECT step, pid, start_ns, end_ns, wall_ns, analysed FROM steady_steps WHERE pid IS NOT NULL
),
in_step AS (
    SELECT s.pid, o.device_id, s.step, o.class, o.start_ns, o.end_ns
    FROM op AS o
    ASOF JOIN step AS s ON s.pid = o.pid AND s.start_ns <= o.call_start_ns
    WHERE o.call_end_ns <= s.end_ns
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
compute_u AS (SELECT * FROM union_ns(compute_iv)),
comm_u AS (SELECT * FROM union_ns(comm_iv)),
memory_u AS (SELECT * FROM union_ns(memory_iv)),
both_u AS (SELECT * FROM union_ns(both_iv)),
figures AS (
    SELECT k.pid, k.device_id, k.step, k.comm_kernels,
           CAST(COALESCE(cu.busy_ns, 0) AS BIGINT) AS compute_ns,
           CAST(COALESCE(mu.busy_ns, 0) AS BIGINT) AS comm_ns,
           CAST(COALESCE(cu.busy_ns, 0) + COALESCE(mu.busy_ns, 0) - COALESCE(bu.busy_ns, 0) AS BIGINT) AS overlap_ns,
           CAST(COALESCE(me.busy_ns, 0) AS BIGINT) AS memory_ns
    FROM rank_step AS k
    LEFT JOIN compute_u AS cu ON cu.grp = k.grp
    LEFT JOIN comm_u AS mu ON mu.grp = k.grp
    LEFT JOIN both_u AS bu ON bu.grp = k.grp
    LEFT JOIN memory_u AS me ON me.grp = k.grp
)
SELECT f.pid, f.device_id, f.step, s.analysed, s.start_ns, s.wall_ns,
       f.compute_ns, f.comm_ns, f.overlap_ns, f.comm_ns - f.overlap_ns AS exposed_comm_ns, f.memory_ns,
       f.comm_kernels,
       100.0 * (f.comm_ns - f.overlap_ns) / NULLIF(f.comm_ns, 0) AS exposed_pct
FROM figures AS f
JOIN step AS s ON s.pid = f.pid AND s.step = f.step
ORDER BY f.step, f.pid, f.device_id;
