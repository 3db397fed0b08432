-- nsysql: analysis.layers v5
-- purpose: GPU kernel time per layer (user NVTX path, see analysis.kernel_table) split into forward, backward, recomputation (activation checkpointing), optimizer and communication (NCCL kernels), in model order, with the backward/forward ratio.
-- requires: kernel, gpu_op, gpu_op_int, gpu_op_attribution, user_range, analysis.steady_steps, macros.fold_repeats
-- params: depth BIGINT default 0 (keep the first N path components; 0 = whole path), merge_repeats BOOLEAN default false (numbered components such as layer_3, MLP_0, Embedding_12 become layer_*, MLP_*, Embedding_*),
--   step BIGINT default 0 (the kernels of one step range, numbered within its process as analysis.steps and
--   analysis.kernel_table_pyprof number them: 1 = the process's first; 0 = every kernel), process BIGINT default
--   null (the pid whose step; null = every process that has that step), analysed BOOLEAN default true (only the
--   kernels launched inside the analysed steps of analysis.steady_steps: the steady state; ignored with `step`),
--   fold BOOLEAN default true (a numbered component that repeats the step's work, `micro_batch_3`, `microbatch2`,
--   `mb_1`, `chunk_0`, `accum_step_2`, `step_5`, `iteration 4`, becomes `micro_batch_*` etc.: the micro-batches
--   of gradient accumulation as one layer; layers such as `layer_3` fold only with merge_repeats)
-- notes: Kernels only (copies and sets are not kernel time); a CUDA graph traced at graph level (gpu_op kind graph)
--   counts as one kernel lasting the whole graph, charged to the ranges around its cudaGraphLaunch. `total_ns`
--   includes direction `other`. recompute_ns: a forward re-run in the backward (activation checkpointing,
--   gpu_op_attribution's rule 0), charged to the layer whose forward it repeats, never in fprop_ns or bprop_ns.
--   comm_ns: NCCL's kernels (direction comm, gpu_op_attribution: named like NCCL's
--   or launched inside an NCCL range), never in fprop_ns, bprop_ns or optim_ns.
--   Rows are in the order their first kernel ran (model order); kernels outside every layer (the unknown
--   layer '?') are one row, last, so the rows add up to the kernel time. With `step`, a kernel belongs to the
--   step when its launching call starts inside the step's time span in the same process, on any thread (as in
--   analysis.kernel_table_pyprof). pct = share of all kernel time in the export (in the step, with `step`). bprop_ratio = bprop_ns / fprop_ns (NULL without fprop).
-- optional: "bprop_ratio", "kernels", "optim_ns", "comm_ns", "recompute_ns"
-- unit-groups: ("fprop_ns", "bprop_ns", "recompute_ns", "optim_ns", "comm_ns", "total_ns")
-- columns:
--   layer | VARCHAR | text
--   fprop_ns | BIGINT | ns
--   bprop_ns | BIGINT | ns
--   recompute_ns | BIGINT | ns
--   optim_ns | BIGINT | ns
--   comm_ns | BIGINT | ns
--   total_ns | BIGINT | ns
--   kernels | BIGINT | count
--   pct | DOUBLE | pct | 1
--   bprop_ratio | DOUBLE | ratio | 2
WITH
step AS (
    SELECT pid, start_ns, end_ns
    FROM (SELECT pid, start_ns, end_ns, row_number() OVER (PARTITION BY pid ORDER BY start_ns, range_id) AS nth
          FROM user_range WHERE is_step)
    WHERE nth = $step AND ($process IS NULL OR pid = $process)
),
analysed AS (  -- the steady state's windows: the ops launched from a step range's start to its end
    SELECT pid, range_start_ns AS start_ns, range_end_ns AS end_ns FROM steady_steps
    WHERE $analysed AND $step = 0 AND analysed AND step > 0
),
ops AS (  -- per layer range and direction first: integers only, so the texts below are cut once per range
    SELECT a.layer_range_id, a.direction, MIN(o.start_ns) AS first_ns, SUM(o.end_ns - o.start_ns) AS d, COUNT(*) AS n
    FROM gpu_op_int AS o JOIN gpu_op_attribution AS a ON a.op_kind = CAST(o.op_kind AS VARCHAR) AND a.op_id = o.op_id
    WHERE o.op_kind IN ('kernel', 'graph')  -- a graph traced at graph level: its kernels as one
      AND ($step = 0 OR EXISTS (SELECT 1 FROM step AS s
                                WHERE s.pid = o.pid AND o.call_start_ns >= s.start_ns AND o.call_start_ns <= s.end_ns))
      AND (NOT $analysed OR $step <> 0 OR NOT EXISTS (SELECT 1 FROM steady_steps WHERE analysed AND step > 0)
           OR EXISTS (SELECT 1 FROM analysed AS w
                      WHERE w.pid = o.pid AND o.call_start_ns >= w.start_ns AND o.call_start_ns <= w.end_ns))
    GROUP BY ALL
),
rolled AS (
    SELECT CASE WHEN u.layer IS NULL THEN '?'
                ELSE array_to_string(list_slice(string_split(
                         CASE WHEN $merge_repeats THEN regexp_replace(u.layer, '([_.#-])[0-9]+(/|$)', '\1*\2', 'g')
                              WHEN $fold THEN fold_repeats(u.layer)  -- queries/macros/fold_repeats.sql
                              ELSE u.layer END, '/'), 1, CASE WHEN $depth > 0 THEN $depth ELSE 1000000 END), '/')
           END AS layer,
           o.direction, o.first_ns, o.d, o.n
    FROM ops AS o LEFT JOIN user_range AS u ON u.range_id = o.layer_range_id
),
total AS (SELECT SUM(d) AS all_ns FROM ops)
SELECT layer,
       CAST(COALESCE(SUM(d) FILTER (WHERE direction = 'fprop'), 0) AS BIGINT) AS fprop_ns,
       CAST(COALESCE(SUM(d) FILTER (WHERE direction = 'bprop'), 0) AS BIGINT) AS bprop_ns,
       CAST(COALESCE(SUM(d) FILTER (WHERE direction = 'recompute'), 0) AS BIGINT) AS recompute_ns,
       CAST(COALESCE(SUM(d) FILTER (WHERE direction = 'optim'), 0) AS BIGINT) AS optim_ns,
       CAST(COALESCE(SUM(d) FILTER (WHERE direction = 'comm'), 0) AS BIGINT) AS comm_ns,
       CAST(SUM(d) AS BIGINT) AS total_ns,
       CAST(SUM(n) AS BIGINT) AS kernels,
       100.0 * SUM(d) / ANY_VALUE(t.all_ns) AS pct,
       CAST(SUM(d) FILTER (WHERE direction = 'bprop') AS DOUBLE)
         / NULLIF(SUM(d) FILTER (WHERE direction = 'fprop'), 0) AS bprop_ratio
FROM rolled CROSS JOIN total AS t
GROUP BY layer
ORDER BY layer = '?', MIN(first_ns), layer;
