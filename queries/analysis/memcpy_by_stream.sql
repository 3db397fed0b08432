-- nsysql: analysis.memcpy_by_stream v1
-- purpose: Memory copies and memsets per GPU, stream and copy kind: count, bytes, GPU time, achieved bandwidth, pageable vs pinned host memory, synchronous copies.
-- requires: memcpy|memset, macros.copy_ops, macros.copy_stats
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
grouped AS (
    SELECT device_id, stream_id, copy_kind, src_kind, dst_kind, host_memory,
           UNNEST(copy_stats(bytes, dur_ns, is_sync, api_ns))  -- queries/macros/copy_stats.sql
    FROM copy_ops(memcpy, memset, runtime)  -- queries/macros/copy_ops.sql
    GROUP BY device_id, stream_id, copy_kind, src_kind, dst_kind, host_memory
)
SELECT device_id, stream_id, copy_kind, src_kind, dst_kind, host_memory, count, total_bytes, total_ns, avg_bytes,
       gb_per_s, sync_count, sync_api_ns
FROM grouped
ORDER BY device_id, stream_id, total_ns DESC, copy_kind, src_kind, dst_kind;
