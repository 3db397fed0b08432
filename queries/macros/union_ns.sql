-- nsysql: macros.union_ns v1
-- purpose: The length of the union of intervals per group (busy time, never a sum): `union_ns(intervals)` reads the table or CTE named `intervals` (columns grp BIGINT, s, e: an interval from s to e of group grp) and returns one row per group (grp, busy_ns).
-- requires: none
-- params: none
-- notes: Sort + running maximum: each interval counts only what lies past the furthest end among the group's earlier
--   intervals (its "reach"). One ordered pass over all groups (a window partitioned by group is several times
--   slower on big ones): the running maximum of grp * 2^64 + e, minus grp * 2^64, is negative until the group's
--   first end. grp may be negative; s and e are ns timestamps (below 2^63). analysis.steps, gpu_time_by_range,
--   overhead_by_range, comm, overview_gpus, findings.pageable_copy, fp32_gemm and macros.launch_busy read it;
--   macros.union_islands gives the union's pieces (islands) instead of its length. A composite group gets one
--   integer per key first (analysis.comm, overview_gpus): grouping a window by a STRUCT cost overview_gpus ~30 %.
-- columns:
--   grp | BIGINT | id
--   busy_ns | HUGEINT | ns
CREATE OR REPLACE TEMP MACRO union_ns(intervals) AS TABLE
SELECT grp, SUM(GREATEST(e - GREATEST(s, COALESCE(reach_ns, s)), 0)) AS busy_ns
FROM (SELECT grp, s, e,
             MAX(grp * 18446744073709551616::HUGEINT + e) OVER (ORDER BY grp, s, e
                 ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) - grp * 18446744073709551616::HUGEINT AS reach_ns
      FROM query_table(intervals))
GROUP BY grp;
