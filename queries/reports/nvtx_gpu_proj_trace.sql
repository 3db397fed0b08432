-- nsysql: reports.nvtx_gpu_proj_trace v1
-- purpose: Every NVTX range that launched GPU work, projected onto the GPU (first op start to last op end), with its stack position, identical to `nsys stats -r nvtx_gpu_proj_trace` (Nsight Systems 2025.3).
-- requires: nvtx_range, nvtx_ancestor, runtime, runtime_nvtx, gpu_op
-- params: none
-- notes: A GPU op (kernel, memcpy, memset) belongs to every range on the stack of the thread whose CUDA API call
--   launched it (call inside the range, same thread); ranges that end on another thread are ignored, and ranges
--   without GPU ops are left out. Projected Start/Duration run from the range's first op start to its last op end.
--   NumGPUOps counts distinct correlation ids (a CUDA graph launch counts once). Lvl, ParentId and RangeStack
--   (`:<top id>:...:<own id>`) follow the range's stack on its thread; NumChild counts the children that are in
--   the report themselves. RangeId is the range's row in NVTX_EVENTS; rows come in RangeId order, as NVIDIA's
--   query returns them (its ORDER BY names no column it has, so sorts nothing).
-- optional: "RangeStack", "ParentId", "RangeId", "NumChild", "Lvl", ("PID", "TID"), "Style", ("Orig Start (ns)", "Orig Duration (ns)")
-- columns:
--   Name | VARCHAR | text (`<domain>:<text>`)
--   Projected Start (ns) | BIGINT | ns timestamp
--   Projected Duration (ns) | BIGINT | ns
--   Orig Start (ns) | BIGINT | ns timestamp
--   Orig Duration (ns) | BIGINT | ns
--   Style | VARCHAR | PushPop or StartEnd
--   PID | BIGINT | id
--   TID | BIGINT | id
--   NumGPUOps | BIGINT | count
--   Lvl | BIGINT | depth (0 = top level)
--   NumChild | BIGINT | count
--   RangeId | BIGINT | id
--   ParentId | BIGINT | id
--   RangeStack | VARCHAR | text (range ids from the top of the stack down, each after ':')
WITH
projection AS (
    SELECT a.ancestor_id AS range_id, MIN(o.start_ns) AS proj_start, MAX(o.end_ns) - MIN(o.start_ns) AS proj_ns,
           COUNT(DISTINCT o.correlation_id) AS ops
    FROM gpu_op AS o
    JOIN runtime_nvtx AS rn ON rn.runtime_id = o.runtime_id
    JOIN nvtx_ancestor AS a ON a.range_id = rn.range_id
    WHERE o.op_kind <> 'graph'  -- as NVIDIA: graph-level CUDA graph rows are not projected
    GROUP BY a.ancestor_id
),
children AS (
    SELECT r.parent_id AS range_id, COUNT(*) AS n_child
    FROM projection AS p JOIN nvtx_range AS r USING (range_id)
    WHERE r.parent_id IS NOT NULL
    GROUP BY r.parent_id
),
stack AS (
    SELECT a.range_id, string_agg(':' || a.ancestor_id, '' ORDER BY a.distance DESC) AS range_stack
    FROM nvtx_ancestor AS a
    WHERE a.range_id IN (SELECT range_id FROM projection)
    GROUP BY a.range_id
)
SELECT r.range_name AS "Name",
       p.proj_start AS "Projected Start (ns)",
       p.proj_ns AS "Projected Duration (ns)",
       r.start_ns AS "Orig Start (ns)",
       r.duration_ns AS "Orig Duration (ns)",
       r.style AS "Style",
       r.pid AS "PID",
       r.tid AS "TID",
       p.ops AS "NumGPUOps",
       r.depth AS "Lvl",
       COALESCE(c.n_child, 0) AS "NumChild",
       p.range_id AS "RangeId",
       r.parent_id AS "ParentId",
       s.range_stack AS "RangeStack"
FROM projection AS p
JOIN nvtx_range AS r USING (range_id)
LEFT JOIN children AS c USING (range_id)
LEFT JOIN stack AS s USING (range_id)
ORDER BY p.range_id;
