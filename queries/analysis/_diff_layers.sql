-- nsysql: analysis._diff_layers v2
-- purpose: One side of `nsysql diff --by layer`: GPU time per attributed layer (forward, backward and optimizer work together), so that the same layer of two runs matches.
-- requires: gpu_op, gpu_op_attribution, user_range
-- params: none
-- notes: Layers are gpu_op_attribution's (user NVTX path without op markers and without a top-level step range;
--   backward kernels join their forward layer through the autograd sequence number; '?' when unknown). Time is
--   kernel time, as in analysis.layers: the sum of the durations of the layer's kernels (copies and sets left out).
-- columns:
--   name | VARCHAR | text (layer)
--   count | BIGINT | count (kernels)
--   total_ns | BIGINT | ns (sum of their durations)
SELECT COALESCE(u.layer, '?') AS name, COUNT(*) AS count, CAST(SUM(o.end_ns - o.start_ns) AS BIGINT) AS total_ns
FROM gpu_op AS o
JOIN gpu_op_attribution AS a ON a.op_kind = o.op_kind AND a.op_id = o.op_id
LEFT JOIN user_range AS u ON u.range_id = a.layer_range_id
WHERE o.op_kind IN ('kernel', 'graph')  -- a graph traced at graph level: its kernels as one, as in analysis.layers
GROUP BY ALL
ORDER BY total_ns DESC, name;
