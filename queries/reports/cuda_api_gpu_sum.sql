-- nsysql: reports.cuda_api_gpu_sum v1
-- purpose: CUDA API calls, kernels and memory operations together, summed by name, identical to `nsys stats -r cuda_api_gpu_sum` (Nsight Systems 2025.3).
-- requires: runtime|kernel|memcpy|memset
-- params: none
-- notes: cuda_api_sum and cuda_gpu_sum in one table: API calls by name with a 4-digit `_vNNNN` suffix dropped
--   (Category CUDA_API), kernels by demangled name (CUDA_KERNEL), copies as `[CUDA memcpy <kind>]` and memsets as
--   `[CUDA memset]` (MEMORY_OPER). Time (%) mixes CPU time of API calls with GPU time of kernels and memory operations,
--   as NVIDIA's report does. Rows with equal total time come in name order.
-- columns:
--   Time (%) | DOUBLE | pct of all API, kernel and memory-operation time | 1
--   Total Time (ns) | BIGINT | ns
--   Instances | BIGINT | count
--   Avg (ns) | DOUBLE | ns | 1
--   Med (ns) | DOUBLE | ns | 1
--   Min (ns) | BIGINT | ns
--   Max (ns) | BIGINT | ns
--   StdDev (ns) | DOUBLE | ns (sample standard deviation; 0 for one instance) | 1
--   Category | VARCHAR | CUDA_API, CUDA_KERNEL or MEMORY_OPER
--   Operation | VARCHAR | text (API name, demangled kernel name, `[CUDA memcpy <kind>]` or `[CUDA memset]`)
WITH ops AS (
    SELECT api_short_name AS operation, 'CUDA_API' AS category, end_ns - start_ns AS dur FROM runtime
    UNION ALL
    SELECT kernel_name, 'CUDA_KERNEL', end_ns - start_ns FROM kernel
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
