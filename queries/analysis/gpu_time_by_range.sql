-- nsysql: analysis.gpu_time_by_range v2
-- purpose: GPU time per NVTX range name: NVIDIA's projected time, plus inclusive and exclusive GPU busy time (length of the union of op intervals, so overlapping ops and nested instances never count twice).
-- requires: nvtx_range, runtime, gpu_op, macros.union_ns
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
name_group AS MATERIALIZED (  -- one integer per (range name, style): ops are grouped and unioned by it
    SELECT n.name_id, g.gid, n.is_op_marker
    FROM nvtx_name AS n
    JOIN (SELECT range_name, style, ROW_NUMBER() OVER (ORDER BY range_name, style) AS gid
          FROM (SELECT DISTINCT range_name, style FROM nvtx_name)) AS g USING (range_name, style)
),
op_launch AS (
    SELECT o.op_kind, o.start_ns, o.end_ns, o.op_id, rn.range_id AS innermost_id
    FROM gpu_op AS o
    JOIN runtime_nvtx AS rn ON rn.runtime_id = o.runtime_id
),
incl AS (  -- one row per (op, range name) even when nested instances share the name
    SELECT DISTINCT g.gid, ol.op_kind, ol.op_id, ol.start_ns, ol.end_ns
    FROM op_launch AS ol
    JOIN nvtx_ancestor AS a ON a.range_id = ol.innermost_id
    JOIN nvtx_node AS r ON r.range_id = a.ancestor_id
    JOIN name_group AS g ON g.name_id = r.name_id
),
excl AS (
    SELECT g.gid, ol.start_ns, ol.end_ns
    FROM op_launch AS ol
    JOIN nvtx_node AS r ON r.range_id = ol.innermost_id
    JOIN name_group AS g ON g.name_id = r.name_id
),
proj AS (
    SELECT g.gid, COUNT(*) AS instances, SUM(p.span) AS projected_ns, BOOL_AND(g.is_op_marker) AS is_op_marker
    FROM (
        SELECT a.ancestor_id AS range_id, MAX(ol.end_ns) - MIN(ol.start_ns) AS span
        FROM op_launch AS ol JOIN nvtx_ancestor AS a ON a.range_id = ol.innermost_id
        GROUP BY a.ancestor_id
    ) AS p
    JOIN nvtx_node AS r USING (range_id)
    JOIN name_group AS g ON g.name_id = r.name_id
    GROUP BY g.gid
),
tagged AS (  -- group 2 * gid: inclusive, 2 * gid + 1: exclusive
    SELECT 2 * gid AS grp, start_ns AS s, end_ns AS e FROM incl
    UNION ALL
    SELECT 2 * gid + 1, start_ns, end_ns FROM excl
),
busy AS (SELECT grp, busy_ns FROM union_ns(tagged)),  -- the union of each group's intervals (macros.union_ns)
counts AS (
    SELECT gid, COUNT(*) FILTER (WHERE op_kind = 'kernel') AS kernels,
           COALESCE(SUM(end_ns - start_ns) FILTER (WHERE op_kind = 'kernel'), 0) AS kernel_sum_ns,
           COUNT(*) AS gpu_ops
    FROM incl GROUP BY gid
),
names AS (SELECT DISTINCT g.gid, n.range_name, n.style FROM name_group AS g JOIN nvtx_name AS n USING (name_id))
SELECT n.range_name, n.style, p.instances, p.projected_ns,
       CAST(ib.busy_ns AS BIGINT) AS inclusive_busy_ns,
       CAST(COALESCE(eb.busy_ns, 0) AS BIGINT) AS exclusive_busy_ns,
       c.kernels, CAST(c.kernel_sum_ns AS BIGINT) AS kernel_sum_ns, c.gpu_ops, p.is_op_marker
FROM proj AS p
JOIN names AS n USING (gid)
JOIN busy AS ib ON ib.grp = 2 * p.gid
JOIN counts AS c ON c.gid = p.gid
LEFT JOIN busy AS eb ON eb.grp = 2 * p.gid + 1
ORDER BY inclusive_busy_ns DESC, n.range_name, n.style;
