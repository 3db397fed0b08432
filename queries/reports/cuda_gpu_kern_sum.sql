-- nsysql: reports.cuda_gpu_kern_sum v3
-- purpose: GPU time per kernel name (demangled), identical to `nsys stats -r cuda_gpu_kern_sum` (Nsight Systems 2025.3).
-- requires: kernel
-- params: $name_form VARCHAR default 'demangled' (kernel name summed over: 'demangled' with templates, 'base' (`:base`) or 'mangled' (`:mangled`; the demangled name where the export has no mangled one)), $nvtx_name BOOLEAN default false (`:nvtx-name`: prefix the name with the innermost NVTX push/pop range enclosing the launch, `<range>/<name>`)
-- args: nvtx-name -> nvtx_name = true; base -> name_form = 'base'; mangled -> name_form = 'mangled'
-- columns:
--   Time (%) | DOUBLE | pct of all kernel time | 1
--   Total Time (ns) | BIGINT | ns
--   Instances | BIGINT | count
--   Avg (ns) | DOUBLE | ns | 1
--   Med (ns) | DOUBLE | ns | 1
--   Min (ns) | BIGINT | ns
--   Max (ns) | BIGINT | ns
--   StdDev (ns) | DOUBLE | ns (sample standard deviation) | 1
--   Name | VARCHAR | text (kernel name as $name_form, demangled by default; `<NVTX range>/` before it with $nvtx_name)
WITH named AS (
    SELECT k.end_ns - k.start_ns AS dur,
           CASE WHEN $nvtx_name AND r.text IS NOT NULL THEN r.text || '/' ELSE '' END ||
           CASE $name_form WHEN 'base' THEN k.short_name
                           WHEN 'mangled' THEN COALESCE(k.mangled_name, k.kernel_name)
                           ELSE k.kernel_name END AS name
    FROM kernel AS k
    LEFT JOIN runtime AS rt ON $nvtx_name AND rt.correlation_id = k.correlation_id AND rt.pid = k.pid
    LEFT JOIN runtime_nvtx AS rn ON rn.runtime_id = rt.runtime_id
    LEFT JOIN nvtx_range AS r ON r.range_id = rn.range_id
)
SELECT 100.0 * SUM(dur) / SUM(SUM(dur)) OVER () AS "Time (%)",
       SUM(dur) AS "Total Time (ns)",
       COUNT(*) AS "Instances",
       AVG(dur) AS "Avg (ns)",
       MEDIAN(dur) AS "Med (ns)",
       MIN(dur) AS "Min (ns)",
       MAX(dur) AS "Max (ns)",
       COALESCE(STDDEV_SAMP(dur), 0.0) AS "StdDev (ns)",
       name AS "Name"
FROM named
GROUP BY name
ORDER BY "Total Time (ns)" DESC, "Instances", "Name";
