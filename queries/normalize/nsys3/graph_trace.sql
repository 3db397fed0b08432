-- nsysql: normalize.nsys3.graph_trace v1
-- purpose: CUDA graph executions traced at graph level (CUPTI_ACTIVITY_KIND_GRAPH_TRACE, nsys's default `--cuda-graph-trace=graph`): one row per graph launch, from its first node's start to its last node's end on the device; the kernels inside have no rows of their own. Its correlation id is the launching cudaGraphLaunch's. Empty with `--cuda-graph-trace=node`, where the graph's kernels are kernel rows with a graph_node_id.
-- requires: raw.CUPTI_ACTIVITY_KIND_GRAPH_TRACE
-- params: none
-- columns:
--   graph_trace_id | BIGINT | id (row order of the export)
--   start_ns | BIGINT | ns
--   end_ns | BIGINT | ns
--   device_id | BIGINT | id
--   context_id | BIGINT | id
--   stream_id | BIGINT | id
--   correlation_id | BIGINT | id
--   pid | BIGINT | id
--   graph_id | BIGINT | id (the graph: the same for every replay of one torch.cuda.CUDAGraph)
--   graph_exec_id | BIGINT | id (the instantiated executable graph that ran)
--   green_context_id | BIGINT | id (NULL when the export predates green contexts)
CREATE TABLE graph_trace AS
SELECT g.rowid AS graph_trace_id,
       g.start AS start_ns,
       g."end" AS end_ns,
       g.deviceId AS device_id,
       g.contextId AS context_id,
       g.streamId AS stream_id,
       g.correlationId AS correlation_id,
       (g.globalPid >> 24) & 16777215 AS pid,
       g.graphId AS graph_id,
       g.graphExecId AS graph_exec_id,
       g.greenContextId AS green_context_id
FROM (SELECT * FROM raw.CUPTI_ACTIVITY_KIND_GRAPH_TRACE  -- greenContextId: NULL in exports without the column
      UNION ALL BY NAME SELECT CAST(NULL AS BIGINT) AS greenContextId WHERE false) AS g
ORDER BY graph_trace_id;
