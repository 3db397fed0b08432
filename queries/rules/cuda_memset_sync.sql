-- nsysql: rules.cuda_memset_sync v1
-- purpose: Synchronous memsets on pinned or managed memory, longest first, identical to `nsys analyze -r cuda_memset_sync` (Nsight Systems 2025.3).
-- requires: memset, runtime
-- params: $rows BIGINT default 50 (rows shown, longest first; -1 for all)
-- notes: As NVIDIA: memsets on Pinned or Managed memory; a memset is matched to its API call on correlationId alone; API names are matched case-insensitively (LIKE 'cudaMemset%', NOT LIKE '%async%') and printed as recorded. Bytes in MB (10^6 bytes, 3 decimals). Equal durations keep the export's row order here.
-- optional: "Green Context ID", "Context ID", "Device ID", "PID", "Stream ID"
-- text-min: "API Name" 24
-- columns:
--   Duration (ns) | BIGINT | ns
--   Start (ns) | BIGINT | ns timestamp
--   Memory Kind | VARCHAR | text
--   Bytes (MB) | DOUBLE | MB | 3
--   PID | BIGINT | id
--   Device ID | BIGINT | id
--   Context ID | BIGINT | id
--   Green Context ID | BIGINT | id (empty when 0 or absent)
--   Stream ID | BIGINT | id
--   API Name | VARCHAR | text
SELECT m.end_ns - m.start_ns AS "Duration (ns)",
       m.start_ns AS "Start (ns)",
       m.mem_kind AS "Memory Kind",
       m.bytes / 1e6 AS "Bytes (MB)",
       m.pid AS "PID",
       m.device_id AS "Device ID",
       m.context_id AS "Context ID",
       NULLIF(m.green_context_id, 0) AS "Green Context ID",
       m.stream_id AS "Stream ID",
       r.api_name AS "API Name"
FROM memset AS m
JOIN runtime AS r ON r.correlation_id = m.correlation_id
WHERE m.mem_kind IN ('Pinned', 'Managed')
  AND r.api_name ILIKE 'cudaMemset%' AND r.api_name NOT ILIKE '%async%'
ORDER BY "Duration (ns)" DESC, m.memset_id, r.runtime_id
LIMIT (CASE WHEN $rows < 0 THEN NULL ELSE $rows END);
