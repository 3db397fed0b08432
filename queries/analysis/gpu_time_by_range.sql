-- nsysql: analysis.gpu_time_by_range v2
-- purpose: GPU time per NVTX range name: NVIDIA's projected time, plus inclusive and exclusive GPU busy time (length of the union of op intervals, so overlapping ops and nested instances never count twice).
-- requires: nvtx_range, runtime, gpu_op
-- params: none
-- notes: An op (kernel, memcpy, memset) is inside a range when the CUDA call that launched it ran inside the range on the
--   same thread. Inclusive: ops inside the range or any range nested in it. Exclusive (self): ops whose innermost range
--   is this one. Busy time is the union over all instances of the name and all devices. projected_ns equals
--   nvtx_gpu_proj_sum's Total Proj Time. Ops launched from other threads (e.g. PyTorch's autograd thread) are not
--   inside the user's ranges: see the summary's coverage line.
-- columns:
--   range_name | VARCHAR | text (`<domain>:<text>`)
--   style | VARCHAR | PushPop or StartEnd
--   instances | BIGINT | count (instances with GPU ops)
--   projected_ns | BIGINT | ns (sum over instances of last op end - first op start)
--   inclusive_busy_ns | BIGINT | ns (union)
--   exclusive_busy_ns | BIGINT | ns (union)
--   kernels | BIGINT | count (inclusive)
--   kernel_sum_ns | BIGINT | ns (sum of inclusive kernel durations)
--   gpu_ops | BIGINT | count (inclusive kernels, copies, sets)
--   is_op_marker | BOOLEAN | flag (every instance is a PyTorch emit_nvtx op marker, not a user range)
WITH
op_launch AS (
    SELECT o.op_kind, o.op_id, o.start_ns, o.end_ns, rn.range_id AS innermost_id
    FROM gpu_op AS o
    JOIN runtime_nvtx AS rn ON rn.runtime_id = o.runtime_id
),
incl AS (  -- one row per (op, range name) even when nested instances share the name
    SELECT DISTINCT r.range_name, r.style, ol.op_kind, ol.op_id, ol.start_ns, ol.end_ns
    FROM op_launch AS ol
    JOIN nvtx_ancestor AS a ON a.range_id = ol.innermost_id
    JOIN nvtx_range AS r ON r.range_id = a.ancestor_id
),
excl AS (
    SELECT r.range_name, r.style, ol.start_ns, ol.end_ns
    FROM op_launch AS ol JOIN nvtx_range AS r ON r.range_id = ol.innermost_id
),
proj AS (
    SELECT r.range_name, r.style, COUNT(*) AS instances, SUM(p.span) AS projected_ns,
           BOOL_AND(r.is_op_marker) AS is_op_marker
    FROM (
        SELECT a.ancestor_id AS range_id, MAX(ol.end_ns) - MIN(ol.start_ns) AS span
        FROM op_launch AS ol JOIN nvtx_ancestor AS a ON a.range_id = ol.innermost_id
        GROUP BY a.ancestor_id
    ) AS p
    JOIN nvtx_range AS r USING (range_id)
    GROUP BY r.range_name, r.style
),
tagged AS (
    SELECT 'incl' AS scope, range_name, style, start_ns, end_ns FROM incl
    UNION ALL
    SELECT 'excl', range_name, style, start_ns, end_ns FROM excl
),
reach AS (  -- furthest end among earlier ops: an op starting past it opens a new busy island
    SELECT *, MAX(end_ns) OVER (PARTITION BY scope, range_name, style ORDER BY start_ns, end_ns
                                ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reach
    FROM tagged
),
islands AS (
    SELECT *, SUM(CASE WHEN reach IS NULL OR start_ns > reach THEN 1 ELSE 0 END)
              OVER (PARTITION BY scope, range_name, style ORDER BY start_ns, end_ns ROWS UNBOUNDED PRECEDING) AS island
    FROM reach
),
busy AS (
    SELECT scope, range_name, style, SUM(island_ns) AS busy_ns
    FROM (SELECT scope, range_name, style, island, MAX(end_ns) - MIN(start_ns) AS island_ns FROM islands GROUP BY ALL)
    GROUP BY ALL
),
counts AS (
    SELECT range_name, style, COUNT(*) FILTER (WHERE op_kind = 'kernel') AS kernels,
           COALESCE(SUM(end_ns - start_ns) FILTER (WHERE op_kind = 'kernel'), 0) AS kernel_sum_ns,
           COUNT(*) AS gpu_ops
    FROM incl GROUP BY range_name, style
)
SELECT p.range_name, p.style, p.instances, p.projected_ns,
       CAST(ib.busy_ns AS BIGINT) AS inclusive_busy_ns,
       CAST(COALESCE(eb.busy_ns, 0) AS BIGINT) AS exclusive_busy_ns,
       c.kernels, CAST(c.kernel_sum_ns AS BIGINT) AS kernel_sum_ns, c.gpu_ops, p.is_op_marker
FROM proj AS p
JOIN busy AS ib ON ib.scope = 'incl' AND ib.range_name = p.range_name AND ib.style = p.style
JOIN counts AS c ON c.range_name = p.range_name AND c.style = p.style
LEFT JOIN busy AS eb ON eb.scope = 'excl' AND eb.range_name = p.range_name AND eb.style = p.style
ORDER BY inclusive_busy_ns DESC, p.range_name, p.style;
