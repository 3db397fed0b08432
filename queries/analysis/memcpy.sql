-- nsysql: analysis.memcpy v1
-- purpose: Memory copies per copy kind and source/destination memory kind (pageable vs pinned host memory), with memsets as their own kind: count, bytes, GPU time and achieved bandwidth.
-- requires: memcpy|memset
-- params: none
-- columns:
--   copy_kind | VARCHAR | text (Host-to-Device, Device-to-Host, ..., Memset)
--   src_kind | VARCHAR | text (Pageable, Pinned, Device, ...)
--   dst_kind | VARCHAR | text
--   count | BIGINT | count
--   total_bytes | BIGINT | bytes
--   total_ns | BIGINT | ns
--   avg_bytes | DOUBLE | bytes | 1
--   gb_per_s | DOUBLE | GB/s (10^9 bytes per second: total_bytes / total_ns) | 3
WITH ops AS (
    SELECT copy_kind, src_kind, dst_kind, bytes, end_ns - start_ns AS dur FROM memcpy
    UNION ALL
    SELECT 'Memset', '-', mem_kind, bytes, end_ns - start_ns FROM memset
)
SELECT copy_kind, src_kind, dst_kind, COUNT(*) AS count, SUM(bytes) AS total_bytes, SUM(dur) AS total_ns,
       AVG(bytes) AS avg_bytes, CASE WHEN SUM(dur) > 0 THEN SUM(bytes) / SUM(dur) END AS gb_per_s
FROM ops
GROUP BY ALL
ORDER BY total_ns DESC, copy_kind, src_kind, dst_kind;
