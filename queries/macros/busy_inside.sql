-- nsysql: macros.busy_inside v1
-- purpose: Busy time of a process's GPUs inside each of a set of probe intervals: `busy_inside(probe, process_busy)` reads the table or CTE named `probe` (columns id, pid, s, e: one interval of process pid from s to e) and returns one row per probe id with busy_ns, the part of [s, e] covered by the busy intervals of analysis._process_busy (both passed by name: DuckDB binds a macro's tables when it is created).
-- requires: macros.busy_before
-- params: none
-- notes: busy_ns = B(e) - B(s), B(t) = the process's busy time up to t = before_ns of its last busy interval starting
--   at or before t, plus that interval's part up to t; that interval is macros.busy_before's (one sorted sweep over
--   the points and the few busy intervals they can find).
--   A finding reads it as `FROM busy_inside(probe, process_busy)` after defining its own `probe` CTE; nsysql creates the
--   macro on every connection to an export (TEMP) and in `nsysql db` files.
-- columns:
--   id | BIGINT | id (the probe's)
--   busy_ns | HUGEINT | ns
CREATE OR REPLACE TEMP MACRO busy_inside(probe, busy) AS TABLE
WITH
point AS (SELECT id, 0 AS side, pid, s AS t FROM query_table(probe) UNION ALL SELECT id, 1, pid, e FROM query_table(probe)),
found AS (SELECT * FROM busy_before(point, busy))  -- queries/macros/busy_before.sql
SELECT p.id, SUM(CASE WHEN p.side = 1 THEN 1 ELSE -1 END
                 * COALESCE(b.before_ns + LEAST(p.t, b.end_ns) - b.start_ns, 0)) AS busy_ns
FROM found AS p
LEFT JOIN query_table(busy) AS b ON b.idx = p.idx AND b.pid = p.pid
GROUP BY p.id;
