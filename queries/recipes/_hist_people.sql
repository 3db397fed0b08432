-- nsysql: recipes._hist_people v1
-- purpose: The kernels of cuda_gpu_kern_hist as nsysql shows them to people: per report and kernel name, how many ran and how their durations spread, most GPU time first.
-- requires: none
-- params: none
-- notes: Reads `hist_kernel` (rank, name, duration_ns: the rows of recipes.cuda_gpu_kern_hist of every report,
--   nsysql/answers/recipes.py). Percentiles linearly interpolated.
-- columns:
--   rank | BIGINT | index (NVIDIA's: the report's place in name order)
--   name | VARCHAR | text (short name)
--   instances | BIGINT | count
--   total_ns | BIGINT | ns
--   median_ns | DOUBLE | ns | 0
--   p90_ns | DOUBLE | ns | 0
--   min_ns | BIGINT | ns
--   max_ns | BIGINT | ns
SELECT rank, name, COUNT(*) AS instances, CAST(SUM(duration_ns) AS BIGINT) AS total_ns,
       quantile_cont(duration_ns, 0.5) AS median_ns, quantile_cont(duration_ns, 0.9) AS p90_ns,
       MIN(duration_ns) AS min_ns, MAX(duration_ns) AS max_ns
FROM hist_kernel
GROUP BY rank, name
ORDER BY rank, total_ns DESC, name;
