-- nsysql: analysis._kernel_iterations v2
-- purpose: Iterations found in the GPU op sequence alone, for a capture whose NVTX ranges make no steps: the period of the repeating op-name sequence on the busiest launching thread, cut where the CPU pauses longest.
-- requires: gpu_op, runtime, kernel, thread, analysis._nvtx_steps
-- params: none
-- notes: Per process, on the thread that launched the most GPU ops (kernels, copies, sets, CUDA graphs traced at
--   graph level), the ops in launch order are the sequence. A lag P is a period candidate when some op name
--   recurs P ops later at least twice; the period is the lag under which the most positions repeat the name P
--   positions before (the smallest such lag on a tie), at least 2 positions. An op is in the repeating part when
--   it or the op P positions later has its name P positions before; load phases (weight uploads, module loading),
--   a prefill between decode loops and autotuning runs do not repeat and stay out. The iteration starts at the
--   delimiter: of the op names that recur exactly P positions apart, the one launched after the longest median
--   CPU pause since the previous launch (the Python loop between iterations), earliest in the sequence on a tie.
--   Each occurrence of it in the repeating part whose next P - 1 ops are in it too starts one iteration of P ops:
--   from its launching call's start to the end of the P-th op's launching call. source is `graph-launch` when
--   the delimiter is a CUDA graph's launch, else `kernel-pattern`. Empty when NVTX ranges make steps
--   (analysis._nvtx_steps has rows), or when nothing repeats.
--   Requests (an inference loop): when inside each iteration a shorter sequence of Q ops (Q at most P/4) repeats
--   at least 4 times in one run after a head of ops that do not repeat it (the prefill), and those runs hold at
--   least 3/4 of the iterations' ops, the iteration is a request and its runs' Q-op iterations are the steps
--   (the decode steps): Q is found as P is, from the distances between consecutive launches of one name shorter
--   than P/4, and a run's steps start at the place of its period after the longest median CPU pause in that run.
--   A process with a PyTorch autograd thread (`pt_autograd_*`: it ran a backward) trains and has no requests
--   (gradient accumulation repeats micro-batches inside a step the same way). request numbers the requests per
--   process (NULL for iterations that are not decode steps); request_start_ns/request_end_ns are the request's
--   bounds, as an iteration's.
-- columns:
--   pid | BIGINT | id
--   tid | BIGINT | id
--   name | VARCHAR | text (the delimiting op's name: a kernel's short name)
--   source | VARCHAR | text (kernel-pattern or graph-launch)
--   period_ops | BIGINT | count (ops in one iteration)
--   start_ns | BIGINT | ns timestamp (the delimiter's launching call's start)
--   end_ns | BIGINT | ns timestamp (the end of the launching call of the iteration's last op)
--   request | BIGINT | index (the request holding this decode step, 1, 2, ... per process; NULL when none)
--   request_start_ns | BIGINT | ns timestamp (NULL when not in a request)
--   request_end_ns | BIGINT | ns timestamp
--   request_ops | BIGINT | count (GPU ops per request, P; NULL when not in a request)
WITH
launches AS (
    SELECT rt.pid, rt.tid, rt.start_ns AS api_start_ns, rt.end_ns AS api_end_ns, o.op_name, o.op_kind, o.start_ns
    FROM gpu_op AS o JOIN runtime AS rt ON rt.runtime_id = o.runtime_id
    WHERE NOT EXISTS (SELECT 1 FROM _nvtx_steps)
),
busiest AS (
    SELECT pid, tid FROM (
        SELECT pid, tid, ROW_NUMBER() OVER (PARTITION BY pid ORDER BY COUNT(*) DESC, tid) AS n
        FROM launches GROUP BY pid, tid)
    WHERE n = 1
),
seq AS (
    SELECT l.*, ROW_NUMBER() OVER (PARTITION BY l.pid ORDER BY l.api_start_ns, l.start_ns, l.op_name) AS pos
    FROM launches AS l JOIN busiest AS b ON b.pid = l.pid AND b.tid = l.tid
),
paused AS (  -- the CPU's pause before each launch: from the previous launching call's end
    SELECT *, GREATEST(api_start_ns - LAG(api_end_ns) OVER (PARTITION BY pid ORDER BY pos), 0) AS pause_ns
    FROM seq
),
rare AS (  -- names launched 2 to 64 times: their recurrences say which lags to try
    SELECT pid, op_name FROM seq GROUP BY pid, op_name HAVING COUNT(*) BETWEEN 2 AND 64
),
pairs AS (
    SELECT a.pid, b.pos - a.pos AS lag, COUNT(*) AS times
    FROM seq AS a
    JOIN rare AS r ON r.pid = a.pid AND r.op_name = a.op_name
    JOIN seq AS b ON b.pid = a.pid AND b.op_name = a.op_name AND b.pos > a.pos
    GROUP BY a.pid, b.pos - a.pos
),
lag_list AS (  -- the 12 most frequent lags and the 12 that would cover the most ops
    SELECT DISTINCT pid, lag FROM (
        SELECT pid, lag, ROW_NUMBER() OVER (PARTITION BY pid ORDER BY times DESC, lag) AS by_times,
               ROW_NUMBER() OVER (PARTITION BY pid ORDER BY times * lag DESC, lag) AS by_cover
        FROM pairs)
    WHERE by_times <= 12 OR by_cover <= 12
),
matched AS (  -- per candidate lag, the pairs of positions `lag` apart with the same name
    SELECT c.pid, c.lag, a.pos AS later, b.pos AS earlier
    FROM lag_list AS c
    JOIN seq AS a ON a.pid = c.pid
    JOIN seq AS b ON b.pid = a.pid AND b.pos = a.pos - c.lag AND b.op_name = a.op_name
),
matches AS (  -- the ops each lag explains: in such a pair at either end
    SELECT pid, lag, COUNT(DISTINCT pos) AS repeated
    FROM (SELECT pid, lag, later AS pos FROM matched UNION ALL SELECT pid, lag, earlier FROM matched)
    GROUP BY pid, lag
),
outer_lag AS (  -- the longest lag that explains at least 3/4 as many ops as the best one: the outermost sequence
    SELECT m.pid, arg_max(m.lag, m.lag) AS lag, arg_max(m.repeated, m.lag) AS repeated
    FROM matches AS m JOIN (SELECT pid, MAX(repeated) AS top FROM matches GROUP BY pid) AS b ON b.pid = m.pid
    WHERE m.repeated >= 2 AND m.repeated >= 0.75 * b.top
    GROUP BY m.pid
),
period AS (  -- its shortest divisor among the lags that explains nearly as much (two iterations are one, twice)
    SELECT o.pid, MIN(m.lag) AS p
    FROM outer_lag AS o JOIN matches AS m ON m.pid = o.pid AND o.lag % m.lag = 0 AND m.repeated >= 0.9 * o.repeated
    GROUP BY o.pid
),
marked AS (  -- in the repeating part: the name recurs P positions before it, or the op P positions later does
    SELECT s.*, p.p, before.pos IS NOT NULL OR later.pos IS NOT NULL AS repeats
    FROM paused AS s
    JOIN period AS p ON p.pid = s.pid
    LEFT JOIN seq AS before ON before.pid = s.pid AND before.pos = s.pos - p.p AND before.op_name = s.op_name
    LEFT JOIN seq AS later ON later.pid = s.pid AND later.pos = s.pos + p.p AND later.op_name = s.op_name
),
runs AS (  -- runs of the repeating part (a new one after each op that repeats nothing), and each op's place in
    -- its run's period
    SELECT *, pos - MIN(pos) OVER (PARTITION BY pid, run) AS place
    FROM (SELECT *, SUM(CASE WHEN repeats THEN 0 ELSE 1 END) OVER (PARTITION BY pid ORDER BY pos) AS run,
                 SUM(CASE WHEN repeats THEN 1 ELSE 0 END) OVER (PARTITION BY pid ORDER BY pos) AS repeated_so_far
          FROM marked)
    WHERE repeats
),
phase AS (  -- where an iteration starts: the place in the period after the longest median pause
    SELECT pid, arg_min(place, (-pause, place)) AS phase FROM (
        SELECT pid, place % p AS place, MEDIAN(pause_ns) AS pause FROM runs GROUP BY pid, place % p)
    GROUP BY pid
),
starts AS (
    SELECT r.pid, r.tid, r.op_name AS name, r.op_kind, r.p, r.pos, r.api_start_ns, r.repeated_so_far
    FROM runs AS r JOIN phase AS f ON f.pid = r.pid AND r.place % r.p = f.phase
),
iterations AS (  -- an iteration: P ops from a start, every one in the repeating part
    SELECT s.pid, s.tid, s.name, s.op_kind, s.p, s.pos, s.api_start_ns, e.api_end_ns,
           ROW_NUMBER() OVER (PARTITION BY s.pid ORDER BY s.pos) AS n
    FROM starts AS s
    JOIN marked AS e ON e.pid = s.pid AND e.pos = s.pos + s.p - 1
    JOIN (SELECT pid, pos, SUM(CASE WHEN repeats THEN 1 ELSE 0 END) OVER (PARTITION BY pid ORDER BY pos) AS upto
          FROM marked) AS u ON u.pid = e.pid AND u.pos = e.pos
    WHERE u.upto - s.repeated_so_far = s.p - 1
),
-- Inside the iterations: a shorter period Q (decode steps inside requests), found as P is
inside AS (  -- the ops of the iterations, each with its iteration (the latest start at or before it: a window,
    -- not a range join)
    SELECT * EXCLUDE (start_p) FROM (
        SELECT q.*, MAX(i.n) OVER w AS outer_n, MAX(i.pos) OVER w AS outer_pos, MAX(i.p) OVER w AS start_p
        FROM seq AS q LEFT JOIN iterations AS i ON i.pid = q.pid AND i.pos = q.pos
        WINDOW w AS (PARTITION BY q.pid ORDER BY q.pos ROWS UNBOUNDED PRECEDING))
    WHERE pos <= outer_pos + start_p - 1
),
gaps_in AS (  -- the distances between consecutive launches of one name inside an iteration, up to P/4
    SELECT g.pid, g.lag, COUNT(*) AS times FROM (
        SELECT pid, p.p, pos - LAG(pos) OVER (PARTITION BY pid, outer_n, op_name ORDER BY pos) AS lag
        FROM inside JOIN period AS p USING (pid)) AS g
    WHERE g.lag IS NOT NULL AND 4 * g.lag <= g.p
    GROUP BY g.pid, g.lag
),
inner_lags AS (
    SELECT DISTINCT pid, lag FROM (
        SELECT pid, lag, ROW_NUMBER() OVER (PARTITION BY pid ORDER BY times DESC, lag) AS by_times,
               ROW_NUMBER() OVER (PARTITION BY pid ORDER BY times * lag DESC, lag) AS by_cover
        FROM gaps_in)
    WHERE by_times <= 12 OR by_cover <= 12
),
inner_matched AS (
    SELECT c.pid, c.lag, a.pos AS later, b.pos AS earlier
    FROM inner_lags AS c
    JOIN inside AS a ON a.pid = c.pid
    JOIN inside AS b ON b.pid = a.pid AND b.outer_n = a.outer_n AND b.pos = a.pos - c.lag AND b.op_name = a.op_name
),
inner_matches AS (
    SELECT pid, lag, COUNT(DISTINCT pos) AS repeated
    FROM (SELECT pid, lag, later AS pos FROM inner_matched UNION ALL SELECT pid, lag, earlier FROM inner_matched)
    GROUP BY pid, lag
),
inner_outer AS (
    SELECT m.pid, arg_max(m.lag, m.lag) AS lag, arg_max(m.repeated, m.lag) AS repeated
    FROM inner_matches AS m
    JOIN (SELECT pid, MAX(repeated) AS top FROM inner_matches GROUP BY pid) AS b ON b.pid = m.pid
    WHERE m.repeated >= 2 AND m.repeated >= 0.75 * b.top
    GROUP BY m.pid
),
inner_period AS (
    SELECT o.pid, MIN(m.lag) AS q
    FROM inner_outer AS o
    JOIN inner_matches AS m ON m.pid = o.pid AND o.lag % m.lag = 0 AND m.repeated >= 0.9 * o.repeated
    GROUP BY o.pid
),
inner_marked AS (  -- repeats Q positions before or after, in the same iteration
    SELECT s.pid, s.tid, s.op_name, s.op_kind, s.pos, s.api_start_ns, s.api_end_ns, s.outer_n, s.outer_pos, q.q,
           pa.pause_ns, before.pos IS NOT NULL OR later.pos IS NOT NULL AS repeats
    FROM inside AS s
    JOIN inner_period AS q ON q.pid = s.pid
    JOIN paused AS pa ON pa.pid = s.pid AND pa.pos = s.pos
    LEFT JOIN inside AS before ON before.pid = s.pid AND before.outer_n = s.outer_n AND before.pos = s.pos - q.q
                              AND before.op_name = s.op_name
    LEFT JOIN inside AS later ON later.pid = s.pid AND later.outer_n = s.outer_n AND later.pos = s.pos + q.q
                             AND later.op_name = s.op_name
),
inner_runs AS (  -- runs of ops repeating at Q, each with its first and last position
    SELECT *, MIN(pos) OVER w AS run_start, MAX(pos) OVER w AS run_end
    FROM (SELECT *, SUM(CASE WHEN repeats AND pos > outer_pos THEN 0 ELSE 1 END)
                      OVER (PARTITION BY pid ORDER BY pos) AS run  -- a new run at each iteration's start too
          FROM inner_marked)
    WHERE repeats
    WINDOW w AS (PARTITION BY pid, run)
),
long_runs AS (  -- the runs of at least 4 periods that start after their iteration's first op (a head before them)
    SELECT r.* FROM inner_runs AS r JOIN iterations AS i ON i.pid = r.pid AND i.n = r.outer_n
    WHERE r.run_end - r.run_start + 1 >= 4 * r.q AND r.run_start > i.pos
),
run_phase AS (  -- per run, the place in its period after the longest median pause
    SELECT pid, run, arg_min(place, (-pause, place)) AS phase FROM (
        SELECT pid, run, (pos - run_start) % q AS place, MEDIAN(pause_ns) AS pause
        FROM long_runs GROUP BY pid, run, (pos - run_start) % q)
    GROUP BY pid, run
),
decode AS (  -- a step: Q ops of a long run from a start at its run's phase
    SELECT r.pid, r.tid, r.op_name AS name, r.op_kind, r.q, r.pos, r.api_start_ns, e.api_end_ns, r.outer_n, r.run
    FROM long_runs AS r
    JOIN run_phase AS f ON f.pid = r.pid AND f.run = r.run AND (r.pos - r.run_start) % r.q = f.phase
    JOIN inner_marked AS e ON e.pid = r.pid AND e.pos = r.pos + r.q - 1
    WHERE r.pos + r.q - 1 <= r.run_end
),
inference AS (  -- the processes whose every iteration holds one long run and whose steps cover 3/4 of them
    SELECT i.pid
    FROM iterations AS i
    LEFT JOIN (SELECT pid, outer_n, COUNT(DISTINCT run) AS runs, SUM(q) AS ops FROM decode GROUP BY pid, outer_n)
      AS d ON d.pid = i.pid AND d.outer_n = i.n
    GROUP BY i.pid
    HAVING BOOL_AND(COALESCE(d.runs, 0) = 1) AND SUM(COALESCE(d.ops, 0)) >= 0.75 * SUM(i.p)
       AND i.pid NOT IN (SELECT pid FROM thread WHERE thread_name LIKE 'pt\_autograd%' ESCAPE '\')
),
found AS (
    SELECT i.pid, i.tid, i.name, CASE WHEN i.op_kind = 'graph' THEN 'graph-launch' ELSE 'kernel-pattern' END AS source,
           i.p AS period_ops, i.api_start_ns AS start_ns, i.api_end_ns AS end_ns, CAST(NULL AS BIGINT) AS request,
           CAST(NULL AS BIGINT) AS request_start_ns, CAST(NULL AS BIGINT) AS request_end_ns,
           CAST(NULL AS BIGINT) AS request_ops
    FROM iterations AS i
    WHERE i.pid NOT IN (SELECT pid FROM inference)
    UNION ALL
    SELECT d.pid, d.tid, d.name, CASE WHEN d.op_kind = 'graph' THEN 'graph-launch' ELSE 'kernel-pattern' END,
           d.q, d.api_start_ns, d.api_end_ns, d.outer_n, i.api_start_ns, i.api_end_ns, i.p
    FROM decode AS d
    JOIN iterations AS i ON i.pid = d.pid AND i.n = d.outer_n
    WHERE d.pid IN (SELECT pid FROM inference)
)
SELECT f.pid, f.tid, COALESCE(k.short_name, f.name) AS name, f.source, f.period_ops, f.start_ns, f.end_ns, f.request,
       f.request_start_ns, f.request_end_ns, f.request_ops
FROM found AS f
LEFT JOIN (SELECT kernel_name, MIN(short_name) AS short_name FROM kernel  -- a kernel's demangled name is long
           WHERE kernel_name IN (SELECT name FROM found) GROUP BY kernel_name) AS k ON k.kernel_name = f.name
ORDER BY f.pid, f.start_ns;
