-- nsysql: analysis.attribution_coverage v6
-- purpose: How much GPU kernel time kernel attribution could charge: with a known layer, per direction, and per way the layer was found (seq link to the forward op, nsysql.annotate's backward range of the module, inferred from the capture's structure, a forward re-run matched to the forward it repeats, own thread's range, range borrowed from the thread waiting in backward, none).
-- requires: kernel, gpu_op, gpu_op_attribution, user_range
-- params: none
-- rows: one
-- notes: Kernels only; a CUDA graph traced at graph level (gpu_op kind graph) counts as one kernel lasting the whole graph.
-- columns:
--   kernels | BIGINT | count
--   kernel_ns | BIGINT | ns
--   known_layer_ns | BIGINT | ns (layer other than '?')
--   known_layer_pct | DOUBLE | pct | 2
--   fprop_ns | BIGINT | ns
--   bprop_ns | BIGINT | ns
--   optim_ns | BIGINT | ns
--   comm_ns | BIGINT | ns (NCCL's kernels: direction comm)
--   other_ns | BIGINT | ns (outside every range, or no launching call)
--   by_seq_ns | BIGINT | ns
--   by_annotated_ns | BIGINT | ns
--   by_inferred_ns | BIGINT | ns (backward kernels charged to their forward layer by the capture's structure)
--   by_own_range_ns | BIGINT | ns
--   by_borrowed_range_ns | BIGINT | ns
--   recompute_ns | BIGINT | ns (forward re-runs in the backward: activation checkpointing)
--   by_rerun_ns | BIGINT | ns (re-runs charged to the layer whose forward they repeat)
WITH grouped AS (  -- per layer range, direction and link first: integers only
    SELECT a.layer_range_id, a.direction, a.link, SUM(o.end_ns - o.start_ns) AS d, COUNT(*) AS n
    FROM gpu_op AS o JOIN gpu_op_attribution AS a USING (op_kind, op_id)
    WHERE o.op_kind IN ('kernel', 'graph')  -- a graph traced at graph level: its kernels as one
    GROUP BY ALL
),
ops AS (
    SELECT COALESCE(u.layer, '?') AS layer, g.direction, g.link, g.d, g.n
    FROM grouped AS g LEFT JOIN user_range AS u ON u.range_id = g.layer_range_id
)
SELECT CAST(COALESCE(SUM(n), 0) AS BIGINT) AS kernels,
       CAST(COALESCE(SUM(d), 0) AS BIGINT) AS kernel_ns,
       CAST(COALESCE(SUM(d) FILTER (WHERE layer <> '?'), 0) AS BIGINT) AS known_layer_ns,
       100.0 * COALESCE(SUM(d) FILTER (WHERE layer <> '?'), 0) / NULLIF(SUM(d), 0) AS known_layer_pct,
       CAST(COALESCE(SUM(d) FILTER (WHERE direction = 'fprop'), 0) AS BIGINT) AS fprop_ns,
       CAST(COALESCE(SUM(d) FILTER (WHERE direction = 'bprop'), 0) AS BIGINT) AS bprop_ns,
       CAST(COALESCE(SUM(d) FILTER (WHERE direction = 'optim'), 0) AS BIGINT) AS optim_ns,
       CAST(COALESCE(SUM(d) FILTER (WHERE direction = 'comm'), 0) AS BIGINT) AS comm_ns,
       CAST(COALESCE(SUM(d) FILTER (WHERE direction = 'other'), 0) AS BIGINT) AS other_ns,
       CAST(COALESCE(SUM(d) FILTER (WHERE link = 'seq'), 0) AS BIGINT) AS by_seq_ns,
       CAST(COALESCE(SUM(d) FILTER (WHERE link = 'annotated'), 0) AS BIGINT) AS by_annotated_ns,
       CAST(COALESCE(SUM(d) FILTER (WHERE link = 'inferred'), 0) AS BIGINT) AS by_inferred_ns,
       CAST(COALESCE(SUM(d) FILTER (WHERE link = 'own'), 0) AS BIGINT) AS by_own_range_ns,
       CAST(COALESCE(SUM(d) FILTER (WHERE link = 'borrowed'), 0) AS BIGINT) AS by_borrowed_range_ns,
       CAST(COALESCE(SUM(d) FILTER (WHERE direction = 'recompute'), 0) AS BIGINT) AS recompute_ns,
       CAST(COALESCE(SUM(d) FILTER (WHERE link = 'rerun'), 0) AS BIGINT) AS by_rerun_ns
FROM ops;
