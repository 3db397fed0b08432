-- nsysql: analysis.memcpy_by_stream v1
-- purpose: Memory copies and memsets per GPU, stream and copy kind: count, bytes, GPU time, achieved bandwidth, pageable vs pinned host memory, synchronous copies.
-- requires: memcpy|memset, macros.host_memory, macros.copy_is_sync
-- params: none
-- notes: host_memory, synchronous and gb_per_s as in analysis.memcpy: host_memory is Pageable when either side is
--   pageable, else Pinned when either is pinned; synchronous = the launching CUDA call (correlationId AND process)
--   is a blocking variant (name starting cudaMemcpy/cudaMemset/cuMemcpy/cuMemset without `Async`) or returned at
--   or after the op ended. Ops on a stream with no compute kernels, or on the legacy default stream, are where
--   copies serialize with everything else.
-- columns:
--   device_id | BIGINT | id
--   stream_id | BIGINT | id
--   copy_kind | VARCHAR | text (Host-to-Device, Device-to-Host, ..., Memset)
--   src_kind | VARCHAR | text (Pageable, Pinned, Device, ...; '-' for memsets)
--   dst_kind | VARCHAR | text
--   host_memory | VARCHAR | text (Pageable, Pinned or NULL)
--   count | BIGINT | count
--   total_bytes | BIGINT | bytes
--   total_ns | BIGINT | ns (sum of GPU durations)
--   avg_bytes | DOUBLE | bytes | 1
--   gb_per_s | DOUBLE | GB/s (10^9 bytes per second: total_bytes / total_ns) | 3
--   sync_count | BIGINT | count (synchronous)
--   sync_api_ns | BIGINT | ns (duration of their launching calls)
WITH
ops AS (
    SELECT m.device_id, m.stream_id, m.copy_kind, m.src_kind, m.dst_kind, m.bytes, m.end_ns,
           m.end_ns - m.start_ns AS dur, rt.api_name, rt.end_ns AS api_end_ns, rt.end_ns - rt.start_ns AS api_ns
    FROM memcpy AS m
    LEFT JOIN runtime AS rt ON rt.correlation_id = m.correlation_id AND rt.pid = m.pid
    UNION ALL
    SELECT s.device_id, s.stream_id, 'Memset', '-', s.mem_kind, s.bytes, s.end_ns, s.end_ns - s.start_ns,
           rt.api_name, rt.end_ns, rt.end_ns - rt.start_ns
    FROM memset AS s
    LEFT JOIN runtime AS rt ON rt.correlation_id = s.correlation_id AND rt.pid = s.pid
),
classified AS (
    SELECT *,
           host_memory(src_kind, dst_kind) AS host_memory,  -- queries/macros/host_memory.sql
           copy_is_sync(api_name, api_end_ns, end_ns) AS is_sync  -- queries/macros/copy_is_sync.sql
    FROM ops
)
SELECT device_id, stream_id, copy_kind, src_kind, dst_kind, host_memory, COUNT(*) AS count,
       SUM(bytes) AS total_bytes, SUM(dur) AS total_ns, AVG(bytes) AS avg_bytes,
       CASE WHEN SUM(dur) > 0 THEN SUM(bytes) / SUM(dur) END AS gb_per_s,
       COUNT(*) FILTER (WHERE is_sync) AS sync_count,
       CAST(COALESCE(SUM(api_ns) FILTER (WHERE is_sync), 0) AS BIGINT) AS sync_api_ns
FROM classified
GROUP BY device_id, stream_id, copy_kind, src_kind, dst_kind, host_memory
ORDER BY device_id, stream_id, total_ns DESC, copy_kind, src_kind, dst_kind;
