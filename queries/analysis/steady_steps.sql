-- nsysql: analysis.steady_steps v5
-- purpose: The time windows the headline figures are computed over: every step of `nsysql steps`, marked analysed (steady state) or excluded as warm-up; without any step, one window from the first to the last GPU op.
-- requires: analysis.steps, analysis._kernel_iterations, user_range, gpu_op
-- params: none
-- notes: A step is warm-up, and not analysed, when (a) it starts inside a user range of its process whose text
--   contains `warmup`, `warm-up`, `warm_up` or `warm up` (any case), or (b) it is one of the leading steps of its
--   process whose wall time exceeds 1.5 x the median wall time of the steps after it: step k is such a step when
--   every step before it is one and wall_k > 1.5 * median(wall of steps k+1..n). The last step of a process is never
--   warm-up by (b), so a process with steps keeps at least one analysed step unless (a) excludes them all; when (a)
--   would exclude every step of the export, none is excluded by (a). (c) Decode steps found in the op sequence
--   inside requests (analysis._kernel_iterations' request): every step of a leading request whose time (its
--   iteration's span) exceeds 1.5 x the median of the requests after it, while every request before it is one
--   too (the warm-up request: autotuning, lazy initialisation), is warm-up (`slow_leading_request`).
--   Without steps: one window (step 0, source `gpu_span`) from the first GPU op's start to the last GPU op's end,
--   on the process and thread that launched the most GPU ops (read from the CUDA runtime calls; an export without
--   them has no such window).
--   The clock: when the CPU runs ahead of the GPU in a process (the median step's GPU work ends more than its
--   median wall time after its range: the launch queue holds over a step of work), each of its steps is its period (analysis.steps' period_ns: from
--   when the GPU had finished the work launched before it, or its start if later, to the end of its GPU work),
--   and start_ns/end_ns/wall_ns are that window, so every figure over the steps is on the GPU's clock; clock is
--   then `period`, else `range` (the step's range, as measured on the CPU). range_wall_ns keeps the range's own
--   duration, range_start_ns/range_end_ns its bounds: the ops launched inside them are the step's (analysis.comm,
--   the critical path). The warm-up rule (b) reads the step's time on its clock.
--   tid is the step's own thread (the thread whose ranges make it): the CUDA runtime, data-loading and CPU
--   categories of the step time breakdown are read on it.
-- columns:
--   step | BIGINT | index (as in `nsysql steps`, per process: (pid, step) names a step; 0 = the whole GPU activity when there are no steps)
--   name | VARCHAR | text
--   source | VARCHAR | text (range, pattern, kernel-pattern, graph-launch or gpu_span)
--   pid | BIGINT | id
--   tid | BIGINT | id
--   start_ns | BIGINT | ns timestamp
--   end_ns | BIGINT | ns timestamp
--   wall_ns | BIGINT | ns
--   analysed | BOOLEAN | flag (in the steady state: counted by overview and findings)
--   excluded_because | VARCHAR | text (warmup_range, slow_leading_request, slow_leading_step; NULL when analysed)
--   clock | VARCHAR | text (range: the step's range; period: its period on the GPU's clock, the CPU running ahead)
--   range_wall_ns | BIGINT | ns (the step range's own duration, whatever the clock)
--   range_start_ns | BIGINT | ns timestamp (the step range's start: the ops launched from it on are the step's)
--   range_end_ns | BIGINT | ns timestamp (the step range's end)
WITH
warm_ranges AS (
    SELECT u.pid, u.start_ns, u.end_ns
    FROM user_range AS u JOIN nvtx_range AS r ON r.range_id = u.range_id
    WHERE NOT r.is_op_marker  -- never a user range: lets the scan skip the op markers' texts before the regex
      AND regexp_matches(r.text, 'warm[ _-]?up', 'i')
),
ahead AS (  -- the processes whose CPU runs ahead: the median step's GPU work ends over a step after its range
    SELECT pid FROM steps GROUP BY pid
    HAVING MEDIAN(COALESCE(gpu_end_ns, end_ns) - end_ns) > MEDIAN(wall_ns)
),
clocked AS (
    SELECT s.step, s.name, s.source, s.pid, s.tid, s.wall_ns AS range_wall_ns,
           a.pid IS NOT NULL AS is_ahead,
           CASE WHEN a.pid IS NULL THEN s.start_ns
                ELSE GREATEST(s.end_ns, COALESCE(s.gpu_end_ns, s.end_ns)) - s.period_ns END AS start_ns,
           CASE WHEN a.pid IS NULL THEN s.end_ns ELSE GREATEST(s.end_ns, COALESCE(s.gpu_end_ns, s.end_ns)) END AS end_ns,
           CASE WHEN a.pid IS NULL THEN s.wall_ns ELSE s.period_ns END AS wall_ns,
           s.start_ns AS range_start_ns, s.end_ns AS range_end_ns
    FROM steps AS s LEFT JOIN ahead AS a ON a.pid = s.pid
),
requests AS (  -- requests of decode steps found in the op sequence, and whether each is a slow leading one
    SELECT pid, request, start_ns, end_ns,
           BOOL_AND(COALESCE(slow, false)) OVER (PARTITION BY pid ORDER BY request ROWS UNBOUNDED PRECEDING) AS slow_leading
    FROM (SELECT pid, request, start_ns, end_ns,
                 end_ns - start_ns > 1.5 * MEDIAN(end_ns - start_ns) OVER (PARTITION BY pid ORDER BY request
                     ROWS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING) AS slow
          FROM (SELECT DISTINCT pid, request, request_start_ns AS start_ns, request_end_ns AS end_ns
                FROM _kernel_iterations WHERE request IS NOT NULL))
),
flagged AS (
    SELECT s.step, s.name, s.source, s.pid, s.tid, s.start_ns, s.end_ns, s.wall_ns, s.range_wall_ns, s.is_ahead,
           s.range_start_ns, s.range_end_ns,
           EXISTS (SELECT 1 FROM warm_ranges AS w
                   WHERE w.pid = s.pid AND w.start_ns <= s.range_start_ns AND s.range_start_ns < w.end_ns) AS in_warm_range,
           EXISTS (SELECT 1 FROM requests AS q
                   WHERE q.pid = s.pid AND q.slow_leading AND q.start_ns <= s.range_start_ns
                     AND s.range_start_ns < q.end_ns) AS in_warm_request,
           s.wall_ns > 1.5 * MEDIAN(s.wall_ns) OVER (PARTITION BY s.pid ORDER BY s.step
                                                  ROWS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING) AS slow
    FROM clocked AS s
),
lead AS (  -- a slow step counts only while every earlier step of its process was slow too
    SELECT *, BOOL_AND(COALESCE(slow, false)) OVER (PARTITION BY pid ORDER BY step ROWS UNBOUNDED PRECEDING) AS slow_leading,
           BOOL_AND(in_warm_range) OVER () AS all_warm
    FROM flagged
),
stepped AS (
    SELECT step, name, source, pid, tid, start_ns, end_ns, wall_ns, range_wall_ns, is_ahead, range_start_ns, range_end_ns,
           CASE WHEN in_warm_range AND NOT all_warm THEN 'warmup_range'
                WHEN in_warm_request THEN 'slow_leading_request'
                WHEN slow_leading THEN 'slow_leading_step' END AS excluded_because
    FROM lead
),
busiest AS (  -- without steps: the thread that launched the most GPU ops (both sides empty when there are steps,
    -- so that the join is not built for nothing)
    SELECT rt.pid, rt.tid
    FROM (SELECT runtime_id FROM gpu_op WHERE NOT EXISTS (SELECT 1 FROM steps)) AS o
    JOIN (SELECT runtime_id, pid, tid FROM runtime WHERE NOT EXISTS (SELECT 1 FROM steps)) AS rt
      ON rt.runtime_id = o.runtime_id
    GROUP BY rt.pid, rt.tid ORDER BY COUNT(*) DESC, rt.pid, rt.tid LIMIT 1
),
gpu_span AS (
    SELECT 0 AS step, 'GPU activity' AS name, 'gpu_span' AS source, b.pid, b.tid,
           (SELECT MIN(start_ns) FROM gpu_op) AS start_ns, (SELECT MAX(end_ns) FROM gpu_op) AS end_ns
    FROM busiest AS b
    WHERE NOT EXISTS (SELECT 1 FROM steps)
)
SELECT step, name, source, pid, tid, start_ns, end_ns, wall_ns,
       excluded_because IS NULL AS analysed, excluded_because,
       CASE WHEN is_ahead THEN 'period' ELSE 'range' END AS clock, range_wall_ns, range_start_ns, range_end_ns
FROM stepped
UNION ALL
SELECT step, name, source, pid, tid, start_ns, end_ns, end_ns - start_ns, true, NULL, 'range', end_ns - start_ns,
       start_ns, end_ns
FROM gpu_span
ORDER BY step, pid;
