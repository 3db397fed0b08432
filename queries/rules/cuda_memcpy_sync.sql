-- nsysql: rules.cuda_memcpy_sync v1
-- purpose: Synchronous memcpys that block the host, longest first, identical to `nsys analyze -r cuda_memcpy_sync` (Nsight Systems 2025.3).
-- requires: memcpy, runtime
-- params: $rows BIGINT default 50 (rows shown, longest first; -1 for all)
-- notes: As NVIDIA: host-to-device copies of 64000 bytes or less (which return early) and copies within one device are left out (with SQL's NULL logic: a copy with a source device but no destination device is left out too); a copy is matched to its API call on correlationId alone; API names are matched case-insensitively (LIKE 'cudaMemcpy%', NOT LIKE '%Async%') and printed as recorded. Bytes in MB (10^6 bytes, 3 decimals). Equal durations keep the export's row order here.
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
WHERE NOT (m.bytes <= 64000 AND m.copy_kind = 'Host-to-Device')
  AND NOT (m.src_device_id IS NOT NULL AND m.src_device_id = m.dst_device_id)
  AND r.api_name ILIKE 'cudaMemcpy%' AND r.api_name NOT ILIKE '%Async%'
ORDER BY "Duration (ns)" DESC, m.memcpy_id, r.runtime_id
LIMIT (CASE WHEN $rows < 0 THEN NULL ELSE $rows END);
