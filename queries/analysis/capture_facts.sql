-- nsysql: analysis.capture_facts v1
-- purpose: One row of facts about the capture: GPUs, Nsight Systems version, export schema, duration and how much of each activity it holds.
-- requires: none
-- params: none
-- rows: one
-- columns:
--   gpus | VARCHAR | text (device id: name; ...)
--   nsys_version | VARCHAR | text
--   export_schema | VARCHAR | text
--   duration_ns | BIGINT | ns (capture span)
--   processes | BIGINT | count (processes with CUDA, NVTX or OS runtime activity)
--   threads | BIGINT | count (threads with such activity)
--   kernels | BIGINT | count
--   api_calls | BIGINT | count
--   nvtx_ranges | BIGINT | count
--   memcpys | BIGINT | count
--   memsets | BIGINT | count
WITH active AS (
    SELECT pid, global_tid FROM runtime
    UNION SELECT pid, global_tid FROM nvtx_range
    UNION SELECT pid, global_tid FROM osrt
)
SELECT (SELECT string_agg(device_id || ': ' || gpu_name, '; ' ORDER BY device_id) FROM gpu) AS gpus,
       (SELECT MAX(value) FROM export_info WHERE key = 'EXPORT_PRODUCT_VERSION') AS nsys_version,
       (SELECT MAX(value) FROM export_info WHERE key = 'EXPORT_SCHEMA_VERSION') AS export_schema,
       (SELECT MAX(duration_ns) FROM capture_span) AS duration_ns,
       (SELECT COUNT(DISTINCT pid) FROM active) AS processes,
       (SELECT COUNT(DISTINCT global_tid) FROM active) AS threads,
       (SELECT COUNT(*) FROM kernel) AS kernels,
       (SELECT COUNT(*) FROM runtime) AS api_calls,
       (SELECT COUNT(*) FROM nvtx_range) AS nvtx_ranges,
       (SELECT COUNT(*) FROM memcpy) AS memcpys,
       (SELECT COUNT(*) FROM memset) AS memsets;
