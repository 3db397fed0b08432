-- nsysql: rules.cuda_api_sync v1
-- purpose: CUDA synchronization calls that block the host, longest first, identical to `nsys analyze -r cuda_api_sync` (Nsight Systems 2025.3).
-- requires: runtime
-- params: $rows BIGINT default 50 (rows shown, longest first; -1 for all)
-- notes: NVIDIA matches the API name with SQLite's case-insensitive LIKE ('cudaDeviceSynchronize%', 'cudaStreamSynchronize%') and prints the name as recorded (with its _vNNNN suffix). It orders by duration only; equal durations keep the export's row order here.
-- optional: "PID"
-- text-min: "API Name" 24
-- columns:
--   Duration (ns) | BIGINT | ns
--   Start (ns) | BIGINT | ns timestamp
--   PID | BIGINT | id
--   TID | BIGINT | id
--   API Name | VARCHAR | text
SELECT end_ns - start_ns AS "Duration (ns)",
       start_ns AS "Start (ns)",
       pid AS "PID",
       tid AS "TID",
       api_name AS "API Name"
FROM runtime
WHERE api_name ILIKE 'cudaDeviceSynchronize%' OR api_name ILIKE 'cudaStreamSynchronize%'
ORDER BY "Duration (ns)" DESC, runtime_id
LIMIT (CASE WHEN $rows < 0 THEN NULL ELSE $rows END);
