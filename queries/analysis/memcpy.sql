-- nsysql: analysis.memcpy v2
-- purpose: Memory copies per copy kind and source/destination memory kind (pageable vs pinned host memory), with memsets as their own kind: count, bytes, GPU time, achieved bandwidth, and how many were synchronous.
-- requires: memcpy|memset, macros.copy_ops, macros.copy_stats
-- params: none
-- notes: Copy and memory kinds are NVIDIA's labels (ENUM_CUDA_MEMCPY_OPER, ENUM_CUDA_MEM_KIND), as nsys stats's
--   cuda_gpu_mem_time_sum / cuda_gpu_mem_size_sum print them; per copy kind, count, total_ns and total_bytes
--   equal those reports' Count, Total Time and Total size.
--   host_memory: the host side's memory kind, Pageable when either side is pageable, else Pinned when either is
--   pinned, else NULL (device-only copies and memsets of device memory). Pageable copies are staged by the
--   driver and cannot overlap with compute.
--   Synchronous: the launching CUDA call (matched on correlationId AND process) blocked the thread: it is a
--   blocking variant (name starting cudaMemcpy/cudaMemset/cuMemcpy/cuMemset without `Async`), or it returned
--   only at or after the copy ended (e.g. cudaMemcpyAsync from pageable memory). Ops without a launching call
--   in the export are not counted as synchronous. sync_api_ns sums those calls' durations: host time blocked.
--   gb_per_s = total_bytes / total_ns (10^9 bytes per second of GPU time).
-- columns:
--   copy_kind | VARCHAR | text (Host-to-Device, Device-to-Host, ..., Memset)
--   src_kind | VARCHAR | text (Pageable, Pinned, Device, ...; '-' for memsets)
--   dst_kind | VARCHAR | text
--   host_memory | VARCHAR | text (Pageable, Pinned or NULL)
--   count | BIGINT | count
--   total_bytes | BIGINT | bytes
--   total_ns | BIGINT | ns (sum of GPU durations)
--   avg_bytes | DOUBLE | bytes | 1
--   gb_per_s | DOUBLE | GB/s (10^9 bytes per second: total_bytes / total_ns) | 3
--   sync_count | BIGINT | count (synchronous, see notes)
--   sync_api_ns | BIGINT | ns (duration of their launching calls)
WITH
grouped AS (
    SELECT copy_kind, src_kind, dst_kind, host_memory,
           UNNEST(copy_stats(bytes, dur_ns, is_sync, api_ns))  -- queries/macros/copy_stats.sql
    FROM copy_ops(memcpy, memset, runtime)  -- queries/macros/copy_ops.sql
    GROUP BY copy_kind, src_kind, dst_kind, host_memory
)
SELECT copy_kind, src_kind, dst_kind, host_memory, count, total_bytes, total_ns, avg_bytes, gb_per_s, sync_count,
       sync_api_ns
FROM grouped
ORDER BY total_ns DESC, copy_kind, src_kind, dst_kind;
