-- nsysql: macros.busy_before v1
-- purpose: For each of a set of time points, the last busy interval of its process starting at or before it: `busy_before(point, process_busy)` reads the table or CTE named `point` (columns id, side, pid, t) and returns one row per point (id, side, pid, t, idx), idx being that interval's in analysis._process_busy (NULL when the process has none that early; an idx of another process counts as none).
-- requires: none
-- params: none
-- notes: One sweep over the points and the process's busy intervals in (pid, time) order, intervals first at equal
--   times; the running maximum of idx is the interval (idx numbers a process's intervals consecutively in time
--   order). Only the intervals a point can find are swept: those starting in a 2^24 ns (16.8 ms) time bucket that
--   holds a point, and per such bucket the last interval starting before it (the one before the first interval of
--   the first later bucket that has any, else the process's last). No ASOF join: DuckDB runs one as a nested loop
--   when it expects a small probe side, which a user's own connection (a `nsysql db` file) would not prevent.
--   macros.busy_inside and findings.sync_in_step read it.
-- columns:
--   id | BIGINT | id (the point's)
--   side | INTEGER | index (the point's)
--   pid | BIGINT | id
--   t | BIGINT | ns timestamp
--   idx | BIGINT | index (analysis._process_busy.idx)
CREATE OR REPLACE TEMP MACRO busy_before(point, busy) AS TABLE
WITH
point_bucket AS (SELECT DISTINCT pid, t // 16777216 AS bucket FROM query_table(point)),
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
swept AS (  -- the only busy intervals a point can find
    SELECT b.pid, b.start_ns, b.idx FROM query_table(busy) AS b SEMI JOIN point_bucket AS p
        ON p.pid = b.pid AND p.bucket = b.start_ns // 16777216
    UNION
    SELECT b.pid, b.start_ns, b.idx FROM query_table(busy) AS b SEMI JOIN before_bucket AS p
        ON p.pid = b.pid AND p.idx = b.idx
)
SELECT id, side, pid, t, last_idx AS idx
FROM (SELECT *, MAX(idx) OVER (ORDER BY pid, t, kind) AS last_idx
      FROM (SELECT pid, start_ns AS t, 0 AS kind, idx, NULL::BIGINT AS id, NULL::INTEGER AS side FROM swept
            UNION ALL SELECT pid, t, 1, NULL, id, side FROM query_table(point)))
WHERE kind = 1;
