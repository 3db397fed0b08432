-- nsysql: normalize.nsys3.gpu_op v1
-- purpose: All GPU work in one table (kernels, memcpys, memsets) with the CUDA API call that launched it, matched on correlationId AND process (correlation ids repeat across processes).
-- requires: kernel, memcpy, memset, runtime
-- params: none
-- columns:
--   op_kind | VARCHAR | kernel, memcpy or memset
--   op_id | BIGINT | id (kernel_id / memcpy_id / memset_id)
--   start_ns | BIGINT | ns
--   end_ns | BIGINT | ns
--   device_id | BIGINT | id
--   stream_id | BIGINT | id
--   pid | BIGINT | id
--   correlation_id | BIGINT | id
--   op_name | VARCHAR | text (kernel name, or [CUDA memcpy <kind>] / [CUDA memset])
--   bytes | BIGINT | bytes (copies and sets; NULL for kernels)
--   runtime_id | BIGINT | id (launching API call; NULL when the export has none)
CREATE TABLE gpu_op AS
WITH ops AS (
    SELECT 'kernel' AS op_kind, kernel_id AS op_id, start_ns, end_ns, device_id, stream_id, pid,
           correlation_id, kernel_name AS op_name, CAST(NULL AS BIGINT) AS bytes
    FROM kernel
    UNION ALL
    SELECT 'memcpy', memcpy_id, start_ns, end_ns, device_id, stream_id, pid, correlation_id,
           '[CUDA memcpy ' || copy_kind || ']', bytes
    FROM memcpy
    UNION ALL
    SELECT 'memset', memset_id, start_ns, end_ns, device_id, stream_id, pid, correlation_id,
           '[CUDA memset]', bytes
    FROM memset
)
SELECT o.*, r.runtime_id
FROM ops AS o
LEFT JOIN runtime AS r ON r.correlation_id = o.correlation_id AND r.pid = o.pid
ORDER BY o.start_ns, o.op_kind, o.op_id;
