-- nsysql: macros.device_busy_in v1
-- purpose: Busy time of a device inside each of a set of spans: `device_busy_in(span, busy)` reads the table or CTE named `span` (columns id, device_id, s, e: an interval from s to e on device device_id) and the one named `busy` (columns device_id, start_ns, end_ns: disjoint busy intervals per device, as gpu_busy) and returns one row per span (id, device_id, busy_ns), busy_ns being the part of [s, e] the device was busy.
-- requires: none
-- params: none
-- notes: busy_ns = B(e) - B(s), B(t) = the device's busy time up to t: the busy time before its last busy interval
--   starting at or before t (a running sum over the device's intervals in time order) plus that interval's part up
--   to t, found by ASOF join (no self-join of spans and intervals). analysis.overhead_by_thread and
--   overhead_by_range read it; macros.busy_inside is the same for a process's busy intervals.
-- columns:
--   id | BIGINT | id (the span's)
--   device_id | BIGINT | id
--   busy_ns | HUGEINT | ns
CREATE OR REPLACE TEMP MACRO device_busy_in(span, busy) AS TABLE
WITH
busy_cum AS (  -- busy time of the device before each busy interval
    SELECT device_id, start_ns, end_ns,
           COALESCE(SUM(end_ns - start_ns) OVER (PARTITION BY device_id ORDER BY start_ns
                                                 ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS before_ns
    FROM query_table(busy)
),
busy_to_end AS (  -- busy time of the device up to the span's end ...
    SELECT w.*, COALESCE(b.before_ns + LEAST(w.e, b.end_ns) - b.start_ns, 0) AS busy_to_end_ns
    FROM query_table(span) AS w
    ASOF LEFT JOIN busy_cum AS b ON b.device_id = w.device_id AND b.start_ns <= w.e
)
SELECT w.id, w.device_id,  -- ... minus busy time up to its start
       w.busy_to_end_ns - COALESCE(b.before_ns + LEAST(w.s, b.end_ns) - b.start_ns, 0) AS busy_ns
FROM busy_to_end AS w
ASOF LEFT JOIN busy_cum AS b ON b.device_id = w.device_id AND b.start_ns <= w.s;
