-- nsysql: macros.union_islands v1
-- purpose: The union of intervals per group as disjoint intervals (its islands): `union_islands(intervals)` reads the table or CTE named `intervals` (columns grp, s, e: an interval from s to e of group grp) and returns one row per island (grp, s, e, n), n being how many intervals merged into it.
-- requires: macros.interval_islands
-- params: none
-- notes: The islands of macros.interval_islands, each its first start, last end and count. Islands of one group are
--   disjoint and separated by a gap (touching intervals merge); the union's length is SUM(e - s), or macros.union_ns
--   where only the length is wanted (one pass, integer groups: faster). grp may be of any type. gpu_busy (per device),
--   analysis._process_busy (per process), findings.dataloader_wait, gpu_idle_in_step and exposed_comm read it.
-- columns:
--   grp | ANY | id (as given)
--   s | BIGINT | ns timestamp (the island's start)
--   e | BIGINT | ns timestamp (its end)
--   n | BIGINT | count (intervals merged into it)
CREATE OR REPLACE TEMP MACRO union_islands(intervals) AS TABLE
SELECT grp, MIN(s) AS s, MAX(e) AS e, COUNT(*) AS n FROM interval_islands(intervals) GROUP BY grp, island;
