-- nsysql: analysis.sanity v3
-- purpose: Rows no profiler writes, per normalized table: events that end before they start, rows repeated by a join, duplicate rows; and StringIds ids on more than one row; all counts 0 for every export nsys writes.
-- requires: none
-- params: none
-- notes: negative = end_ns < start_ns. repeated = rows sharing their table's row id (a damaged page read twice,
--   or a join of the normalize SQL that multiplied them). duplicates = rows equal on their identity (same device
--   and stream, or thread, times and correlationId) but not repeated. A table the export lacks reads as its empty
--   stand-in (0 rows). The string_ids_repeated row counts the StringIds ids the export repeats (that normalized
--   table; the normalized tables read each id once, so a repeated id repeats no row): repeated = ids whose rows
--   hold different strings, duplicates = rows beyond the first of each id. nsysql.answers.sanity turns non-zero counts
--   into warning lines.
-- columns:
--   table_name | VARCHAR | text (normalized table; nsysql.store.store.SOURCES names its raw nsys table)
--   negative | BIGINT | count (rows ending before they start)
--   repeated | BIGINT | count (rows repeated by a join; string_ids_repeated: ids with different strings)
--   duplicates | BIGINT | count (identical rows; string_ids_repeated: rows repeating an id)
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
UNION ALL
SELECT 'string_ids_repeated', 0, COUNT(*) FILTER (WHERE names > 1), CAST(COALESCE(SUM(copies - 1), 0) AS BIGINT)
FROM string_ids_repeated
ORDER BY table_name;
