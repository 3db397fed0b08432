-- nsysql: findings.recompute v1
-- purpose: Finding: activation checkpointing re-runs forward work in the backward of the analysed steps: what that recomputation costs per step, and how to pay less of it.
-- requires: analysis.steps, analysis.steady_steps, analysis._step_label, gpu_op, runtime, gpu_op_attribution, user_range, macros.human_ns_each, macros.plural_s
-- params: $min_pct DOUBLE default 5 (fires when recomputation is at least this share of the analysed steps' GPU busy time, %)
-- notes: Recomputation is analysis.steps' recompute_ns: the busy time (union) of the GPU ops of direction
--   `recompute` (gpu_op_attribution's rule 0: kernels a forward re-run inside the backward launched, activation
--   checkpointing) launched in the step. Per process over its analysed steps: recompute = the sum of
--   recompute_ns, busy = the sum of gpu_busy_ns, forward = the sum of fprop_ns. Fires when recompute >= $min_pct
--   % of busy (measured on the GPU's work, not the wall: a CPU-bound step pays the re-run's launches too).
--   recoverable_ns = recompute: without checkpointing the backward would not re-run that work (an upper bound
--   of the wall time it gives back; the activations it keeps cost memory instead). Evidence: the recompute per
--   step, its share of the step's GPU busy time and of the forward's GPU time (how much of the forward runs
--   twice), and the blocks whose forward is re-run: the `layer_N`/`block_N`/`h.N` part of the recompute ops'
--   layer paths (gpu_op_attribution's layer ranges; the whole path when it has none), most ops first.
--   Silent without recompute ops. Numbers per step are means over the analysed steps.
-- columns:
--   rule | VARCHAR | text (recompute)
--   title | VARCHAR | text
--   where | VARCHAR | text (steps, layers re-run)
--   evidence | VARCHAR | text (numbers in ms, %)
--   action | VARCHAR | text
--   recoverable_ns | BIGINT | ns (upper bound of wall time recoverable, total over the analysed steps)
--   recoverable_pct | DOUBLE | pct of the analysed steps' wall time | 1
WITH
win AS (
    SELECT s.pid, s.step, s.recompute_ns, s.gpu_busy_ns, s.fprop_ns, w.wall_ns, w.range_start_ns, w.range_end_ns
    FROM steps AS s JOIN steady_steps AS w ON w.pid = s.pid AND w.step = s.step
    WHERE w.analysed AND s.step > 0
),
per_pid AS (
    SELECT pid, COUNT(*) AS steps, SUM(recompute_ns) AS recompute_ns, SUM(gpu_busy_ns) AS busy_ns,
           SUM(fprop_ns) AS fprop_ns, SUM(wall_ns) AS wall_ns
    FROM win GROUP BY pid
    HAVING SUM(recompute_ns) > 0 AND SUM(recompute_ns) >= $min_pct / 100.0 * SUM(gpu_busy_ns)
),
rerun_layers AS (  -- the blocks whose forward is re-run in the analysed steps, most recompute ops first
    SELECT pid, COUNT(*) AS layers,
           string_agg(block, ', ' ORDER BY ops DESC, block) FILTER (WHERE rank <= 3) AS names
    FROM (SELECT pid, block, ops, ROW_NUMBER() OVER (PARTITION BY pid ORDER BY ops DESC, block) AS rank
          FROM (SELECT rt.pid,
                       COALESCE(NULLIF(regexp_extract(u.layer, '(^|/)((layer|block|h|blk)[._ -]?[0-9]+)(/|$)', 2, 'i'),
                                       ''), u.layer) AS block,
                       COUNT(*) AS ops
                FROM gpu_op_attribution AS a
                JOIN gpu_op AS o ON o.op_kind = a.op_kind AND o.op_id = a.op_id
                JOIN runtime AS rt ON rt.runtime_id = o.runtime_id
                JOIN user_range AS u ON u.range_id = a.layer_range_id
                JOIN win AS w ON w.pid = rt.pid AND rt.start_ns >= w.range_start_ns AND rt.start_ns < w.range_end_ns
                WHERE CAST(a.direction AS VARCHAR) = 'recompute' AND rt.pid IN (SELECT pid FROM per_pid)
                GROUP BY 1, 2))
    GROUP BY pid
),
shown AS (
    SELECT p.*, l.label, r.layers, r.names,
           human_ns_each([p.recompute_ns / p.steps, p.busy_ns / p.steps]) AS d
    FROM per_pid AS p
    JOIN _step_label AS l USING (pid)
    LEFT JOIN rerun_layers AS r USING (pid)
)
SELECT 'recompute' AS rule,
       printf('Activation checkpointing re-runs %s of forward GPU work per step (%.0f%% of GPU busy time)',
              d[1], 100.0 * recompute_ns / busy_ns) AS title,
       label || CASE WHEN layers IS NOT NULL
                     THEN printf(', %d block%s re-run (%s%s)', layers, plural_s(layers), names,
                                 CASE WHEN layers > 3 THEN ', ...' ELSE '' END)
                     ELSE '' END AS "where",
       printf('Per step (mean of %d): the backward re-runs %s of forward kernels, %.1f%% of the %s the GPU is busy',
              steps, d[1], 100.0 * recompute_ns / busy_ns, d[2])
         || CASE WHEN fprop_ns > 0 THEN printf(' and %.0f%% of the forward''s own GPU time', 100.0 * recompute_ns / fprop_ns)
                 ELSE '' END
         || '; the re-run''s launches cost CPU time too.' AS evidence,
       'Recompute less where memory allows: checkpoint every other block (or only the largest ones) instead of '
         || 'every block, or checkpoint selectively - keep the matmul outputs and recompute only cheap elementwise '
         || 'ops (torch.utils.checkpoint with context_fn=create_selective_checkpoint_contexts, or '
         || 'torch._functorch.config.activation_memory_budget under torch.compile). Each block left unchecked '
         || 'keeps its activations: memory grows by about one block''s activations per block, so raise it until '
         || 'memory is nearly full.' AS action,
       CAST(recompute_ns AS BIGINT) AS recoverable_ns,
       100.0 * recompute_ns / wall_ns AS recoverable_pct
FROM shown
ORDER BY recoverable_ns DESC, pid;
