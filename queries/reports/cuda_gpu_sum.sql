-- nsysql: reports.cuda_gpu_sum v1
-- purpose: GPU time of kernels and memory operations together, summed by name, identical to `nsys stats -r cuda_gpu_sum` (Nsight Systems 2025.3).
-- requires: kernel|memcpy|memset
-- params: none
-- notes: cuda_gpu_kern_sum and cuda_gpu_mem_time_sum in one table: kernels by demangled name (Category CUDA_KERNEL),
--   copies as `[CUDA memcpy <kind>]` and memsets as `[CUDA memset]` (Category MEMORY_OPER). Time (%) is of the
--   total GPU time of all rows, not of wall time. Rows with equal total time come in name order.
-- columns:
--   Time (%) | DOUBLE | pct of all kernel and memory-operation time | 1
--   Total Time (ns) | BIGINT | ns
--   Instances | BIGINT | count
--   Avg (ns) | DOUBLE | ns | 1
--   Med (ns) | DOUBLE | ns | 1
--   Min (ns) | BIGINT | ns
--   Max (ns) | BIGINT | ns
--   StdDev (ns) | DOUBLE | ns (sample standard deviation; 0 for one instance) | 1
--   Category | VARCHAR | CUDA_KERNEL or MEMORY_OPER
--   Operation | VARCHAR | text (demangled kernel name, `[CUDA memcpy <kind>]` or `[CUDA memset]`)
WITH ops AS (
    SELECT kernel_name AS operation, 'CUDA_KERNEL' AS category, end_ns - start_ns AS dur FROM kernel
    UNION ALL
    SELECT '[CUDA memcpy ' || copy_kind || ']', 'MEMORY_OPER', end_ns - start_ns FROM memcpy
    UNION ALL
    SELECT '[CUDA memset]', 'MEMORY_OPER', end_ns - start_ns FROM memset
)
SELECT 100.0 * SUM(dur) / SUM(SUM(dur)) OVER () AS "Time (%)",
       SUM(dur) AS "Total Time (ns)",
       COUNT(*) AS "Instances",
       AVG(dur) AS "Avg (ns)",
       MEDIAN(dur) AS "Med (ns)",
       MIN(dur) AS "Min (ns)",
       MAX(dur) AS "Max (ns)",
       COALESCE(STDDEV_SAMP(dur), 0.0) AS "StdDev (ns)",
       category AS "Category",
       operation AS "Operation"
FROM ops
GROUP BY operation, category
ORDER BY "Total Time (ns)" DESC, "Operation";
