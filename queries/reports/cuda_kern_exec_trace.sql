-- nsysql: reports.cuda_kern_exec_trace v1
-- purpose: Every kernel with the CUDA API call that launched it: API, queue and kernel times per launch in API start order, identical to `nsys stats -r cuda_kern_exec_trace` (Nsight Systems 2025.3).
-- requires: kernel, runtime
-- params: none
-- notes: A kernel is matched to its launching call on correlationId and process; kernels without one are left out.
--   Queue Start/Dur (call end, kernel start - call end) are empty when the kernel started before the call returned.
--   Total Dur = (later of kernel end and call end) - call start. API Function drops a trailing 6-character
--   `_vNNNN` suffix, as NVIDIA does. GridXYZ and BlockXYZ are NVIDIA's printf('%4d %4d %4d').
--   Launches with the same API start keep the calls' export order, then the kernels'.
-- optional: ("PID", "TID"), "DevId", ("GridXYZ", "BlockXYZ"), ("Queue Start (ns)", "Queue Dur (ns)"), "Total Dur (ns)", "API Function"
-- columns:
--   API Start (ns) | BIGINT | ns timestamp
--   API Dur (ns) | BIGINT | ns
--   Queue Start (ns) | BIGINT | ns timestamp
--   Queue Dur (ns) | BIGINT | ns
--   Kernel Start (ns) | BIGINT | ns timestamp
--   Kernel Dur (ns) | BIGINT | ns
--   Total Dur (ns) | BIGINT | ns
--   PID | BIGINT | id
--   TID | BIGINT | id
--   DevId | BIGINT | id
--   API Function | VARCHAR | text
--   GridXYZ | VARCHAR | text
--   BlockXYZ | VARCHAR | text
--   Kernel Name | VARCHAR | text (demangled)
SELECT r.start_ns AS "API Start (ns)",
       r.end_ns - r.start_ns AS "API Dur (ns)",
       CASE WHEN k.start_ns >= r.end_ns THEN r.end_ns END AS "Queue Start (ns)",
       CASE WHEN k.start_ns >= r.end_ns THEN k.start_ns - r.end_ns END AS "Queue Dur (ns)",
       k.start_ns AS "Kernel Start (ns)",
       k.end_ns - k.start_ns AS "Kernel Dur (ns)",
       GREATEST(r.end_ns, k.end_ns) - r.start_ns AS "Total Dur (ns)",
       r.pid AS "PID",
       r.tid AS "TID",
       k.device_id AS "DevId",
       CASE WHEN substr(r.api_name, length(r.api_name) - 5, 2) = '_v'
            THEN left(r.api_name, length(r.api_name) - 6) ELSE r.api_name END AS "API Function",
       printf('%4d %4d %4d', k.grid_x, k.grid_y, k.grid_z) AS "GridXYZ",
       printf('%4d %4d %4d', k.block_x, k.block_y, k.block_z) AS "BlockXYZ",
       k.kernel_name AS "Kernel Name"
FROM kernel AS k
JOIN runtime AS r ON r.correlation_id = k.correlation_id AND r.pid = k.pid
ORDER BY r.start_ns, r.runtime_id, k.kernel_id;
