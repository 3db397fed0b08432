-- nsysql: reports.cuda_kern_exec_sum v2
-- purpose: Kernel launch and execution times per process, thread, device, API and kernel name, identical to `nsys stats -r cuda_kern_exec_sum` (Nsight Systems 2025.3).
-- requires: kernel, runtime
-- params: $name_form VARCHAR default 'demangled' (kernel name grouped by: 'demangled' with templates, 'base' (`:base`) or 'mangled' (`:mangled`; the demangled name where the export has no mangled one)), $nvtx_name BOOLEAN default false (`:nvtx-name`: prefix the name with the innermost NVTX push/pop range enclosing the launch, `<range>/<name>`)
-- args: nvtx-name -> nvtx_name = true; base -> name_form = 'base'; mangled -> name_form = 'mangled'
-- notes: For each launch: API time A = call end - call start; queue time Q = kernel start - call end; kernel time K = kernel
--   duration; total T = (later of kernel end and call end) - call start. Q statistics and QCount cover only launches whose kernel started after the
--   call returned (Q >= 0); with none, QAvg..QMax are empty and QStdDev is 0.0, as NVIDIA prints them.
-- optional: "TStdDev (ns)", "AStdDev (ns)", "QStdDev (ns)", "KStdDev (ns)", "TMin (ns)", "AMin (ns)", "QMin (ns)", "KMin (ns)", "TMax (ns)", "AMax (ns)", "QMax (ns)", "KMax (ns)", "TMed (ns)", "AMed (ns)", "QMed (ns)", "KMed (ns)", "QCount", "DevId", "PID", "API Name", "TID", "TAvg (ns)"
-- columns:
--   PID | BIGINT | id
--   TID | BIGINT | id
--   DevId | BIGINT | id
--   Count | BIGINT | count
--   QCount | BIGINT | count
--   TAvg (ns) | DOUBLE | ns | 1
--   TMed (ns) | DOUBLE | ns | 1
--   TMin (ns) | BIGINT | ns
--   TMax (ns) | BIGINT | ns
--   TStdDev (ns) | DOUBLE | ns | 1
--   AAvg (ns) | DOUBLE | ns | 1
--   AMed (ns) | DOUBLE | ns | 1
--   AMin (ns) | BIGINT | ns
--   AMax (ns) | BIGINT | ns
--   AStdDev (ns) | DOUBLE | ns | 1
--   QAvg (ns) | DOUBLE | ns | 1
--   QMed (ns) | DOUBLE | ns | 1
--   QMin (ns) | BIGINT | ns
--   QMax (ns) | BIGINT | ns
--   QStdDev (ns) | DOUBLE | ns | 1
--   KAvg (ns) | DOUBLE | ns | 1
--   KMed (ns) | DOUBLE | ns | 1
--   KMin (ns) | BIGINT | ns
--   KMax (ns) | BIGINT | ns
--   KStdDev (ns) | DOUBLE | ns | 1
--   API Name | VARCHAR | text
--   Kernel Name | VARCHAR | text (kernel name as $name_form, `<NVTX range>/` before it with $nvtx_name)
WITH launches AS (
    SELECT rt.pid, rt.tid, k.device_id, rt.api_short_name AS api_name,
           CASE WHEN $nvtx_name AND r.text IS NOT NULL THEN r.text || '/' ELSE '' END ||
           CASE $name_form WHEN 'base' THEN k.short_name
                           WHEN 'mangled' THEN COALESCE(k.mangled_name, k.kernel_name)
                           ELSE k.kernel_name END AS kernel_name,
           GREATEST(k.end_ns, rt.end_ns) - rt.start_ns AS t, rt.end_ns - rt.start_ns AS a,
           CASE WHEN k.start_ns >= rt.end_ns THEN k.start_ns - rt.end_ns END AS q,
           k.end_ns - k.start_ns AS kd
    FROM kernel AS k
    JOIN runtime AS rt ON rt.correlation_id = k.correlation_id AND rt.pid = k.pid
    LEFT JOIN runtime_nvtx AS rn ON $nvtx_name AND rn.runtime_id = rt.runtime_id
    LEFT JOIN nvtx_range AS r ON r.range_id = rn.range_id
)
SELECT pid AS "PID", tid AS "TID", device_id AS "DevId",
       COUNT(*) AS "Count", COUNT(q) AS "QCount",
       AVG(t) AS "TAvg (ns)", MEDIAN(t) AS "TMed (ns)", MIN(t) AS "TMin (ns)", MAX(t) AS "TMax (ns)",
       COALESCE(STDDEV_SAMP(t), 0.0) AS "TStdDev (ns)",
       AVG(a) AS "AAvg (ns)", MEDIAN(a) AS "AMed (ns)", MIN(a) AS "AMin (ns)", MAX(a) AS "AMax (ns)",
       COALESCE(STDDEV_SAMP(a), 0.0) AS "AStdDev (ns)",
       AVG(q) AS "QAvg (ns)", MEDIAN(q) AS "QMed (ns)", MIN(q) AS "QMin (ns)", MAX(q) AS "QMax (ns)",
       COALESCE(STDDEV_SAMP(q), 0.0) AS "QStdDev (ns)",
       AVG(kd) AS "KAvg (ns)", MEDIAN(kd) AS "KMed (ns)", MIN(kd) AS "KMin (ns)", MAX(kd) AS "KMax (ns)",
       COALESCE(STDDEV_SAMP(kd), 0.0) AS "KStdDev (ns)",
       api_name AS "API Name", kernel_name AS "Kernel Name"
FROM launches
GROUP BY pid, tid, device_id, api_name, kernel_name
ORDER BY "TAvg (ns)" DESC, "PID", "TID", "DevId", "API Name", "Kernel Name";
