-- nsysql: normalize.nsys3.gpu_op_int v2
-- purpose: All GPU work in one table (kernels, memcpys, memsets, and CUDA graphs traced at graph level: see graph_trace) with the CUDA API call that launched it, matched on correlationId AND process (correlation ids repeat across processes); as stored: op_kind an ENUM, kernel names nsys_string ENUMs (see name). The view gpu_op gives them as text.
-- requires: kernel_int, memcpy, memset, graph_trace, runtime_int
-- params: none
-- storage-of: gpu_op (a copy of the Parquet dataset leaves this table out: those hold its rows)
-- columns:
--   op_kind | ENUM | kernel, memcpy, memset or graph (a whole CUDA graph execution traced at graph level)
--   op_id | BIGINT | id (kernel_id / memcpy_id / memset_id / graph_trace_id)
--   start_ns | BIGINT | ns
--   end_ns | BIGINT | ns
--   device_id | BIGINT | id
--   stream_id | BIGINT | id
--   pid | BIGINT | id
--   correlation_id | BIGINT | id
--   kernel_name | ENUM | text (kernels; NULL for copies and sets)
--   label | VARCHAR | text ([CUDA memcpy <kind>] / [CUDA memset] / [CUDA graph <graph id>]; NULL for kernels)
--   bytes | BIGINT | bytes (copies and sets; NULL for kernels)
--   runtime_id | BIGINT | id (launching API call; NULL when the export has none)
--   call_global_tid | BIGINT | id (thread of the launching call, for gpu_op_attribution: it need not join runtime again)
--   call_start_ns | BIGINT | ns (start of the launching call)
--   call_end_ns | BIGINT | ns (end of the launching call)
CREATE TABLE gpu_op_int AS
WITH ops AS (
    SELECT 'kernel' AS op_kind, kernel_id AS op_id, start_ns, end_ns, device_id, stream_id,
           (global_pid >> 24) & 16777215 AS pid, correlation_id, kernel_name, CAST(NULL AS VARCHAR) AS label,
           CAST(NULL AS BIGINT) AS bytes
    FROM kernel_int
    UNION ALL
    SELECT 'memcpy', memcpy_id, start_ns, end_ns, device_id, stream_id, pid, correlation_id, NULL,
           '[CUDA memcpy ' || copy_kind || ']', bytes
    FROM memcpy
    UNION ALL
    SELECT 'memset', memset_id, start_ns, end_ns, device_id, stream_id, pid, correlation_id, NULL,
           '[CUDA memset]', bytes
    FROM memset
    UNION ALL
    SELECT 'graph', graph_trace_id, start_ns, end_ns, device_id, stream_id, pid, correlation_id, NULL,
           '[CUDA graph ' || graph_id || ']', NULL
    FROM graph_trace
)
SELECT CAST(o.op_kind AS ENUM('kernel', 'memcpy', 'memset', 'graph')) AS op_kind,
       o.op_id, o.start_ns, o.end_ns, o.device_id, o.stream_id, o.pid, o.correlation_id,
       o.kernel_name, o.label, o.bytes, r.runtime_id,
       r.global_tid AS call_global_tid, r.start_ns AS call_start_ns, r.end_ns AS call_end_ns
FROM ops AS o
LEFT JOIN (SELECT runtime_id, correlation_id, (global_tid >> 24) & 16777215 AS pid, global_tid, start_ns, end_ns
           FROM runtime_int) AS r
       ON r.correlation_id = o.correlation_id AND r.pid = o.pid
ORDER BY o.start_ns, o.op_kind, o.op_id;
