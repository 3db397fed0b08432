-- nsysql: normalize.nsys3.runtime_nvtx v2
-- purpose: For each CUDA API call, the innermost NVTX range on the calling thread that encloses the whole call (range start <= call start and range end >= call end), as nsys's projection reports match them.
-- requires: runtime, nvtx_range
-- params: none
-- notes: One sweep per thread over range starts/ends and call starts gives how many ranges are open at the call;
--   the innermost is the latest-starting open range at depth open - 1 (ASOF join). Valid for properly nested
--   ranges (push/pop); a start/end range that overlaps without nesting may be missed.
-- columns:
--   runtime_id | BIGINT | id
--   range_id | BIGINT | id (innermost enclosing range; no row when the call is outside every range)
CREATE TABLE runtime_nvtx AS
WITH
nested AS (
    SELECT range_id, global_tid, start_ns, end_ns, depth FROM nvtx_range WHERE end_global_tid IS NULL
),
sweep AS (
    SELECT global_tid, start_ns AS ts, 1 AS kind, -end_ns AS tiebreak, range_id AS id, 1 AS delta FROM nested
    UNION ALL
    SELECT global_tid, end_ns, CASE WHEN end_ns = start_ns THEN 2 ELSE 0 END, -start_ns, range_id, -1 FROM nested
    UNION ALL
    SELECT global_tid, start_ns, 3, 0, runtime_id, 0 FROM runtime
    WHERE global_tid IN (SELECT DISTINCT global_tid FROM nested)
),
ordered AS (
    SELECT id, global_tid, delta, kind,
           ROW_NUMBER() OVER w AS seq,
           SUM(delta) OVER (w ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS open_after
    FROM sweep
    WINDOW w AS (PARTITION BY global_tid ORDER BY ts, kind, tiebreak, id)
),
range_starts AS (
    SELECT o.id AS range_id, o.global_tid, o.seq, o.open_after - 1 AS depth FROM ordered AS o WHERE o.delta = 1
),
calls AS (
    SELECT o.id AS runtime_id, o.global_tid, o.seq, o.open_after AS open_ranges
    FROM ordered AS o WHERE o.kind = 3 AND o.open_after > 0
)
SELECT c.runtime_id, s.range_id
FROM calls AS c
ASOF JOIN range_starts AS s
  ON s.global_tid = c.global_tid AND s.depth = c.open_ranges - 1 AND s.seq < c.seq
JOIN runtime AS rt ON rt.runtime_id = c.runtime_id
JOIN nvtx_range AS r ON r.range_id = s.range_id
WHERE r.end_ns >= rt.end_ns;  -- no ORDER BY: readers order what they show (a sort of every row saved)
