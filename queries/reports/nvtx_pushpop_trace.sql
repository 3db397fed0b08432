-- nsysql: reports.nvtx_pushpop_trace v1
-- purpose: Every NVTX push/pop range with its nesting (level, parent, children, stack of range ids), identical to `nsys stats -r nvtx_pushpop_trace` (Nsight Systems 2025.3).
-- requires: nvtx_range
-- params: none
-- notes: Only push/pop ranges count (start/end ranges are left out of the nesting too). A range's parent is the
--   shortest other push/pop range of the same thread that contains it, bounds included (NVIDIA's "tightest" parent);
--   an unterminated range ends at the last push/pop timestamp.
--   DurChild sums the durations of the direct children; RangeStack is `:<root id>:...:<own id>`; NameTree
--   prefixes the name with `--` per level. Rows are in start order, shorter first on equal starts.
--   Parents come from one sweep over the start and end events of each thread (the push/pop stack), not from a
--   range self-join, which is quadratic. It equals NVIDIA's containment rule except where ranges of a thread
--   share timestamps in ways a push/pop stack rarely records: two identical ranges nest here (NVIDIA drops
--   both), and a zero-length range at the instant one range ends and another begins goes in the later one.
-- optional: "NameTree", "RangeStack", "ParentId", "RangeId", "NumChild", "Lvl", ("PID", "TID"), ("DurChild (ns)", "DurNonChild (ns)"), "End (ns)"
-- columns:
--   Start (ns) | BIGINT | ns timestamp
--   End (ns) | BIGINT | ns timestamp
--   Duration (ns) | BIGINT | ns
--   DurChild (ns) | BIGINT | ns (sum of the direct children's durations)
--   DurNonChild (ns) | BIGINT | ns (duration minus DurChild)
--   Name | VARCHAR | text (`<domain>:<text>`)
--   PID | BIGINT | id
--   TID | BIGINT | id
--   Lvl | BIGINT | depth (0 = top level)
--   NumChild | BIGINT | count (direct children)
--   RangeId | BIGINT | id (row of NVTX_EVENTS)
--   ParentId | BIGINT | id (empty at top level)
--   RangeStack | VARCHAR | text (`:id:id...` from the root down to this range)
--   NameTree | VARCHAR | text (name prefixed with `--` per level)
WITH RECURSIVE
pushpop AS (
    SELECT range_id, start_ns, end_ns, is_open, global_tid, pid, tid, range_name
    FROM nvtx_range
    WHERE style = 'PushPop'
),
last_ts AS (
    SELECT GREATEST(MAX(start_ns), MAX(end_ns) FILTER (WHERE NOT is_open)) AS ts FROM pushpop
),
ranges AS MATERIALIZED (
    SELECT p.range_id, p.start_ns, p.stop_ns, p.stop_ns - p.start_ns AS dur, p.global_tid, p.pid, p.tid, p.range_name
    FROM (SELECT pushpop.*, CASE WHEN is_open THEN l.ts ELSE end_ns END AS stop_ns
          FROM pushpop CROSS JOIN last_ts AS l) AS p
),
sweep AS (
    -- +1 at each start, -1 at each end; at equal times ends come first, then starts (longer first), then the
    -- ends of zero-length ranges, so a range lies inside every range of its thread that contains it
    SELECT range_id, global_tid, start_ns AS ts, 1 AS kind, -stop_ns AS tiebreak, 1 AS delta FROM ranges
    UNION ALL
    SELECT range_id, global_tid, stop_ns, CASE WHEN stop_ns = start_ns THEN 2 ELSE 0 END, -start_ns, -1 FROM ranges
),
ordered AS (
    SELECT range_id, global_tid, delta, ROW_NUMBER() OVER w AS seq,
           SUM(delta) OVER (w ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) - 1 AS depth
    FROM sweep
    WINDOW w AS (PARTITION BY global_tid ORDER BY ts, kind, tiebreak, range_id)
),
starts AS MATERIALIZED (
    SELECT range_id, global_tid, seq, depth FROM ordered WHERE delta = 1
),
parent AS (
    SELECT c.range_id, p.range_id AS parent_id
    FROM starts AS c
    ASOF JOIN starts AS p
      ON p.global_tid = c.global_tid AND p.depth = c.depth - 1 AND p.seq < c.seq
),
node AS MATERIALIZED (
    SELECT r.*, pa.parent_id FROM ranges AS r LEFT JOIN parent AS pa USING (range_id)
),
children AS (
    SELECT parent_id AS range_id, SUM(dur) AS child_ns, COUNT(*) AS n_child
    FROM node WHERE parent_id IS NOT NULL
    GROUP BY parent_id
),
tree(range_id, lvl, stack, tab) AS (
    SELECT range_id, 0, ':' || range_id, '' FROM node WHERE parent_id IS NULL
    UNION ALL
    SELECT n.range_id, t.lvl + 1, t.stack || ':' || n.range_id, t.tab || '--'
    FROM tree AS t JOIN node AS n ON n.parent_id = t.range_id
)
SELECT n.start_ns AS "Start (ns)",
       n.stop_ns AS "End (ns)",
       n.dur AS "Duration (ns)",
       CAST(COALESCE(c.child_ns, 0) AS BIGINT) AS "DurChild (ns)",
       CAST(n.dur - COALESCE(c.child_ns, 0) AS BIGINT) AS "DurNonChild (ns)",
       n.range_name AS "Name",
       n.pid AS "PID",
       n.tid AS "TID",
       CAST(t.lvl AS BIGINT) AS "Lvl",
       COALESCE(c.n_child, 0) AS "NumChild",
       n.range_id AS "RangeId",
       n.parent_id AS "ParentId",
       t.stack AS "RangeStack",
       t.tab || n.range_name AS "NameTree"
FROM node AS n
JOIN tree AS t USING (range_id)
LEFT JOIN children AS c USING (range_id)
ORDER BY "Start (ns)", "Duration (ns)", "RangeId";
