-- nsysql: normalize.nsys3.runtime_nvtx v3
-- purpose: For each CUDA API call, the innermost NVTX range on the calling thread that encloses the whole call (range start <= call start and range end >= call end), as nsys's projection reports match them.
-- requires: runtime, nvtx_node
-- params: none
-- notes: How many ranges are open on the thread at the call's start (starts at or before it minus ends at or
--   before it: a running sum over the range starts and ends per thread, found by an ASOF join) gives the
--   innermost open range: the latest-starting one at depth open - 1 (nvtx_node's depth is that of the same
--   sweep, and no two ranges of a thread start at the same time and depth). Valid for properly nested
--   ranges (push/pop); a start/end range that overlaps without nesting may be missed.
-- columns:
--   runtime_id | BIGINT | id
--   range_id | BIGINT | id (innermost enclosing range; no row when the call is outside every range)
CREATE TABLE runtime_nvtx AS
WITH
nested AS (
    SELECT range_id, global_tid, start_ns, end_ns, depth FROM nvtx_node WHERE end_global_tid IS NULL
),
sweep AS (  -- range starts (+1), range ends (-1) and call starts (0) per thread
    SELECT global_tid, start_ns AS ts, 1 AS delta, NULL AS runtime_id, NULL AS end_ns FROM nested
    UNION ALL
    SELECT global_tid, end_ns, -1, NULL, NULL FROM nested
    UNION ALL
    SELECT global_tid, start_ns, 0, runtime_id, end_ns FROM runtime
    WHERE global_tid IN (SELECT DISTINCT global_tid FROM nested)
),
calls AS (  -- RANGE frame: a call sees every range start and end at its own timestamp as done
    SELECT runtime_id, global_tid, ts AS start_ns, end_ns,
           CAST(SUM(delta) OVER (PARTITION BY global_tid ORDER BY ts
                                 RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS BIGINT) AS open_ranges
    FROM sweep
    QUALIFY delta = 0 AND open_ranges > 0
)
SELECT c.runtime_id, s.range_id
FROM calls AS c
ASOF JOIN nested AS s
  ON s.global_tid = c.global_tid AND s.depth = c.open_ranges - 1 AND s.start_ns <= c.start_ns
WHERE s.end_ns >= c.end_ns;  -- no ORDER BY: readers order what they show (a sort of every row saved)
