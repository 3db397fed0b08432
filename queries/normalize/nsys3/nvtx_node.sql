-- nsysql: normalize.nsys3.nvtx_node v1
-- purpose: NVTX ranges as integers (times, thread, depth, parent, name id): what the build's NVTX statements read (runtime_nvtx, nvtx_ancestor, nvtx_context); nvtx_range adds the names from nvtx_name.
-- requires: raw.NVTX_EVENTS, raw.StringIds, nvtx_name
-- params: none
-- storage-of: nvtx_range (a copy of the Parquet dataset leaves this table out: those hold its rows)
-- notes: An unterminated range (NULL end) ends at the last NVTX timestamp, as nsys stats does (is_open = true).
--   Nesting follows NVIDIA's tree: the parent is the innermost range on the same thread that encloses this one.
--   It is computed by one sweep over start/end events per thread (depth = ranges open at the start) and an
--   ASOF join on depth - 1, not by a range self-join, which is quadratic. Ranges that end on another thread
--   (endGlobalTid set) keep depth 0 and no parent, and nsys ignores them for GPU projection too.
--   No texts: the sweep and the statements that read this table never carry strings.
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
--   name_id | BIGINT | id (nvtx_name)
--   depth | BIGINT | count (0 = top level)
--   parent_id | BIGINT | id
CREATE TABLE nvtx_node AS
WITH
evt AS MATERIALIZED (
    SELECT n.rowid AS range_id, n.start, n."end", n.eventType, n.globalTid, n.endGlobalTid, n.domainId,
           COALESCE(s.value, n.text, '') AS text
    FROM raw.NVTX_EVENTS AS n
    LEFT JOIN raw.StringIds AS s ON s.id = n.textId
    WHERE n.eventType IN (59, 60, 70, 71)
),
bounds AS (
    SELECT MAX(GREATEST(start, COALESCE("end", start))) AS last_ts FROM evt
),
ranges AS MATERIALIZED (  -- integers only: the sweep never carries texts
    SELECT e.range_id, e.start AS start_ns, COALESCE(e."end", b.last_ts) AS end_ns, e."end" IS NULL AS is_open,
           e.globalTid AS global_tid, e.endGlobalTid AS end_global_tid, nm.name_id
    FROM evt AS e CROSS JOIN bounds AS b
    JOIN nvtx_name AS nm
      ON nm.text = e.text AND nm.push_pop = (e.eventType IN (59, 70))
     AND nm.pid IS NOT DISTINCT FROM (e.globalTid >> 24) & 16777215 AND nm.domain_key IS NOT DISTINCT FROM e.domainId
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
)
SELECT r.range_id, r.start_ns, r.end_ns, r.end_ns - r.start_ns AS duration_ns, r.is_open,
       r.global_tid, (r.global_tid >> 24) & 16777215 AS pid, r.global_tid & 16777215 AS tid, r.end_global_tid,
       r.name_id, COALESCE(pa.depth, 0) AS depth, pa.parent_id
FROM ranges AS r
LEFT JOIN parented AS pa USING (range_id);  -- no ORDER BY: readers order what they show (a sort of every row saved)
