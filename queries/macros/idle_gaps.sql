-- nsysql: macros.idle_gaps v1
-- purpose: The idle gaps between consecutive busy intervals of each device: `idle_gaps(busy, min_gap_ns)` reads the table or CTE named `busy` (columns device_id, start_ns, end_ns: disjoint busy intervals, as gpu_busy) and returns one row per gap of at least min_gap_ns (device_id, gap_start_ns, gap_end_ns, gap_ns).
-- requires: none
-- params: none
-- notes: A gap lies between two consecutive busy intervals of a device, so the idle time before the first and after
--   the last one is not a gap. analysis.gaps and analysis.gaps_threads read it.
-- columns:
--   device_id | BIGINT | id
--   gap_start_ns | BIGINT | ns timestamp
--   gap_end_ns | BIGINT | ns timestamp
--   gap_ns | BIGINT | ns
CREATE OR REPLACE TEMP MACRO idle_gaps(busy, min_gap_ns) AS TABLE
SELECT device_id, prev_end_ns AS gap_start_ns, start_ns AS gap_end_ns, start_ns - prev_end_ns AS gap_ns
FROM (SELECT device_id, start_ns, LAG(end_ns) OVER (PARTITION BY device_id ORDER BY start_ns) AS prev_end_ns
      FROM query_table(busy))
WHERE prev_end_ns IS NOT NULL AND start_ns - prev_end_ns >= min_gap_ns;
