-- nsysql: analysis.step_stats v1
-- purpose: One row about the analysed steps: how many, mean/median/max wall time, which step is slowest, how many were left out as warm-up, and the outlier steps.
-- requires: analysis.steady_steps
-- params: none
-- rows: one
-- notes: An outlier is an analysed step whose wall time exceeds 1.5 x the median wall time of the analysed steps,
--   judged only with 3 or more analysed steps (the same rule as findings.outlier_step).
-- columns:
--   analysed_steps | BIGINT | count
--   excluded_steps | BIGINT | count (warm-up)
--   first_step | BIGINT | index (first analysed step)
--   last_step | BIGINT | index (last analysed step)
--   total_ns | BIGINT | ns (wall time of the analysed steps)
--   mean_ns | DOUBLE | ns | 0
--   median_ns | DOUBLE | ns | 0
--   max_ns | BIGINT | ns
--   slowest_step | BIGINT | index
--   outlier_steps | BIGINT[] | index list
WITH a AS (SELECT * FROM steady_steps WHERE analysed),
m AS (SELECT MEDIAN(wall_ns) AS median_ns, COUNT(*) AS n FROM a)
SELECT (SELECT n FROM m) AS analysed_steps,
       (SELECT COUNT(*) FROM steady_steps WHERE NOT analysed) AS excluded_steps,
       (SELECT MIN(step) FROM a) AS first_step, (SELECT MAX(step) FROM a) AS last_step,
       (SELECT CAST(SUM(wall_ns) AS BIGINT) FROM a) AS total_ns, (SELECT AVG(wall_ns) FROM a) AS mean_ns,
       (SELECT median_ns FROM m) AS median_ns, (SELECT MAX(wall_ns) FROM a) AS max_ns,
       (SELECT arg_max(step, wall_ns) FROM a) AS slowest_step,
       COALESCE((SELECT list(a.step ORDER BY a.step) FROM a, m WHERE m.n >= 3 AND a.wall_ns > 1.5 * m.median_ns),
                []::BIGINT[]) AS outlier_steps;
