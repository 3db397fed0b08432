-- nsysql: analysis._step_label v1
-- purpose: Per process, the analysed steady-state steps in words (`steps 2-9`, `step 4`, `steps 1-3, 7`, or `all GPU activity (no steps)`), as the findings' `where` names them.
-- requires: analysis.steady_steps
-- params: none
-- notes: Consecutive analysed step numbers are written as one run `lo-hi`; runs are joined by ', ' in step order.
-- columns:
--   pid | BIGINT | id
--   label | VARCHAR | text
WITH
win AS (SELECT pid, step FROM steady_steps WHERE analysed),
step_runs AS (  -- consecutive analysed step numbers as runs, for `steps 3-10`
    SELECT pid, MIN(step) AS lo, MAX(step) AS hi
    FROM (SELECT pid, step, step - ROW_NUMBER() OVER (PARTITION BY pid ORDER BY step) AS run FROM win)
    GROUP BY pid, run
)
SELECT pid, CASE WHEN MAX(hi) = 0 THEN 'all GPU activity (no steps)'
                 ELSE (CASE WHEN SUM(hi - lo + 1) = 1 THEN 'step ' ELSE 'steps ' END)
                      || string_agg(CASE WHEN lo = hi THEN lo::VARCHAR ELSE lo || '-' || hi END, ', ' ORDER BY lo) END AS label
FROM step_runs
GROUP BY pid
ORDER BY pid;
