-- nsysql: analysis._kernel_iterations v1
-- purpose: Iterations found in the GPU op sequence alone, for a capture whose NVTX ranges make no steps: the period of the repeating op-name sequence on the busiest launching thread, cut where the CPU pauses longest.
-- requires: gpu_op, runtime, analysis._nvtx_steps
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
-- columns:
--   pid | BIGINT | id
--   tid | BIGINT | id
--   name | VARCHAR | text (the delimiting op's name)
--   source | VARCHAR | text (kernel-pattern or graph-launch)
--   period_ops | BIGINT | count (ops in one iteration)
--   start_ns | BIGINT | ns timestamp (the delimiter's launching call's start)
--   end_ns | BIGINT | ns timestamp (the end of the launching call of the iteration's last op)
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
    SELECT *, GREATEST(api_start_ns - LAG(api_end_ns) OVER (PARTITION BY pid ORDER BY pos), 0) AS pause_ns,
           pos - LAG(pos) OVER (PARTITION BY pid, op_name ORDER BY pos) AS since_same
    FROM seq
),
lags AS (  -- the lags at which some name recurs at least twice
    SELECT pid, since_same AS lag FROM paused WHERE since_same IS NOT NULL
    GROUP BY pid, op_name, since_same HAVING COUNT(*) >= 2
),
lag_list AS (SELECT DISTINCT pid, lag FROM lags),
matches AS (  -- per candidate lag, the positions whose name is the one `lag` positions before
    SELECT c.pid, c.lag, COUNT(*) AS repeated
    FROM lag_list AS c
    JOIN seq AS a ON a.pid = c.pid
    JOIN seq AS b ON b.pid = a.pid AND b.pos = a.pos - c.lag AND b.op_name = a.op_name
    GROUP BY c.pid, c.lag
),
period AS (
    SELECT pid, arg_min(lag, (-repeated, lag)) AS p FROM matches WHERE repeated >= 2 GROUP BY pid
),
marked AS (  -- in the repeating part: the name recurs P positions before it, or the op P positions later does
    SELECT s.*, p.p, before.pos IS NOT NULL OR later.pos IS NOT NULL AS repeats
    FROM paused AS s
    JOIN period AS p ON p.pid = s.pid
    LEFT JOIN seq AS before ON before.pid = s.pid AND before.pos = s.pos - p.p AND before.op_name = s.op_name
    LEFT JOIN seq AS later ON later.pid = s.pid AND later.pos = s.pos + p.p AND later.op_name = s.op_name
),
delimiter AS (  -- of the names recurring exactly P apart, the one after the longest median pause
    SELECT pid, arg_min(op_name, (-pause, first_pos)) AS op_name FROM (
        SELECT pid, op_name, MEDIAN(pause_ns) AS pause, MIN(pos) AS first_pos
        FROM marked WHERE repeats AND since_same = p
        GROUP BY pid, op_name)
    GROUP BY pid
),
runs AS (  -- how many of the P ops from each position on are in the repeating part
    SELECT *, SUM(CASE WHEN repeats THEN 1 ELSE 0 END) OVER (PARTITION BY pid ORDER BY pos) AS repeated_so_far
    FROM marked
),
starts AS (
    SELECT r.pid, r.tid, r.op_name AS name, r.op_kind, r.p, r.pos, r.api_start_ns, r.repeated_so_far
    FROM runs AS r JOIN delimiter AS d ON d.pid = r.pid AND d.op_name = r.op_name
    WHERE r.repeats
),
iterations AS (
    SELECT s.pid, s.tid, s.name, s.op_kind, s.p, s.pos, s.api_start_ns, e.api_end_ns
    FROM starts AS s
    JOIN runs AS e ON e.pid = s.pid AND e.pos = s.pos + s.p - 1
    WHERE e.repeated_so_far - s.repeated_so_far = s.p - 1
),
kept AS (  -- iterations do not overlap: an occurrence inside the previous kept iteration starts none
    SELECT *, pos - LAG(pos) OVER (PARTITION BY pid ORDER BY pos) AS after
    FROM iterations
)
SELECT pid, tid, name, CASE WHEN op_kind = 'graph' THEN 'graph-launch' ELSE 'kernel-pattern' END AS source,
       p AS period_ops, api_start_ns AS start_ns, api_end_ns AS end_ns
FROM kept
WHERE after IS NULL OR after >= p
ORDER BY pid, start_ns;
