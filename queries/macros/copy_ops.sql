-- nsysql: macros.copy_ops v1
-- purpose: Every memory copy and memset with its launching CUDA call, classified: `copy_ops(memcpy, memset, runtime)` returns one row per op: its device, stream, kind (a memset's copy_kind is 'Memset', its src_kind '-'), memory kinds, host memory (macros.host_memory), bytes, interval and duration, and the call's id and duration with whether the op was synchronous (macros.copy_is_sync).
-- requires: macros.host_memory, macros.copy_is_sync
-- params: none
-- notes: An op and its call match on correlationId AND process; an op without a call in the export keeps NULL call
--   columns (and is synchronous only by its API name, so never). The normalized tables are passed by name; DuckDB
--   reads only the columns a caller selects. analysis.memcpy, memcpy_by_stream and memcpy_by_range read it.
-- columns:
--   device_id | BIGINT | id
--   stream_id | BIGINT | id
--   copy_kind | VARCHAR | text (Host-to-Device, Device-to-Host, ..., Memset)
--   src_kind | VARCHAR | text (Pageable, Pinned, Device, ...; '-' for memsets)
--   dst_kind | VARCHAR | text
--   host_memory | VARCHAR | text (Pageable, Pinned or NULL)
--   bytes | BIGINT | bytes
--   start_ns | BIGINT | ns timestamp
--   end_ns | BIGINT | ns timestamp
--   dur_ns | BIGINT | ns
--   runtime_id | BIGINT | id (the launching call; NULL without one)
--   api_ns | BIGINT | ns (its duration)
--   is_sync | BOOLEAN | flag
CREATE OR REPLACE TEMP MACRO copy_ops(memcpy, memset, runtime) AS TABLE
SELECT device_id, stream_id, copy_kind, src_kind, dst_kind,
       host_memory(src_kind, dst_kind) AS host_memory,  -- queries/macros/host_memory.sql
       bytes, start_ns, end_ns, end_ns - start_ns AS dur_ns, runtime_id, api_ns,
       copy_is_sync(api_name, api_end_ns, end_ns) AS is_sync  -- queries/macros/copy_is_sync.sql
FROM (SELECT m.device_id, m.stream_id, m.copy_kind, m.src_kind, m.dst_kind, m.bytes, m.start_ns, m.end_ns,
             rt.runtime_id, rt.api_name, rt.end_ns AS api_end_ns, rt.end_ns - rt.start_ns AS api_ns
      FROM query_table(memcpy) AS m
      LEFT JOIN query_table(runtime) AS rt ON rt.correlation_id = m.correlation_id AND rt.pid = m.pid
      UNION ALL
      SELECT s.device_id, s.stream_id, 'Memset', '-', s.mem_kind, s.bytes, s.start_ns, s.end_ns, rt.runtime_id,
             rt.api_name, rt.end_ns, rt.end_ns - rt.start_ns
      FROM query_table(memset) AS s
      LEFT JOIN query_table(runtime) AS rt ON rt.correlation_id = s.correlation_id AND rt.pid = s.pid);
