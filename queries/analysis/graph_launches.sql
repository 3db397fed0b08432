-- nsysql: analysis.graph_launches v1
-- purpose: CUDA graphs traced at graph level (graph_trace, nsys's default --cuda-graph-trace=graph) in one row: how many launches of how many graphs and their GPU time, for the summary's note that the kernels inside are not in the export.
-- requires: kernel|memcpy|memset|graph_trace
-- params: none
-- rows: one
-- columns:
--   launches | BIGINT | count (graph executions)
--   graphs | BIGINT | count (distinct graph ids)
--   graph_ns | BIGINT | ns (sum of graph execution durations)
SELECT COUNT(*) AS launches, COUNT(DISTINCT graph_id) AS graphs,
       CAST(COALESCE(SUM(end_ns - start_ns), 0) AS BIGINT) AS graph_ns
FROM graph_trace;
