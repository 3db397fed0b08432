-- nsysql: normalize.nsys3.nvtx_range v3
-- purpose: NVTX push/pop and start/end ranges with NVIDIA's naming (`<domain>:<text>`), depth and parent on their thread (full paths: analysis.ranges).
-- requires: raw.NVTX_EVENTS, raw.StringIds
-- params: none
-- notes: An unterminated range (NULL end) ends at the last NVTX timestamp, as nsys stats does (is_open = true).
--   Nesting follows NVIDIA's tree: the parent is the innermost range on the same thread that encloses this one.
--   It is computed by one sweep over start/end events per thread (depth = ranges open at the start) and an
--   ASOF join on depth - 1, not by a range self-join, which is quadratic. Ranges that end on another thread
--   (endGlobalTid set) keep depth 0 and no parent, and nsys ignores them for GPU projection too.
-- columns:
--   range_id | BIGINT | id (row order of NVTX_EVENTS)
--   start_ns | BIGINT | ns
--   end_ns | BIGINT | ns
--   duration_ns | BIGINT | ns
--   is_open | BOOLEAN | flag (no end event in the capture)
--   global_tid | BIGINT | id
--   pid | BIGINT | id
--   tid | BIGINT | id
--   end_global_tid | BIGINT | id (set when the range ended on another thread)
--   range_name | VARCHAR | text (`<domain>:<text>`, as nsys stats prints it)
--   text | VARCHAR | text (without domain)
--   domain | VARCHAR | text ('' = default domain)
--   style | VARCHAR | PushPop or StartEnd
--   depth | BIGINT | count (0 = top level)
--   parent_id | BIGINT | id
--   is_op_marker | BOOLEAN | flag (a range PyTorch's emit_nvtx adds per op: `aten::mm, seq = 3, op_id = 7, sizes = ...`, `AddmmBackward0, seq = 3, ...`, `autograd::engine::evaluate_function: ...`, `Optimizer.step#...`)
CREATE TABLE nvtx_range AS
WITH
evt AS MATERIALIZED (
    SELECT n.rowid AS range_id, n.start, n."end", n.eventType, n.globalTid, n.endGlobalTid,
           n.domainId, COALESCE(s.value, n.text) AS body
    FROM raw.NVTX_EVENTS AS n
    LEFT JOIN raw.StringIds AS s ON s.id = n.textId
    WHERE n.eventType IN (59, 60, 70, 71, 75)
),
domains AS MATERIALIZED (
    -- a domain is created once per process; its name resolves ranges of any thread of that process
    SELECT domainId, (globalTid >> 24) & 16777215 AS pid, arg_min(body, start) AS domain
    FROM evt WHERE eventType = 75
    GROUP BY ALL
),
bounds AS (
    SELECT MAX(GREATEST(start, COALESCE("end", start))) AS last_ts FROM evt WHERE eventType <> 75
),
ranges AS MATERIALIZED (  -- integers only: the texts join in at the end, so the sweep never carries them
    SELECT e.range_id, e.start AS start_ns, COALESCE(e."end", b.last_ts) AS end_ns, e.globalTid AS global_tid,
           e.endGlobalTid AS end_global_tid
    FROM evt AS e CROSS JOIN bounds AS b
    WHERE e.eventType <> 75
),
sweep AS (
    -- +1 at each start, -1 at each end; at equal times ends come first, except a zero-length range's own end
    SELECT range_id, global_tid, start_ns AS ts, 1 AS kind, -end_ns AS tiebreak, 1 AS delta
    FROM ranges WHERE end_global_tid IS NULL
    UNION ALL
    SELECT range_id, global_tid, end_ns AS ts, CASE WHEN end_ns = start_ns THEN 2 ELSE 0 END AS kind,
           -start_ns AS tiebreak, -1 AS delta
    FROM ranges WHERE end_global_tid IS NULL
),
ordered AS (
    SELECT range_id, global_tid, delta,
           ROW_NUMBER() OVER w AS seq,
           CAST(SUM(delta) OVER (w ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) - 1 AS BIGINT) AS depth
    FROM sweep
    WINDOW w AS (PARTITION BY global_tid ORDER BY ts, kind, tiebreak, range_id)
),
starts AS MATERIALIZED (
    SELECT range_id, global_tid, seq, depth FROM ordered WHERE delta = 1
),
parented AS (
    SELECT c.range_id, c.depth, p.range_id AS parent_id
    FROM starts AS c
    ASOF LEFT JOIN starts AS p
      ON p.global_tid = c.global_tid AND p.depth = c.depth - 1 AND p.seq < c.seq
),
named AS (
    SELECT e.range_id, e."end" IS NULL AS is_open, COALESCE(e.body, '') AS text, COALESCE(d.domain, '') AS domain,
           CASE WHEN e.eventType IN (59, 70) THEN 'PushPop' ELSE 'StartEnd' END AS style
    FROM evt AS e
    LEFT JOIN domains AS d ON d.domainId = e.domainId AND d.pid = (e.globalTid >> 24) & 16777215
    WHERE e.eventType <> 75
)
SELECT r.range_id, r.start_ns, r.end_ns, r.end_ns - r.start_ns AS duration_ns, n.is_open,
       r.global_tid, (r.global_tid >> 24) & 16777215 AS pid, r.global_tid & 16777215 AS tid, r.end_global_tid,
       n.domain || ':' || n.text AS range_name, n.text, n.domain, n.style,
       COALESCE(pa.depth, 0) AS depth, pa.parent_id,
       (contains(n.text, ', op_id = ') OR contains(n.text, ', seq = ')
        OR starts_with(n.text, 'autograd::engine::evaluate_function: ')
        OR starts_with(n.text, 'Optimizer.step#') OR starts_with(n.text, 'Optimizer.zero_grad#')) AS is_op_marker
FROM ranges AS r
JOIN named AS n USING (range_id)
LEFT JOIN parented AS pa USING (range_id);  -- no ORDER BY: readers order what they show (a sort of every row saved)
