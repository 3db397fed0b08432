-- nsysql: macros.busy_inside v1
-- purpose: Busy time of a process's GPUs inside each of a set of probe intervals: `busy_inside(probe, process_busy)` reads the table or CTE named `probe` (columns id, pid, s, e: one interval of process pid from s to e) and returns one row per probe id with busy_ns, the part of [s, e] covered by the busy intervals of analysis.process_busy (both passed by name: DuckDB binds a macro's tables when it is created).
-- requires: none
-- params: none
-- notes: busy_ns = B(e) - B(s), B(t) = the process's busy time up to t = before_ns of its last busy interval starting
--   at or before t, plus that interval's part up to t. One sweep over the probes' points and the process's busy
--   intervals in (pid, time) order finds that interval (the running maximum of idx); only the intervals between a
--   process's first probe and its last are swept. No ASOF join: DuckDB runs one as a nested loop when it expects
--   a small probe side, which a user's own connection (a `nsysql db` file) would not prevent.
--   A finding reads it as `FROM busy_inside(probe, process_busy)` after defining its own `probe` CTE; nsysql creates the macro
--   on every connection to an export (TEMP) and in `nsysql db` files.
-- columns:
--   id | BIGINT | id (the probe's)
--   busy_ns | HUGEINT | ns
CREATE OR REPLACE TEMP MACRO busy_inside(probe, busy) AS TABLE
WITH
probe_span AS (  -- per process, the probes' time span: the busy intervals the sweep needs
    SELECT p.pid, MIN(p.s) AS lo, MAX(p.e) AS hi,
           (SELECT MAX(b.idx) FROM query_table(busy) AS b WHERE b.pid = p.pid AND b.start_ns <= MIN(p.s)) AS first_idx
    FROM query_table(probe) AS p GROUP BY p.pid
)
SELECT p.id, SUM(CASE WHEN p.side = 1 THEN 1 ELSE -1 END
                 * COALESCE(b.before_ns + LEAST(p.t, b.end_ns) - b.start_ns, 0)) AS busy_ns
FROM (SELECT *, MAX(idx) OVER (ORDER BY pid, t, kind) AS last_idx
      FROM (SELECT b.pid, b.start_ns AS t, 0 AS kind, b.idx, NULL::BIGINT AS id, NULL::INTEGER AS side
            FROM query_table(busy) AS b JOIN probe_span AS x ON x.pid = b.pid
            WHERE b.idx >= COALESCE(x.first_idx, 0) AND b.start_ns <= x.hi
            UNION ALL SELECT pid, s, 1, NULL, id, 0 FROM query_table(probe)
            UNION ALL SELECT pid, e, 1, NULL, id, 1 FROM query_table(probe))) AS p
LEFT JOIN query_table(busy) AS b ON b.idx = p.last_idx AND b.pid = p.pid
WHERE p.kind = 1
GROUP BY p.id;
