-- nsysql: macros.innermost_range_at v1
-- purpose: For each of a set of instants on a thread, the innermost range open on that thread at it: `innermost_range_at(point, ranges)` reads the table or CTE named `point` (columns id, tid, t) and the one named `ranges` (columns range_id, tid, start_ns, end_ns: properly nested ranges, as push/pop ranges of one thread are) and returns one row per point inside at least one range (id, range_id).
-- requires: none
-- params: none
-- notes: A range is open at t when start_ns <= t < end_ns; a zero-length range is open at no instant. One sweep per
--   thread: +1 at range starts, -1 at ends (ends first at equal times, a zero-length range's end after its start),
--   the points as queries; the innermost open range at a point is the latest range start before it at depth
--   (open ranges - 1), found by an ASOF join on (tid, depth). analysis.gaps and analysis.gaps_threads read it
--   (through macros.gap_context).
-- columns:
--   id | BIGINT | id (the point's)
--   range_id | BIGINT | id (the innermost range open at it)
CREATE OR REPLACE TEMP MACRO innermost_range_at(point, ranges) AS TABLE
WITH
sweep AS (  -- +1 at range starts, -1 at ends, and the points as queries (ends first at equal times)
    SELECT tid, start_ns AS ts, 1 AS kind, -end_ns AS tiebreak, range_id, NULL::BIGINT AS id, 1 AS delta
    FROM query_table(ranges) WHERE tid IN (SELECT tid FROM query_table(point))
    UNION ALL
    SELECT tid, end_ns, CASE WHEN end_ns = start_ns THEN 2 ELSE 0 END, -start_ns, range_id, NULL, -1
    FROM query_table(ranges) WHERE tid IN (SELECT tid FROM query_table(point))
    UNION ALL
    SELECT tid, t, 3, id, NULL, id, 0 FROM query_table(point)
),
ordered AS (
    SELECT *, ROW_NUMBER() OVER w AS seq,
           SUM(delta) OVER (w ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS open_after
    FROM sweep
    WINDOW w AS (PARTITION BY tid ORDER BY ts, kind, tiebreak, range_id)
),
range_start AS (
    SELECT range_id, tid, seq, open_after - 1 AS depth FROM ordered WHERE delta = 1
)
SELECT q.id, s.range_id  -- the innermost open range: the latest start at depth (open ranges - 1)
FROM (SELECT * FROM ordered WHERE kind = 3 AND open_after > 0) AS q
ASOF JOIN range_start AS s ON s.tid = q.tid AND s.depth = q.open_after - 1 AND s.seq < q.seq;
