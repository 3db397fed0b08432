-- nsysql: recipes._pace_stats v1
-- purpose: The duration statistics of a pacing recipe's instances over every report, one row per name, as NVIDIA's pacing recipes write stats.parquet (Nsight Systems 2025.3: nsys_recipe/lib/summary.py).
-- requires: none
-- params: none
-- notes: Reads `pace_instance` (rank, name, duration_ns DOUBLE: the rows of recipes.nvtx_pace,
--   nvtx_gpu_proj_pace or cuda_gpu_kern_pace of each report, put together by nsysql/answers/recipes.py). As NVIDIA:
--   first per report (rank) count, sample standard deviation, min, linearly interpolated quartiles, max and sum,
--   each rounded to 1 decimal (half to even, as pandas); then over the reports: the counts and sums added, mean =
--   sum / count, std = the mean of the reports' (their approximation), Q1 the smallest report's Q1, median the
--   median of the reports' medians, Q3 the largest Q3, min and max, all rounded to 1 decimal again. With one
--   report these are its own statistics (mean = sum / count).
-- columns:
--   name | VARCHAR | text
--   count | BIGINT | count
--   mean_ns | DOUBLE | ns | 1
--   std_ns | DOUBLE | ns (approximated over reports) | 1
--   min_ns | DOUBLE | ns | 1
--   q1_ns | DOUBLE | ns (approximated over reports) | 1
--   median_ns | DOUBLE | ns (approximated over reports) | 1
--   q3_ns | DOUBLE | ns (approximated over reports) | 1
--   max_ns | DOUBLE | ns | 1
--   sum_ns | DOUBLE | ns | 1
WITH
per_rank AS (
    SELECT rank, name, COUNT(duration_ns) AS n,
           round_even(stddev_samp(duration_ns) * 10, 0) / 10 AS std,
           MIN(duration_ns) AS lo,
           round_even(quantile_cont(duration_ns, 0.25) * 10, 0) / 10 AS q1,
           round_even(quantile_cont(duration_ns, 0.5) * 10, 0) / 10 AS med,
           round_even(quantile_cont(duration_ns, 0.75) * 10, 0) / 10 AS q3,
           MAX(duration_ns) AS hi,
           SUM(duration_ns) AS total
    FROM pace_instance
    GROUP BY rank, name
)
SELECT name, CAST(SUM(n) AS BIGINT) AS count,
       round_even(SUM(total) / SUM(n) * 10, 0) / 10 AS mean_ns,
       round_even(AVG(std) * 10, 0) / 10 AS std_ns,
       MIN(lo) AS min_ns,
       MIN(q1) AS q1_ns,
       round_even(median(med) * 10, 0) / 10 AS median_ns,
       MAX(q3) AS q3_ns,
       MAX(hi) AS max_ns,
       SUM(total) AS sum_ns
FROM per_rank
GROUP BY name
ORDER BY name;
