-- nsysql: analysis.sanity v1
-- purpose: Rows no profiler writes, per normalized table: events that end before they start, rows repeated by a join on a StringIds table with duplicate ids, duplicate rows; all counts 0 for every export nsys writes.
-- requires: none
-- params: none
-- notes: negative = end_ns < start_ns. repeated = rows sharing their table's row id (the normalize join on
--   StringIds multiplied them). duplicates = rows equal on their identity (same device and stream, or thread,
--   times and correlationId) but not repeated by the join. A table the export lacks reads as its empty stand-in
--   (0 rows). nsysql.sanity turns non-zero counts into warning lines.
-- columns:
--   table_name | VARCHAR | text (normalized table; nsysql.export.SOURCES names its raw nsys table)
--   negative | BIGINT | count (rows ending before they start)
--   repeated | BIGINT | count (rows repeated by the join on StringIds)
--   duplicates | BIGINT | count (identical rows)
SELECT 'kernel' AS table_name, COUNT(*) FILTER (WHERE end_ns < start_ns) AS negative,
       COUNT(*) - COUNT(DISTINCT kernel_id) AS repeated,
       COUNT(*) - COUNT(DISTINCT (device_id, stream_id, start_ns, end_ns, correlation_id)) AS duplicates
FROM kernel
UNION ALL
SELECT 'runtime', COUNT(*) FILTER (WHERE end_ns < start_ns), COUNT(*) - COUNT(DISTINCT runtime_id),
       COUNT(*) - COUNT(DISTINCT (global_tid, start_ns, end_ns, correlation_id))
FROM runtime
UNION ALL
SELECT 'memcpy', COUNT(*) FILTER (WHERE end_ns < start_ns), COUNT(*) - COUNT(DISTINCT memcpy_id),
       COUNT(*) - COUNT(DISTINCT (device_id, stream_id, start_ns, end_ns, correlation_id))
FROM memcpy
UNION ALL
SELECT 'memset', COUNT(*) FILTER (WHERE end_ns < start_ns), COUNT(*) - COUNT(DISTINCT memset_id),
       COUNT(*) - COUNT(DISTINCT (device_id, stream_id, start_ns, end_ns, correlation_id))
FROM memset
UNION ALL
SELECT 'sync', COUNT(*) FILTER (WHERE end_ns < start_ns), 0, 0 FROM sync
UNION ALL
SELECT 'nvtx_range', COUNT(*) FILTER (WHERE end_ns < start_ns), COUNT(*) - COUNT(DISTINCT range_id), 0 FROM nvtx_range
UNION ALL
SELECT 'osrt', COUNT(*) FILTER (WHERE end_ns < start_ns), 0, 0 FROM osrt
ORDER BY table_name;
