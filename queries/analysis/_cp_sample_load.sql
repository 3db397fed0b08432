-- nsysql: analysis._cp_sample_load v1
-- purpose: How much of the critical-path graph a sample of the last analysed steps holds (nsysql/answers/critical_path.py's budget): per analysed step number, the CUDA calls and GPU ops starting in the span of that step and every later one.
-- requires: analysis.steady_steps, runtime, gpu_op
-- params: none
-- notes: The span of steps N and later, over every process, runs from their earliest start minus their longest
--   wall (the work queued before a step that runs into it) to their latest end, as critical_path.span says; the
--   events are those of analysis._cp_calls and analysis._cp_ops (every process with steps), counted by start.
--   Counted here so that choosing the sample reads no graph query over the whole capture, by the millisecond of
--   each start (a hash join, no sort of every start), exact all the same.
-- columns:
--   step | BIGINT | id (step number)
--   events | BIGINT | count (CUDA calls and GPU ops starting in the span of this step and the later ones)
WITH
procs AS (SELECT DISTINCT pid FROM steady_steps),
numbers AS (
    SELECT step, MIN(range_start_ns) AS first_start, MAX(range_wall_ns) AS longest, MAX(range_end_ns) AS last_end
    FROM steady_steps WHERE analysed GROUP BY step
),
spans AS (
    SELECT step, MIN(first_start) OVER later - MAX(longest) OVER later AS lo, MAX(last_end) OVER later AS hi
    FROM numbers
    WINDOW later AS (ORDER BY step DESC ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
),
events AS (
    SELECT start_ns, start_ns // 1000000 AS ms FROM (
        SELECT start_ns FROM runtime WHERE pid IN (SELECT pid FROM procs)
        UNION ALL
        SELECT start_ns FROM gpu_op WHERE pid IN (SELECT pid FROM procs))
),
through_ms AS (  -- per millisecond with events, how many start in it or earlier
    SELECT ms, SUM(COUNT(*)) OVER (ORDER BY ms) AS n FROM events GROUP BY ms
),
probes AS (  -- N(< t) for t = lo and t = hi + 1 (then N(<= hi)): whole earlier milliseconds, then t's own
    SELECT step, 'lo' AS side, lo AS t, lo // 1000000 AS ms FROM spans
    UNION ALL
    SELECT step, 'hi', hi + 1, (hi + 1) // 1000000 FROM spans
),
earlier AS (
    SELECT p.step, p.side, COALESCE(c.n, 0) AS n FROM probes AS p ASOF LEFT JOIN through_ms AS c ON p.ms > c.ms
),
same_ms AS (  -- a join on the millisecond: only the probes' own milliseconds' events are read
    SELECT p.step, p.side, COUNT(e.start_ns) AS n
    FROM probes AS p LEFT JOIN events AS e ON e.ms = p.ms AND e.start_ns < p.t
    GROUP BY p.step, p.side
),
below AS (SELECT step, side, e.n + s.n AS n FROM earlier AS e JOIN same_ms AS s USING (step, side))
SELECT h.step, CAST(h.n - l.n AS BIGINT) AS events
FROM below AS h JOIN below AS l ON l.step = h.step AND l.side = 'lo'
WHERE h.side = 'hi'
ORDER BY h.step DESC;
