-- nsysql: macros.copy_stats v1
-- purpose: The statistics of a group of copies and sets, as one aggregate: `UNNEST(copy_stats(bytes, dur_ns, is_sync, api_ns))` in a grouped SELECT gives the columns count, total_bytes, total_ns, avg_bytes, gb_per_s, sync_count and sync_api_ns.
-- requires: none
-- params: none
-- notes: A scalar macro over aggregates, inlined where it is called: gb_per_s = total_bytes / total_ns (10^9 bytes
--   per second; NULL when total_ns is 0); sync_api_ns sums the launching calls of the synchronous ops.
--   analysis.memcpy, memcpy_by_stream and memcpy_by_range read it, over macros.copy_ops' rows.
-- columns:
--   copy_stats | STRUCT | struct (count BIGINT, total_bytes HUGEINT, total_ns HUGEINT, avg_bytes DOUBLE, gb_per_s DOUBLE, sync_count BIGINT, sync_api_ns BIGINT)
CREATE OR REPLACE TEMP MACRO copy_stats(bytes, dur_ns, is_sync, api_ns) AS {
    count: COUNT(*), total_bytes: SUM(bytes), total_ns: SUM(dur_ns), avg_bytes: AVG(bytes),
    gb_per_s: CASE WHEN SUM(dur_ns) > 0 THEN SUM(bytes) / SUM(dur_ns) END,
    sync_count: COUNT(*) FILTER (WHERE is_sync),
    sync_api_ns: CAST(COALESCE(SUM(api_ns) FILTER (WHERE is_sync), 0) AS BIGINT)};
