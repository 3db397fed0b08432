-- nsysql: reports.nvtx_gpu_proj_sum v3
-- purpose: NVTX ranges projected onto the GPU, summed by name and style, identical to `nsys stats -r nvtx_gpu_proj_sum` (Nsight Systems 2025.3).
-- requires: nvtx_range, runtime, gpu_op
-- params: none
-- notes: A GPU op (kernel, memcpy, memset) belongs to every range on the stack of the thread whose CUDA API call launched it
--   (call inside the range, same thread). A range's projection runs from its first op's start to its last op's end;
--   child time is not subtracted. Ranges without GPU ops are left out. GPU ops counts distinct correlation ids
--   (one CUDA graph launch counts once). As NVIDIA's report, it reads kernels, copies and sets only: a graph traced at graph level (op_kind graph) is left out. Children counted are children that have GPU ops themselves.
--   Written over the relations a Parquet dataset has (no storage tables such as nvtx_node or gpu_op_int), so
--   the file runs unchanged on DuckDB, Polars or Spark over `nsysql parquet` output.
-- optional: "Avg Num Child", "Avg Range Lvl", "Avg GPU Ops", "Style", "Total GPU Ops", "Proj Avg (ns)", "Total Range Time (ns)"
-- columns:
--   Range | VARCHAR | text (`<domain>:<text>`)
--   Style | VARCHAR | PushPop or StartEnd
--   Total Proj Time (ns) | BIGINT | ns
--   Total Range Time (ns) | BIGINT | ns (CPU duration of the projected instances)
--   Range Instances | BIGINT | count
--   Proj Avg (ns) | DOUBLE | ns | 1
--   Proj Med (ns) | DOUBLE | ns | 1
--   Proj Min (ns) | BIGINT | ns
--   Proj Max (ns) | BIGINT | ns
--   Proj StdDev (ns) | DOUBLE | ns (sample standard deviation) | 1
--   Total GPU Ops | BIGINT | count
--   Avg GPU Ops | DOUBLE | count | 1
--   Avg Range Lvl | DOUBLE | depth (0 = top level) | 1
--   Avg Num Child | DOUBLE | count | 1
WITH
op_range AS (
    SELECT a.ancestor_id AS range_id, o.start_ns, o.end_ns, o.correlation_id
    FROM gpu_op AS o
    JOIN runtime_nvtx AS rn ON rn.runtime_id = o.runtime_id
    JOIN nvtx_ancestor AS a ON a.range_id = rn.range_id
    WHERE o.op_kind <> 'graph'  -- as NVIDIA: graph-level CUDA graph rows are not projected
),
projection AS (
    SELECT range_id, MIN(start_ns) AS proj_start, MAX(end_ns) - MIN(start_ns) AS proj_ns,
           COUNT(DISTINCT correlation_id) AS ops
    FROM op_range
    GROUP BY range_id
),
children AS (
    SELECT r.parent_id AS range_id, COUNT(*) AS n_child
    FROM projection AS p JOIN nvtx_range AS r USING (range_id)
    WHERE r.parent_id IS NOT NULL
    GROUP BY r.parent_id
),
projected AS (
    SELECT r.range_name, r.style, r.duration_ns, r.depth, p.proj_ns, p.ops, COALESCE(c.n_child, 0) AS n_child
    FROM projection AS p
    JOIN nvtx_range AS r USING (range_id)
    LEFT JOIN children AS c USING (range_id)
)
SELECT range_name AS "Range",
       style AS "Style",
       SUM(proj_ns) AS "Total Proj Time (ns)",
       SUM(duration_ns) AS "Total Range Time (ns)",
       COUNT(*) AS "Range Instances",
       AVG(proj_ns) AS "Proj Avg (ns)",
       MEDIAN(proj_ns) AS "Proj Med (ns)",
       MIN(proj_ns) AS "Proj Min (ns)",
       MAX(proj_ns) AS "Proj Max (ns)",
       COALESCE(STDDEV_SAMP(proj_ns), 0.0) AS "Proj StdDev (ns)",
       SUM(ops) AS "Total GPU Ops",
       AVG(ops) AS "Avg GPU Ops",
       AVG(depth) AS "Avg Range Lvl",
       AVG(n_child) AS "Avg Num Child"
FROM projected
GROUP BY range_name, style
ORDER BY "Total Proj Time (ns)" DESC, "Range", "Style";
