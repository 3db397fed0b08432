-- nsysql: analysis._sanity_screen v2
-- purpose: analysis.sanity's counts, cheaper, for the common case of an export that has none of those rows: where every count here is 0, so is every count of analysis.sanity; nsysql/answers/sanity.py runs the exact query only when one is not (or this one cannot run).
-- requires: none
-- params: none
-- notes: negative as in analysis.sanity. repeated from a bitmap of the row ids (bitstring_agg over the ids'
--   range, from the table's statistics; 0 for a table without rows): 0.07 against 0.81 CPU s for COUNT(DISTINCT)
--   over 3.4M runtime ids on one thread. It fails (and the exact query runs) where the statistics are missing or
--   the range is too wide. duplicates counts distinct hashes of the identity instead of distinct identities:
--   never fewer duplicates than there are (equal rows hash alike), so 0 here is 0 there; a collision can only
--   make it count one too many, and then the exact query runs.
-- columns:
--   table_name | VARCHAR | text (normalized table; nsysql.store.store.SOURCES names its raw nsys table)
--   negative | BIGINT | count (rows ending before they start)
--   repeated | BIGINT | count (rows repeated by a join; string_ids_repeated: ids with different strings)
--   duplicates | BIGINT | count (identical rows; string_ids_repeated: rows repeating an id)
SELECT 'kernel' AS table_name, COUNT(*) FILTER (WHERE end_ns < start_ns) AS negative,
       COUNT(*) - COALESCE(bit_count(bitstring_agg(kernel_id)), 0) AS repeated,
       COUNT(*) - COUNT(DISTINCT hash(device_id, stream_id, start_ns, end_ns, correlation_id)) AS duplicates
FROM kernel
UNION ALL
SELECT 'runtime', COUNT(*) FILTER (WHERE end_ns < start_ns), COUNT(*) - COALESCE(bit_count(bitstring_agg(runtime_id)), 0),
       COUNT(*) - COUNT(DISTINCT hash(global_tid, start_ns, end_ns, correlation_id))
FROM runtime
UNION ALL
SELECT 'memcpy', COUNT(*) FILTER (WHERE end_ns < start_ns), COUNT(*) - COALESCE(bit_count(bitstring_agg(memcpy_id)), 0),
       COUNT(*) - COUNT(DISTINCT hash(device_id, stream_id, start_ns, end_ns, correlation_id))
FROM memcpy
UNION ALL
SELECT 'memset', COUNT(*) FILTER (WHERE end_ns < start_ns), COUNT(*) - COALESCE(bit_count(bitstring_agg(memset_id)), 0),
       COUNT(*) - COUNT(DISTINCT hash(device_id, stream_id, start_ns, end_ns, correlation_id))
FROM memset
UNION ALL
SELECT 'sync', COUNT(*) FILTER (WHERE end_ns < start_ns), 0, 0 FROM sync
UNION ALL
SELECT 'nvtx_range', COUNT(*) FILTER (WHERE end_ns < start_ns), COUNT(*) - COALESCE(bit_count(bitstring_agg(range_id)), 0), 0 FROM nvtx_range
UNION ALL
SELECT 'osrt', COUNT(*) FILTER (WHERE end_ns < start_ns), 0, 0 FROM osrt
UNION ALL
SELECT 'string_ids_repeated', 0, COUNT(*) FILTER (WHERE names > 1), CAST(COALESCE(SUM(copies - 1), 0) AS BIGINT)
FROM string_ids_repeated
ORDER BY table_name;
