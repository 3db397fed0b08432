-- nsysql: recipes._pace_delta_stats v1
-- purpose: Per iteration of a pacing recipe, the statistics of its delta over the reports (ranks), as NVIDIA's pacing recipes write pace_delta_stats.parquet (Nsight Systems 2025.3: nsys_recipe/lib/pace.py).
-- requires: none
-- params: none
-- notes: Reads `pace_instance` (rank, iteration, delta_ns DOUBLE), as recipes._pace_stats. Per iteration, over
--   the reports that have it: count, mean, sample standard deviation (NULL for one report; computed as pandas does,
--   from the deviations from the mean), min, linearly interpolated quartiles, max and sum, not rounded.
-- columns:
--   iteration | BIGINT | index
--   count | DOUBLE | count
--   mean_ns | DOUBLE | ns
--   std_ns | DOUBLE | ns
--   min_ns | DOUBLE | ns
--   q1_ns | DOUBLE | ns
--   median_ns | DOUBLE | ns
--   q3_ns | DOUBLE | ns
--   max_ns | DOUBLE | ns
--   sum_ns | DOUBLE | ns
WITH
d AS (
    SELECT iteration, delta_ns, AVG(delta_ns) OVER (PARTITION BY iteration) AS m
    FROM pace_instance
    WHERE delta_ns IS NOT NULL
)
SELECT iteration, CAST(COUNT(delta_ns) AS DOUBLE) AS count, AVG(delta_ns) AS mean_ns,
       CASE WHEN COUNT(delta_ns) > 1 THEN sqrt(SUM((m - delta_ns) * (m - delta_ns)) / (COUNT(delta_ns) - 1)) END AS std_ns,
       MIN(delta_ns) AS min_ns,
       quantile_cont(delta_ns, 0.25) AS q1_ns, quantile_cont(delta_ns, 0.5) AS median_ns,
       quantile_cont(delta_ns, 0.75) AS q3_ns,
       MAX(delta_ns) AS max_ns, SUM(delta_ns) AS sum_ns
FROM d
GROUP BY iteration
ORDER BY iteration;
