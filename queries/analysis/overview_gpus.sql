-- nsysql: analysis.overview_gpus v5
-- purpose: Per GPU, within the analysed steps: utilization, estimated SM efficiency, estimated achieved occupancy and the share of kernel time on tensor cores (TensorBoard's GPU summary).
-- requires: analysis.steady_steps, analysis._steady_windows, analysis.comm_waits, kernel|memcpy|memset, gpu_op, macros.union_ns, macros.clip_to_steps, macros.tensor_core_class
-- params: none
-- notes: Windows are the analysed steps (steady_steps.analysed); a GPU op counts for a window when it belongs to
--   the window's process, clipped to the window. window_ns = total wall time of the analysed windows of the
--   processes that used the GPU. Only the GPUs with ops in the windows are listed (nsysql says how many others
--   the capture saw, idle).
--   A communication kernel (analysis.comm_waits) spins until the collective's last rank arrives: CUPTI counts it
--   busy while it does nothing useful. Here only its transfer part (from that arrival on) counts as an op; its
--   wait part counts in comm_wait_pct alone.
--   utilization_pct = 100 * |union of the GPU's ops (kernels - communication kernels by their transfer part -,
--   copies, sets, CUDA graphs traced at graph level) clipped to the windows| / window_ns.
--   comm_wait_pct = 100 * |the union of the communication kernels' wait parts minus those ops| / window_ns: time the
--   GPU only waited for another rank.
--   A graph traced at graph level has no kernel rows: it counts in busy_ns and utilization_pct, not in kernel_ns
--   nor the kernel estimates below (its kernels' names, grids and blocks are not in the export). The estimates
--   cover the kernels with rows only, and efficiency_unknown_pct = 100 * clipped graph-replay time / (kernel_ns +
--   clipped graph-replay time) is the share of the GPU's kernel work they cannot see.
--   sm_efficiency_pct = 100 * sum over kernels of min(blocks / sm_count, 1) * clipped duration / known_ns
--   (TensorBoard's estimate; blocks = grid_x * grid_y * grid_z), capped at 100 * (busy_ns - graph_ns) / known_ns:
--   overlapping kernels on several streams cannot make the SMs busier than the GPU is. known_ns = window_ns -
--   graph_ns, graph_ns the clipped graph-replay time (window_ns itself without graph-level replays, so then the
--   cap is utilization_pct): a replay's time is neither busy nor idle SMs here. 0 on a GPU with copies but no
--   kernel in the windows; NULL when TARGET_INFO_GPU does not give the GPU's SM count, or when the GPU's only
--   kernel work in the windows is graph-level replays.
--   achieved_occupancy_pct = kernel-time-weighted mean of each kernel's theoretical occupancy (the CUDA occupancy
--   calculator): warps per block W = ceil(threads per block / threads_per_warp); resident blocks per SM =
--   min(max_blocks_per_sm, floor(max_warps_per_sm / W), registers: floor(max_registers_per_sm / (W * 32 *
--   registers_per_thread rounded up to 256 per warp)), shared memory: floor(max_shmem_per_sm / (static + dynamic
--   shared memory per block + 1 KiB reserved by the driver on compute capability 8.0 and newer, rounded up to 128
--   bytes))); occupancy = resident blocks * W / max_warps_per_sm. It ignores the grid size (a grid smaller than
--   the GPU leaves SMs empty: that is what SM efficiency shows).
--   tensor_core_pct = 100 * clipped time of tensor-core kernels / clipped kernel time, a kernel being on tensor
--   cores when macros.tensor_core_class calls its name 'yes' (TF32 included: sm90_xmma_*_f32f32_tf32f32_*,
--   cutlass_tensorop_s1688*_tf32_*; cuBLAS's nvjet_*; bf16/f16/fp8/int8 kernels); tensor_core_unknown_pct the same
--   for the kernels it calls 'unknown' (a GEMM or convolution whose precision the name does not give), which
--   tensor_core_pct leaves out.
-- columns:
--   device_id | BIGINT | id
--   gpu_name | VARCHAR | text
--   sm_count | BIGINT | count
--   memory_bytes | BIGINT | bytes
--   window_ns | BIGINT | ns (wall time of the analysed steps)
--   busy_ns | BIGINT | ns (union of GPU ops within them)
--   kernel_ns | BIGINT | ns (sum of clipped kernel durations)
--   utilization_pct | DOUBLE | pct of window_ns | 1
--   sm_efficiency_pct | DOUBLE | pct of window_ns | 1
--   achieved_occupancy_pct | DOUBLE | pct (kernel-time weighted) | 1
--   tensor_core_pct | DOUBLE | pct of kernel_ns | 1
--   comm_wait_pct | DOUBLE | pct of window_ns | 1
--   tensor_core_unknown_pct | DOUBLE | pct of kernel_ns (GEMMs and convolutions of unknown precision) | 1
--   efficiency_unknown_pct | DOUBLE | pct of kernel_ns + graph-replay time (graph-level replays: no grids) | 1
WITH
win AS (SELECT step, pid, start_ns, end_ns FROM steady_steps WHERE analysed),
waits AS (SELECT pid, device_id, kernel_id, start_ns, wait_end_ns, end_ns FROM comm_waits),
op AS (  -- communication kernels by their transfer part
    SELECT device_id, pid, op_kind, op_id, start_ns, end_ns FROM gpu_op
    WHERE end_ns > start_ns AND NOT (op_kind = 'kernel' AND op_id IN (SELECT kernel_id FROM waits))
    UNION ALL
    SELECT device_id, pid, 'kernel', kernel_id, wait_end_ns, end_ns FROM waits WHERE end_ns > wait_end_ns
),
wait_op AS (SELECT device_id, pid, start_ns, wait_end_ns AS end_ns FROM waits WHERE wait_end_ns > start_ns),
waited AS MATERIALIZED (SELECT device_id, pid, step, s, e FROM clip_to_steps(wait_op, _steady_windows)),
ops AS MATERIALIZED (  -- each op clipped to each analysed step of its process it overlaps
    -- (queries/macros/clip_to_steps.sql)
    SELECT device_id, pid, step, op_kind, op_id, s, e FROM clip_to_steps(op, _steady_windows)
),
op_group AS (  -- one number per (device, pid, step): union_ns groups on it
    SELECT device_id, pid, step, ROW_NUMBER() OVER () AS grp FROM (SELECT DISTINCT device_id, pid, step FROM ops)
),
op_interval AS (SELECT g.grp, o.s, o.e FROM ops AS o JOIN op_group AS g USING (device_id, pid, step)),
busy_step AS MATERIALIZED (  -- |union| per device and step (queries/macros/union_ns.sql)
    SELECT g.device_id, g.pid, g.step, u.busy_ns FROM union_ns(op_interval) AS u JOIN op_group AS g USING (grp)
),
busy AS (SELECT device_id, SUM(busy_ns) AS busy_ns FROM busy_step GROUP BY device_id),
wait_group AS (
    SELECT device_id, pid, step, ROW_NUMBER() OVER () AS grp FROM (SELECT DISTINCT device_id, pid, step FROM waited)
),
with_wait_interval AS (  -- the ops and the waits of the steps with waits
    SELECT g.grp, o.s, o.e FROM ops AS o JOIN wait_group AS g USING (device_id, pid, step)
    UNION ALL
    SELECT g.grp, w.s, w.e FROM waited AS w JOIN wait_group AS g USING (device_id, pid, step)
),
wait_only AS (  -- per device, |ops and waits| - |ops| over the steps with waits: the time only waits ran
    SELECT g.device_id, SUM(u.busy_ns - COALESCE(b.busy_ns, 0)) AS wait_ns
    FROM union_ns(with_wait_interval) AS u JOIN wait_group AS g USING (grp)
    LEFT JOIN busy_step AS b ON b.device_id = g.device_id AND b.pid = g.pid AND b.step = g.step
    GROUP BY g.device_id
),
windows AS (  -- wall time of the windows of the processes that used each GPU
    SELECT d.device_id, SUM(w.end_ns - w.start_ns) AS window_ns
    FROM (SELECT DISTINCT device_id, pid FROM ops) AS d
    JOIN win AS w USING (pid)
    GROUP BY d.device_id
),
kern AS (
    SELECT o.device_id, o.e - o.s AS dur, k.grid_x * k.grid_y * k.grid_z AS blocks,
           k.block_x * k.block_y * k.block_z AS threads, k.registers_per_thread AS regs,
           COALESCE(k.static_smem_bytes, 0) + COALESCE(k.dynamic_smem_bytes, 0) AS smem,
           tensor_core_class(CAST(k.kernel_name AS VARCHAR)) AS tc_class  -- queries/macros/tensor_core_class.sql
    FROM ops AS o JOIN kernel AS k ON o.op_kind = 'kernel' AND k.kernel_id = o.op_id
),
occ AS (
    SELECT k.*, g.sm_count, g.max_warps_per_sm AS max_warps,
           CEIL(k.threads / COALESCE(g.threads_per_warp, 32)) AS warps,
           LEAST(g.max_blocks_per_sm,
                 FLOOR(g.max_warps_per_sm / CEIL(k.threads / COALESCE(g.threads_per_warp, 32))),
                 CASE WHEN k.regs > 0 THEN FLOOR(g.max_registers_per_sm /
                      (CEIL(k.threads / COALESCE(g.threads_per_warp, 32)) * CEIL(k.regs * 32 / 256) * 256)) END,
                 CASE WHEN k.smem > 0 THEN FLOOR(g.max_shmem_per_sm /
                      (CEIL((k.smem + CASE WHEN g.compute_major >= 8 THEN 1024 ELSE 0 END) / 128) * 128)) END
           ) AS resident_blocks
    FROM kern AS k LEFT JOIN gpu AS g USING (device_id)
    WHERE k.threads > 0
),
per_gpu AS (
    SELECT device_id, SUM(dur) AS kernel_ns,
           -- integer sums, divided once: a sum of doubles differs in its last digit with the threads' order
           SUM(dur * LEAST(blocks, sm_count)) FILTER (WHERE sm_count > 0)
               / MAX(sm_count) AS sm_weighted,  -- NULL: SMs unknown
           SUM(dur * LEAST(CAST(resident_blocks * warps AS BIGINT), max_warps))
               FILTER (WHERE resident_blocks IS NOT NULL AND max_warps > 0) / MAX(max_warps) AS occ_weighted,
           SUM(dur) FILTER (WHERE resident_blocks IS NOT NULL AND max_warps > 0) AS occ_ns,
           SUM(dur) FILTER (WHERE tc_class = 'yes') AS tensor_ns,
           SUM(dur) FILTER (WHERE tc_class = 'unknown') AS tc_unknown_ns
    FROM occ GROUP BY device_id
),
graphs AS (  -- CUDA graphs traced at graph level: no kernel rows, no grids
    SELECT device_id, SUM(e - s) AS graph_ns FROM ops WHERE op_kind = 'graph' GROUP BY device_id
),
listed AS (SELECT device_id, window_ns FROM windows)  -- the GPUs that ran ops in the windows
SELECT w.device_id, g.gpu_name, g.sm_count, g.memory_bytes, CAST(w.window_ns AS BIGINT) AS window_ns,
       CAST(COALESCE(b.busy_ns, 0) AS BIGINT) AS busy_ns, CAST(COALESCE(p.kernel_ns, 0) AS BIGINT) AS kernel_ns,
       100.0 * COALESCE(b.busy_ns, 0) / NULLIF(w.window_ns, 0) AS utilization_pct,
       CASE WHEN p.kernel_ns IS NULL AND COALESCE(gr.graph_ns, 0) > 0 THEN NULL  -- graph replays only: unknown
            WHEN p.kernel_ns IS NULL THEN 0.0  -- no kernel (copies only): a sum over no kernels
            WHEN p.sm_weighted IS NULL THEN NULL  -- (LEAST skips NULLs: it would give utilization_pct)
            ELSE LEAST(100.0 * p.sm_weighted / NULLIF(w.window_ns - COALESCE(gr.graph_ns, 0), 0),
                       100.0 * GREATEST(COALESCE(b.busy_ns, 0) - COALESCE(gr.graph_ns, 0), 0)
                           / NULLIF(w.window_ns - COALESCE(gr.graph_ns, 0), 0)) END AS sm_efficiency_pct,
       100.0 * p.occ_weighted / NULLIF(p.occ_ns, 0) AS achieved_occupancy_pct,
       100.0 * COALESCE(p.tensor_ns, 0) / NULLIF(p.kernel_ns, 0) AS tensor_core_pct,
       100.0 * COALESCE(wo.wait_ns, 0) / NULLIF(w.window_ns, 0) AS comm_wait_pct,
       100.0 * COALESCE(p.tc_unknown_ns, 0) / NULLIF(p.kernel_ns, 0) AS tensor_core_unknown_pct,
       100.0 * COALESCE(gr.graph_ns, 0) / NULLIF(COALESCE(p.kernel_ns, 0) + COALESCE(gr.graph_ns, 0), 0)
           AS efficiency_unknown_pct
FROM listed AS w
LEFT JOIN gpu AS g USING (device_id)
LEFT JOIN busy AS b USING (device_id)
LEFT JOIN per_gpu AS p USING (device_id)
LEFT JOIN wait_only AS wo USING (device_id)
LEFT JOIN graphs AS gr USING (device_id)
ORDER BY w.device_id;
