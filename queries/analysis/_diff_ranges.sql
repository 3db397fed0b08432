-- nsysql: analysis._diff_ranges v1
-- purpose: One side of `nsysql diff --by range`: wall time of the user's NVTX ranges per path (texts from the top down, op markers and a top-level step range left out), so that the same range of two runs matches.
-- requires: nvtx_range, user_range
-- params: none
-- notes: Paths are user_range.layer: `forward_pass/layer_0/ffn_sublayer` in every step; a step range itself keeps
--   its own name (`profiled_step`), so steps of all numbers add up under their own names. Time is the ranges'
--   CPU-side duration (what nsys stats's nvtx_sum sums), not GPU time: with a synchronize at the end of a range
--   (as capture/workload.py does per phase) it includes the range's GPU work; `--by layer` compares GPU time.
-- columns:
--   name | VARCHAR | text (range path)
--   count | BIGINT | count (range instances)
--   total_ns | BIGINT | ns (sum of their durations)
SELECT layer AS name, COUNT(*) AS count, CAST(SUM(end_ns - start_ns) AS BIGINT) AS total_ns
FROM user_range
GROUP BY layer
ORDER BY total_ns DESC, name;
