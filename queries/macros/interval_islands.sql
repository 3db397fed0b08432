-- nsysql: macros.interval_islands v1
-- purpose: Which island of its group each interval falls in: `interval_islands(intervals)` reads the table or CTE named `intervals` (columns grp, s, e and any others: an interval from s to e of group grp) and returns each of its rows, every column kept, with `island`, the same number for the intervals of a group that overlap or touch, directly or through others (the pieces of the group's union).
-- requires: none
-- params: none
-- notes: Sort + running maximum per group: an interval opens a new island when it starts after the furthest end
--   among the group's earlier intervals in (s, e) order (its "reach"); island counts those openings, 1, 2, ... per
--   group in time order. Touching intervals (s = reach) share an island. grp may be of any type (a STRUCT for a
--   composite key: `{'pid': pid, 'step': step} AS grp`). A caller that needs more than an island's start, end and
--   count aggregates per (grp, island) itself (findings.sync_in_step); macros.union_islands is that aggregation.
-- columns:
--   grp | ANY | id (as given)
--   s | BIGINT | ns timestamp (as given)
--   e | BIGINT | ns timestamp (as given)
--   island | HUGEINT | index (per group, in time order)
CREATE OR REPLACE TEMP MACRO interval_islands(intervals) AS TABLE
SELECT * EXCLUDE (reach_ns),
       SUM(CASE WHEN reach_ns IS NULL OR s > reach_ns THEN 1 ELSE 0 END)
           OVER (PARTITION BY grp ORDER BY s, e ROWS UNBOUNDED PRECEDING) AS island
FROM (SELECT *, MAX(e) OVER (PARTITION BY grp ORDER BY s, e ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reach_ns
      FROM query_table(intervals));
