-- nsysql: rules.cuda_memcpy_async v1
-- purpose: Async memcpys using pageable memory (so synchronous), longest first, identical to `nsys analyze -r cuda_memcpy_async` (Nsight Systems 2025.3).
-- requires: memcpy, runtime
-- params: $rows BIGINT default 50 (rows shown, longest first; -1 for all)
-- notes: A copy is matched to its API call on correlationId alone, as NVIDIA does; the API name is matched with a case-insensitive LIKE 'cudaMemcpy%Async%' and printed as recorded. Bytes are printed in MB (10^6 bytes, 3 decimals). Equal durations come in NVIDIA's order: by the API call's row, then the copy's (with two processes, whose correlationIds overlap, each copy is matched to the calls of both, as NVIDIA does: fixtures/mpi-2rank).
-- optional: "Green Context ID", "Context ID", "Device ID", "PID", "Stream ID"
-- text-min: "API Name" 24
-- columns:
--   Duration (ns) | BIGINT | ns
--   Start (ns) | BIGINT | ns timestamp
--   Src Kind | VARCHAR | text
--   Dst Kind | VARCHAR | text
--   Bytes (MB) | DOUBLE | MB | 3
--   PID | BIGINT | id
--   Device ID | BIGINT | id
--   Context ID | BIGINT | id
--   Green Context ID | BIGINT | id (empty when 0 or absent)
--   Stream ID | BIGINT | id
--   API Name | VARCHAR | text
SELECT m.end_ns - m.start_ns AS "Duration (ns)",
       m.start_ns AS "Start (ns)",
       m.src_kind AS "Src Kind",
       m.dst_kind AS "Dst Kind",
       m.bytes / 1e6 AS "Bytes (MB)",
       m.pid AS "PID",
       m.device_id AS "Device ID",
       m.context_id AS "Context ID",
       NULLIF(m.green_context_id, 0) AS "Green Context ID",
       m.stream_id AS "Stream ID",
       r.api_name AS "API Name"
FROM memcpy AS m
JOIN runtime AS r ON r.correlation_id = m.correlation_id
WHERE (m.src_kind = 'Pageable' OR m.dst_kind = 'Pageable')
  AND r.api_name ILIKE 'cudaMemcpy%Async%'
ORDER BY "Duration (ns)" DESC, r.runtime_id, m.memcpy_id
LIMIT (CASE WHEN $rows < 0 THEN NULL ELSE $rows END);
