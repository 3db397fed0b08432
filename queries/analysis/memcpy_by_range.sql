-- nsysql: analysis.memcpy_by_range v1
-- purpose: Memory copies and memsets per user NVTX range (innermost user range of the launching call, PyTorch op-marker ranges rolled up into it) and copy kind: count, bytes, GPU time, achieved bandwidth, pageable vs pinned host memory, synchronous copies.
-- requires: memcpy|memset, runtime, nvtx_range, macros.copy_ops, macros.copy_stats
-- params: none
-- notes: Each op counts once, under the innermost user range (not nvtx_range.is_op_marker) open on its thread around
--   the CUDA call that launched it (correlationId AND process; runtime_nvtx, then up the nesting tree skipping op
--   markers), so the rows add up to analysis.memcpy. range_path = texts of the user ranges from the top down joined
--   by '/' (instances of one path summed); '(outside user ranges)' when there is none, or no launching call.
--   host_memory, synchronous and gb_per_s as in analysis.memcpy: host_memory is Pageable when either side is
--   pageable, else Pinned when either is pinned; synchronous = the launching call is a blocking variant (name
--   starting cudaMemcpy/cudaMemset/cuMemcpy/cuMemset without `Async`) or returned at or after the op ended.
-- columns:
--   range_path | VARCHAR | text (user range texts, top down, '/'-joined; '(outside user ranges)')
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
ops AS MATERIALIZED (  -- queries/macros/copy_ops.sql
    SELECT copy_kind, src_kind, dst_kind, host_memory, bytes, start_ns, dur_ns, runtime_id, api_ns, is_sync
    FROM copy_ops(memcpy, memset, runtime)
),
innermost AS (
    SELECT o.*, rn.range_id AS innermost_id FROM ops AS o LEFT JOIN runtime_nvtx AS rn USING (runtime_id)
),
nearest_user AS (  -- nearest user range enclosing each innermost range (itself included)
    SELECT a.range_id AS innermost_id, arg_min(a.ancestor_id, a.distance) AS range_id
    FROM nvtx_ancestor AS a
    JOIN nvtx_range AS r ON r.range_id = a.ancestor_id
    WHERE NOT r.is_op_marker AND a.range_id IN (SELECT innermost_id FROM innermost)
    GROUP BY a.range_id
),
path AS (
    SELECT a.range_id, string_agg(r.text, '/' ORDER BY a.distance DESC) AS range_path
    FROM nvtx_ancestor AS a
    JOIN nvtx_range AS r ON r.range_id = a.ancestor_id
    WHERE NOT r.is_op_marker AND a.range_id IN (SELECT range_id FROM nearest_user)
    GROUP BY a.range_id
),
classified AS (
    SELECT COALESCE(p.range_path, '(outside user ranges)') AS range_path, i.copy_kind, i.src_kind, i.dst_kind,
           i.host_memory, i.bytes, i.start_ns, i.dur_ns, i.api_ns, i.is_sync
    FROM innermost AS i
    LEFT JOIN nearest_user AS u USING (innermost_id)
    LEFT JOIN path AS p ON p.range_id = u.range_id
),
grouped AS (
    SELECT range_path, copy_kind, src_kind, dst_kind, host_memory,
           UNNEST(copy_stats(bytes, dur_ns, is_sync, api_ns)),  -- queries/macros/copy_stats.sql
           MIN(MIN(start_ns)) OVER (PARTITION BY range_path) AS path_first_ns
    FROM classified
    GROUP BY range_path, copy_kind, src_kind, dst_kind, host_memory
)
SELECT range_path, copy_kind, src_kind, dst_kind, host_memory, count, total_bytes, total_ns, avg_bytes, gb_per_s,
       sync_count, sync_api_ns
FROM grouped
ORDER BY path_first_ns, range_path, total_ns DESC, copy_kind, src_kind, dst_kind;
