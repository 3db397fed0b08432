-- nsysql: reports.cuda_api_trace v1
-- purpose: Every CUDA runtime and driver API call in start order, with its result, correlation id and thread, identical to `nsys stats -r cuda_api_trace` (Nsight Systems 2025.3).
-- requires: runtime, thread
-- params: none
-- notes: Name drops a trailing 6-character `_vNNNN` version suffix (cudaLaunchKernel_v7000 -> cudaLaunchKernel) and
--   keeps longer ones (cudaGetDeviceProperties_v12000), as NVIDIA does. T-Pri and Thread Name come from the
--   thread's ThreadNames row; empty when the thread has none. Calls with the same start keep export order.
-- columns:
--   Start (ns) | BIGINT | ns timestamp
--   Duration (ns) | BIGINT | ns
--   Name | VARCHAR | text
--   Result | BIGINT | code (the call's return value)
--   CorrID | BIGINT | id
--   Pid | BIGINT | id
--   Tid | BIGINT | id
--   T-Pri | BIGINT | number (thread priority)
--   Thread Name | VARCHAR | text
SELECT r.start_ns AS "Start (ns)",
       r.end_ns - r.start_ns AS "Duration (ns)",
       CASE WHEN substr(r.api_name, length(r.api_name) - 5, 2) = '_v'
            THEN left(r.api_name, length(r.api_name) - 6) ELSE r.api_name END AS "Name",
       r.return_value AS "Result",
       r.correlation_id AS "CorrID",
       r.pid AS "Pid",
       r.tid AS "Tid",
       t.priority AS "T-Pri",
       t.thread_name AS "Thread Name"
FROM runtime AS r
LEFT JOIN thread AS t ON t.global_tid = r.global_tid
ORDER BY r.start_ns, r.runtime_id;
