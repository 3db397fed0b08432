-- nsysql: reports.nvtx_gpu_proj_sum v2
-- purpose: NVTX ranges projected onto the GPU, summed by name and style, identical to `nsys stats -r nvtx_gpu_proj_sum` (Nsight Systems 2025.3).
-- requires: nvtx_range, runtime, gpu_op, gpu_op_int, runtime_nvtx, nvtx_ancestor, nvtx_node, nvtx_name
-- params: none
-- notes: A GPU op (kernel, memcpy, memset) belongs to every range on the stack of the thread whose CUDA API call launched it
--   (call inside the range, same thread). A range's projection runs from its first op's start to its last op's end;
--   child time is not subtracted. Ranges without GPU ops are left out. GPU ops counts distinct correlation ids
--   (one CUDA graph launch counts once). As NVIDIA's report, it reads kernels, copies and sets only: a graph traced at graph level (op_kind graph) is left out. Children counted are children that have GPU ops themselves.
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
label AS (  -- one number per printed (range name, style): the ranges are grouped on it, the texts joined last
    SELECT name_id, range_name, style, DENSE_RANK() OVER (ORDER BY range_name, style) AS label_id FROM nvtx_name
),
op_range AS (
    SELECT a.ancestor_id AS range_id, o.start_ns, o.end_ns, o.correlation_id
    FROM gpu_op_int AS o
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
    FROM projection AS p JOIN nvtx_node AS r USING (range_id)
    WHERE r.parent_id IS NOT NULL
    GROUP BY r.parent_id
),
projected AS (
    SELECT lb.label_id, r.duration_ns, r.depth, p.proj_ns, p.ops, COALESCE(c.n_child, 0) AS n_child
    FROM projection AS p
    JOIN nvtx_node AS r USING (range_id)
    JOIN label AS lb ON lb.name_id = r.name_id
    LEFT JOIN children AS c USING (range_id)
),
grouped AS (
    SELECT label_id,
           SUM(proj_ns) AS total_proj,
           SUM(duration_ns) AS total_range,
           COUNT(*) AS instances,
           AVG(proj_ns) AS proj_avg,
           MEDIAN(proj_ns) AS proj_med,
           MIN(proj_ns) AS proj_min,
           MAX(proj_ns) AS proj_max,
           COALESCE(STDDEV_SAMP(proj_ns), 0.0) AS proj_sd,
           SUM(ops) AS ops,
           AVG(ops) AS avg_ops,
           AVG(depth) AS avg_lvl,
           AVG(n_child) AS avg_child
    FROM projected
    GROUP BY label_id
)
SELECT t.range_name AS "Range",
       t.style AS "Style",
       g.total_proj AS "Total Proj Time (ns)",
       g.total_range AS "Total Range Time (ns)",
       g.instances AS "Range Instances",
       g.proj_avg AS "Proj Avg (ns)",
       g.proj_med AS "Proj Med (ns)",
       g.proj_min AS "Proj Min (ns)",
       g.proj_max AS "Proj Max (ns)",
       g.proj_sd AS "Proj StdDev (ns)",
       g.ops AS "Total GPU Ops",
       g.avg_ops AS "Avg GPU Ops",
       g.avg_lvl AS "Avg Range Lvl",
       g.avg_child AS "Avg Num Child"
FROM grouped AS g
JOIN (SELECT DISTINCT label_id, range_name, style FROM label) AS t USING (label_id)
ORDER BY "Total Proj Time (ns)" DESC, "Range", "Style";
