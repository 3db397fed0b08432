-- nsysql: findings.outlier_step v3
-- purpose: Finding: analysed steps much slower than the typical step of their process, or than the same step of the other ranks, and which of the step thread's ranges took the extra time.
-- requires: analysis.steady_steps, analysis._steady_windows, user_range, thread, macros.human_ns_each, macros.plural_s, macros.thread_label, macros.thread_names
-- params: $factor DOUBLE default 1.5 (a step is an outlier when its wall time exceeds this multiple of the median; 1.5 as analysis.steady_steps's slow leading steps), $min_steps BIGINT default 3 (fewest analysed steps of a process to judge)
-- notes: Per process with at least $min_steps analysed steps: median = the median wall time of its analysed steps
--   (quantile_cont 0.5: the mean of the two middle ones for an even count). An analysed step is an outlier when
--   wall > $factor x median, or, with several processes that have steps (the ranks of a job in one export), when
--   wall > $factor x the median wall time of the same step number of the other processes (their `peer` time):
--   a step every rank found slow is judged against the rank's own steps, a step one rank took longer than the
--   others against theirs. Its typical time is the median in the first case, else the peer time.
--   recoverable_ns = floor(sum over the outliers of (wall - typical)): the time the process would save if those
--   steps took a typical step's time.
--   Extra time by range: the step thread's user ranges one level below the step (the shallowest user ranges of
--   that thread inside the step, other than the step range itself, clipped to it), summed per text and step; the
--   excess of a text in an outlier step = its time there - the median of its time over all analysed steps of the
--   process (0 in a step without it). The evidence names the two texts with the largest positive excess summed
--   over the outliers (e.g. `checkpoint +25.3 ms`).
-- columns:
--   rule | VARCHAR | text (outlier_step)
--   title | VARCHAR | text
--   where | VARCHAR | text (outlier steps of the analysed ones, thread)
--   evidence | VARCHAR | text (numbers in ms)
--   action | VARCHAR | text
--   recoverable_ns | BIGINT | ns (upper bound of wall time recoverable, total over the analysed steps)
--   recoverable_pct | DOUBLE | pct of the analysed steps' wall time | 1
WITH
win AS (  -- the analysed steady-state step windows
    SELECT step, pid, tid, start_ns, end_ns, end_ns - start_ns AS wall_ns FROM steady_steps WHERE analysed
),
per_pid AS (
    SELECT pid, COUNT(*) AS steps, SUM(wall_ns) AS wall_ns, quantile_cont(wall_ns, 0.5) AS median_ns,
           arg_min(tid, step) AS tid
    FROM win GROUP BY pid HAVING COUNT(*) >= $min_steps
),
peer AS (  -- the same step of the other processes (ranks)
    SELECT a.pid, a.step, quantile_cont(b.wall_ns, 0.5) AS peer_ns
    FROM win AS a JOIN win AS b ON b.step = a.step AND b.pid <> a.pid
    GROUP BY a.pid, a.step
),
judged AS (
    SELECT w.step, w.pid, w.wall_ns, p.median_ns, pe.peer_ns,
           w.wall_ns > $factor * p.median_ns AS by_median,
           pe.peer_ns IS NOT NULL AND w.wall_ns > $factor * pe.peer_ns AS by_peer
    FROM win AS w JOIN per_pid AS p USING (pid)
    LEFT JOIN peer AS pe USING (pid, step)
),
outlier AS MATERIALIZED (
    SELECT step, pid, wall_ns, CASE WHEN by_median THEN median_ns ELSE peer_ns END AS typical_ns, by_median,
           wall_ns - CASE WHEN by_median THEN median_ns ELSE peer_ns END AS excess_ns
    FROM judged WHERE by_median OR by_peer
),
thread_range AS (  -- the step thread's user ranges inside each analysed step, clipped to it
    SELECT w.step, w.pid, r.text, u.user_depth, u.is_step,
           LEAST(u.end_ns, w.end_ns) - GREATEST(u.start_ns, w.start_ns) AS dur_ns
    FROM (SELECT range_id, pid, user_depth, is_step, start_ns, end_ns,
                 start_ns // (SELECT MIN(bucket_ns) FROM _steady_windows) AS bucket
          FROM user_range WHERE pid IN (SELECT pid FROM per_pid)) AS u
    JOIN nvtx_range AS r ON r.range_id = u.range_id
    JOIN _steady_windows AS w ON w.pid = u.pid AND w.bucket = u.bucket
    WHERE r.tid = w.tid AND u.start_ns >= w.start_ns AND u.start_ns < w.end_ns
),
child AS MATERIALIZED (  -- one level below the step
    SELECT step, pid, text, SUM(dur_ns) AS dur_ns
    FROM (SELECT *, MIN(user_depth) FILTER (WHERE NOT is_step) OVER (PARTITION BY pid, step) AS child_depth
          FROM thread_range WHERE NOT is_step)
    WHERE user_depth = child_depth
    GROUP BY step, pid, text
),
grid AS (  -- every child text in every analysed step of its process (0 where absent)
    SELECT w.step, w.pid, t.text, COALESCE(c.dur_ns, 0) AS dur_ns
    FROM win AS w
    JOIN (SELECT DISTINCT pid, text FROM child) AS t USING (pid)
    LEFT JOIN child AS c ON c.pid = w.pid AND c.step = w.step AND c.text = t.text
),
typical AS (
    SELECT pid, text, quantile_cont(dur_ns, 0.5) AS median_ns FROM grid GROUP BY pid, text
),
extra AS (
    SELECT g.pid, g.text, SUM(g.dur_ns - t.median_ns) AS extra_ns
    FROM grid AS g JOIN typical AS t USING (pid, text)
    WHERE (g.pid, g.step) IN (SELECT (pid, step) FROM outlier)
    GROUP BY g.pid, g.text
),
extra_text AS (
    SELECT pid, string_agg(text || ' +' || human_ns_each([extra_ns / n])[1],
                           ', ' ORDER BY extra_ns DESC, text) AS texts
    FROM (SELECT e.*, (SELECT COUNT(*) FROM outlier AS o WHERE o.pid = e.pid) AS n,
                 ROW_NUMBER() OVER (PARTITION BY e.pid ORDER BY e.extra_ns DESC, e.text) AS rank
          FROM extra AS e WHERE e.extra_ns > 0)
    WHERE rank <= 2 GROUP BY pid
),
list AS (
    SELECT o.pid, COUNT(*) AS n, SUM(o.excess_ns) AS excess_ns, MAX(o.wall_ns / o.typical_ns) AS max_ratio,
           CASE WHEN bool_and(o.by_median) THEN 'median' ELSE 'typical' END AS typical,
           string_agg(o.step::VARCHAR, ', ' ORDER BY o.step) AS steps_list,
           string_agg(printf('step %d %.1f ms', o.step, o.wall_ns / 1e6)
                      || CASE WHEN o.by_median THEN '' ELSE printf(' (the other ranks'' step %d: %.1f ms)', o.step,
                                                                  o.typical_ns / 1e6) END,
                      ', ' ORDER BY o.step) AS walls
    FROM outlier AS o GROUP BY o.pid
),
step_runs AS (  -- consecutive analysed step numbers as runs, for `steps 3-10`
    SELECT pid, MIN(step) AS lo, MAX(step) AS hi
    FROM (SELECT pid, step, step - ROW_NUMBER() OVER (PARTITION BY pid ORDER BY step) AS run FROM win)
    GROUP BY pid, run
),
step_label AS (
    SELECT pid, 'steps ' || string_agg(CASE WHEN lo = hi THEN lo::VARCHAR ELSE lo || '-' || hi END, ', ' ORDER BY lo) AS label
    FROM step_runs GROUP BY pid
),
fired AS (
    SELECT p.pid, p.steps, p.wall_ns, p.median_ns, l.n, l.excess_ns, l.max_ratio, l.typical, l.steps_list, l.walls, x.texts,
           s.label, thread_label(t.thread_name, p.tid) AS thread,
           CAST(FLOOR(l.excess_ns) AS BIGINT) AS recoverable_ns
    FROM per_pid AS p
    JOIN list AS l USING (pid)
    JOIN step_label AS s USING (pid)
    LEFT JOIN extra_text AS x USING (pid)
    LEFT JOIN thread_names(thread) AS t ON t.pid = p.pid AND t.tid = p.tid
    WHERE l.excess_ns > 0
)
SELECT 'outlier_step' AS rule,
       printf('Slow steps: %,d of %,d took up to %.1fx the %s step', n, steps, max_ratio, typical) AS title,
       printf('step%s %s of %s, thread %s', plural_s(n), steps_list, label, thread)
         AS "where",
       printf('Median step %.1f ms; %s (more than %sx the median%s). ', median_ns / 1e6, walls, $factor::VARCHAR,
              CASE WHEN typical = 'median' THEN '' ELSE ', or than the other ranks'' same step' END)
         || CASE WHEN texts IS NOT NULL THEN 'Extra time per slow step, over the typical step: ' || texts || '. '
                 ELSE '' END
         || printf('Had they taken the %s time, %.1f ms would have been saved.', typical, excess_ns / 1e6) AS evidence,
       'Find what these steps do that the others do not (checkpointing, evaluation, logging, garbage collection, '
         || 'a data-loader refill, recompilation): make it asynchronous or rarer, or move it out of the step.'
         AS action,
       recoverable_ns,
       100.0 * recoverable_ns / wall_ns AS recoverable_pct
FROM fired
ORDER BY recoverable_ns DESC, pid;
