-- nsysql: analysis.step_stats v2
-- purpose: One row about the analysed steps: how many, mean/median/max wall time, which step is slowest, how many were left out as warm-up, and the outlier steps.
-- requires: analysis.steady_steps
-- params: none
-- rows: one
-- notes: An outlier is an analysed step whose wall time exceeds 1.5 x the median wall time of its process's
--   analysed steps, judged only for a process with 3 or more analysed steps (the same rule as
--   findings.outlier_step). Steps are numbered per process: with several processes (pid, step) names a step, and
--   outlier_pids[i] is the process of outlier_steps[i]. The other figures are over the analysed steps of every
--   process.
-- columns:
--   analysed_steps | BIGINT | count
--   excluded_steps | BIGINT | count (warm-up)
--   processes | BIGINT | count (processes with analysed steps)
--   first_step | BIGINT | index (first analysed step)
--   last_step | BIGINT | index (last analysed step)
--   total_ns | BIGINT | ns (wall time of the analysed steps)
--   mean_ns | DOUBLE | ns | 0
--   median_ns | DOUBLE | ns | 0
--   max_ns | BIGINT | ns
--   slowest_step | BIGINT | index
--   slowest_pid | BIGINT | id (the process of slowest_step)
--   outlier_steps | BIGINT[] | index list (in process, then step order)
--   outlier_pids | BIGINT[] | id list (the process of each outlier step)
WITH a AS (SELECT * FROM steady_steps WHERE analysed),
m AS (SELECT MEDIAN(wall_ns) AS median_ns, COUNT(*) AS n FROM a),
per_pid AS (SELECT pid, MEDIAN(wall_ns) AS median_ns FROM a GROUP BY pid HAVING COUNT(*) >= 3),
outliers AS (SELECT a.pid, a.step FROM a JOIN per_pid AS p USING (pid) WHERE a.wall_ns > 1.5 * p.median_ns)
SELECT (SELECT n FROM m) AS analysed_steps,
       (SELECT COUNT(*) FROM steady_steps WHERE NOT analysed) AS excluded_steps,
       (SELECT COUNT(DISTINCT pid) FROM a) AS processes,
       (SELECT MIN(step) FROM a) AS first_step, (SELECT MAX(step) FROM a) AS last_step,
       (SELECT CAST(SUM(wall_ns) AS BIGINT) FROM a) AS total_ns, (SELECT AVG(wall_ns) FROM a) AS mean_ns,
       (SELECT median_ns FROM m) AS median_ns, (SELECT MAX(wall_ns) FROM a) AS max_ns,
       (SELECT arg_max(step, (wall_ns, -pid, -step)) FROM a) AS slowest_step,
       (SELECT arg_max(pid, (wall_ns, -pid, -step)) FROM a) AS slowest_pid,
       COALESCE((SELECT list(step ORDER BY pid, step) FROM outliers), []::BIGINT[]) AS outlier_steps,
       COALESCE((SELECT list(pid ORDER BY pid, step) FROM outliers), []::BIGINT[]) AS outlier_pids;
