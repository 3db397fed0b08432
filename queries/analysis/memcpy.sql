-- nsysql: analysis.memcpy v2
-- purpose: Memory copies per copy kind and source/destination memory kind (pageable vs pinned host memory), with memsets as their own kind: count, bytes, GPU time, achieved bandwidth, and how many were synchronous.
-- requires: memcpy|memset, macros.host_memory, macros.copy_is_sync
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
ops AS (
    SELECT m.copy_kind, m.src_kind, m.dst_kind, m.bytes, m.end_ns, m.end_ns - m.start_ns AS dur,
           rt.api_name, rt.end_ns AS api_end_ns, rt.end_ns - rt.start_ns AS api_ns
    FROM memcpy AS m
    LEFT JOIN runtime AS rt ON rt.correlation_id = m.correlation_id AND rt.pid = m.pid
    UNION ALL
    SELECT 'Memset', '-', s.mem_kind, s.bytes, s.end_ns, s.end_ns - s.start_ns, rt.api_name, rt.end_ns,
           rt.end_ns - rt.start_ns
    FROM memset AS s
    LEFT JOIN runtime AS rt ON rt.correlation_id = s.correlation_id AND rt.pid = s.pid
),
classified AS (
    SELECT *,
           host_memory(src_kind, dst_kind) AS host_memory,  -- queries/macros/host_memory.sql
           copy_is_sync(api_name, api_end_ns, end_ns) AS is_sync  -- queries/macros/copy_is_sync.sql
    FROM ops
)
SELECT copy_kind, src_kind, dst_kind, host_memory, COUNT(*) AS count, SUM(bytes) AS total_bytes,
       SUM(dur) AS total_ns, AVG(bytes) AS avg_bytes, CASE WHEN SUM(dur) > 0 THEN SUM(bytes) / SUM(dur) END AS gb_per_s,
       COUNT(*) FILTER (WHERE is_sync) AS sync_count,
       CAST(COALESCE(SUM(api_ns) FILTER (WHERE is_sync), 0) AS BIGINT) AS sync_api_ns
FROM classified
GROUP BY copy_kind, src_kind, dst_kind, host_memory
ORDER BY total_ns DESC, copy_kind, src_kind, dst_kind;
