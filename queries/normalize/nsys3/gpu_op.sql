-- nsysql: normalize.nsys3.gpu_op v3
-- purpose: All GPU work in one table (kernels, memcpys, memsets, and whole CUDA graphs traced at graph level, op_kind graph) with the CUDA API call that launched it, matched on correlationId AND process (correlation ids repeat across processes). A view over gpu_op_int, whose kinds and kernel names are ENUMs: the texts are cast back here.
-- requires: gpu_op_int
-- params: none
-- columns:
--   op_kind | VARCHAR | kernel, memcpy, memset or graph (one CUDA graph execution traced at graph level: its kernels have no rows)
--   op_id | BIGINT | id (kernel_id / memcpy_id / memset_id / graph_trace_id)
--   start_ns | BIGINT | ns
--   end_ns | BIGINT | ns
--   device_id | BIGINT | id
--   stream_id | BIGINT | id
--   pid | BIGINT | id
--   correlation_id | BIGINT | id
--   op_name | VARCHAR | text (kernel name, or [CUDA memcpy <kind>] / [CUDA memset] / [CUDA graph <graph id>])
--   bytes | BIGINT | bytes (copies and sets; NULL for kernels)
--   runtime_id | BIGINT | id (launching API call; NULL when the export has none)
CREATE VIEW gpu_op AS
SELECT CAST(op_kind AS VARCHAR) AS op_kind, op_id, start_ns, end_ns, device_id, stream_id, pid, correlation_id,
       COALESCE(CAST(kernel_name AS VARCHAR), label) AS op_name,  -- one of the two is NULL
       bytes, runtime_id
FROM gpu_op_int;
