-- nsysql: macros.busy_inside v1
-- purpose: Busy time of a process's GPUs inside each of a set of probe intervals: `busy_inside(probe, process_busy)` reads the table or CTE named `probe` (columns id, pid, s, e: one interval of process pid from s to e) and returns one row per probe id with busy_ns, the part of [s, e] covered by the busy intervals of analysis.process_busy (both passed by name: DuckDB binds a macro's tables when it is created).
-- requires: none
-- params: none
-- notes: busy_ns = B(e) - B(s), B(t) = the process's busy time up to t = before_ns of its last busy interval starting
--   at or before t, plus that interval's part up to t. One sweep over the probes' points and the process's busy
--   intervals in (pid, time) order finds that interval (the running maximum of idx). Only the intervals a point can
--   find are swept: those starting in a 2^24 ns (16.8 ms) time bucket that holds a point, and per such bucket the
--   last interval starting before it (the one before the first interval of the first later bucket that has any; idx
--   numbers a process's intervals consecutively). No ASOF join: DuckDB runs one as a nested loop when it expects
--   a small probe side, which a user's own connection (a `nsysql db` file) would not prevent.
--   A finding reads it as `FROM busy_inside(probe, process_busy)` after defining its own `probe` CTE; nsysql creates the macro
--   on every connection to an export (TEMP) and in `nsysql db` files.
-- columns:
--   id | BIGINT | id (the probe's)
--   busy_ns | HUGEINT | ns
CREATE OR REPLACE TEMP MACRO busy_inside(probe, busy) AS TABLE
WITH
point AS (  -- the probes' ends, each in its 2^24 ns (16.8 ms) time bucket
    SELECT pid, s AS t, s // 16777216 AS bucket FROM query_table(probe)
    UNION ALL SELECT pid, e, e // 16777216 FROM query_table(probe)
),
point_bucket AS (SELECT DISTINCT pid, bucket FROM point),
interval_bucket AS (  -- per process and bucket, the first busy interval starting in it
    SELECT b.pid, b.start_ns // 16777216 AS bucket, MIN(b.idx) AS first_idx
    FROM query_table(busy) AS b WHERE b.pid IN (SELECT pid FROM point_bucket)
    GROUP BY ALL
),
before_bucket AS (  -- per point bucket, the last busy interval starting before it: the one before the first interval
    -- of the first bucket at or after it that has any, else the process's last
    SELECT pid, bucket,
           COALESCE(after_idx - 1, (SELECT MAX(b.idx) FROM query_table(busy) AS b WHERE b.pid = x.pid)) AS idx
    FROM (SELECT pid, bucket, is_point,
                 MIN(first_idx) OVER (PARTITION BY pid ORDER BY bucket DESC, is_point
                                      ROWS UNBOUNDED PRECEDING) AS after_idx
          FROM (SELECT pid, bucket, first_idx, 1 AS is_point FROM interval_bucket
                UNION ALL SELECT pid, bucket, NULL, 2 FROM point_bucket)) AS x
    WHERE is_point = 2
),
swept AS MATERIALIZED (  -- the only busy intervals a point can find: those starting in a point's bucket, and the
    -- last one before each such bucket
    SELECT b.pid, b.start_ns, b.end_ns, b.before_ns, b.idx FROM query_table(busy) AS b SEMI JOIN point_bucket AS p
        ON p.pid = b.pid AND p.bucket = b.start_ns // 16777216
    UNION
    SELECT b.pid, b.start_ns, b.end_ns, b.before_ns, b.idx FROM query_table(busy) AS b SEMI JOIN before_bucket AS p
        ON p.pid = b.pid AND p.idx = b.idx
)
SELECT p.id, SUM(CASE WHEN p.side = 1 THEN 1 ELSE -1 END
                 * COALESCE(b.before_ns + LEAST(p.t, b.end_ns) - b.start_ns, 0)) AS busy_ns
FROM (SELECT *, MAX(idx) OVER (ORDER BY pid, t, kind) AS last_idx
      FROM (SELECT pid, start_ns AS t, 0 AS kind, idx, NULL::BIGINT AS id, NULL::INTEGER AS side FROM swept
            UNION ALL SELECT pid, s, 1, NULL, id, 0 FROM query_table(probe)
            UNION ALL SELECT pid, e, 1, NULL, id, 1 FROM query_table(probe))) AS p
LEFT JOIN swept AS b ON b.idx = p.last_idx AND b.pid = p.pid
WHERE p.kind = 1
GROUP BY p.id;
