-- nsysql: findings.straggler v3
-- purpose: Finding: one rank arrives late at the collectives and the others wait for it, spinning in their NCCL kernels: who is late, how long the others wait, and what the late rank did meanwhile.
-- requires: analysis.steady_steps, analysis.comm, analysis.comm_waits, analysis.step_breakdown, macros.human_ns_each, macros.plural_s
-- params: $min_wait_pct DOUBLE default 5 (fires when the waiting ranks' median exposed wait is at least this share of their analysed steps' wall time, %), $min_ns_per_step BIGINT default 100000 (and at least this much per analysed step, ns)
-- notes: Over the analysed steps of a job of several ranks (analysis.comm: one export of several processes, or
--   the exports of one job with their collectives matched). The straggler of a step is analysis.comm's (the rank
--   with the largest late_ns); the finding names the rank that is the straggler in most steps (the lowest rank on
--   a tie) and, in the where, every other rank that was in some step. Waiting ranks = all the others (named in runs: `0-20, 22-63`).
--   recoverable_ns = the median over the waiting ranks of their exposed_wait_ns summed over the analysed steps:
--   the time they spend only waiting, which a straggler arriving with the first rank would give back (their steps
--   end together with the straggler's, so the job's step time shrinks by as much at most).
--   Evidence: at how many of its matched collectives per step the rank arrives last (analysis.comm_waits:
--   start = the collective's last arrival) and how far after the first rank (late_ns per step); and, over the
--   steps it was the straggler, its step time breakdown (analysis.step_breakdown) against the mean of the other
--   ranks in the same steps: the two categories it spends most more time in (data loading, its own code on the
--   CPU, CUDA API calls, OS waits, copies) and its compute kernel time against theirs (whether its GPU was the
--   slow part). Ranks are (rank, pid); across exports of one job, pids must differ (processes of one host do).
-- columns:
--   rule | VARCHAR | text (straggler)
--   title | VARCHAR | text
--   where | VARCHAR | text (the late rank, its steps, the waiting ranks)
--   evidence | VARCHAR | text (numbers in ms, %)
--   action | VARCHAR | text
--   recoverable_ns | BIGINT | ns (upper bound of wall time recoverable, total over the analysed steps)
--   recoverable_pct | DOUBLE | pct of the waiting ranks' analysed steps' wall time (median rank) | 1
WITH
c AS (SELECT * FROM comm WHERE analysed),
strag AS (
    SELECT rank, pid, MIN(device_id) AS device_id, COUNT(*) AS steps FROM c WHERE straggler GROUP BY rank, pid
),
main AS (SELECT * FROM strag ORDER BY steps DESC, rank, pid LIMIT 1),
others_late AS (  -- the other ranks that were the straggler of some step
    SELECT string_agg(printf('rank %d in %d', rank, steps), ', ' ORDER BY rank) AS text
    FROM strag WHERE (rank, pid) NOT IN (SELECT (rank, pid) FROM main)
),
step_count AS (SELECT COUNT(DISTINCT step) AS n FROM c),
waiting AS (  -- the other ranks: their exposed wait over the analysed steps
    SELECT rank, pid, SUM(exposed_wait_ns) AS wait_ns, SUM(wall_ns) AS wall_ns, COUNT(*) AS steps
    FROM c WHERE (rank, pid) NOT IN (SELECT (rank, pid) FROM main) GROUP BY rank, pid
),
rank_runs AS (  -- consecutive waiting ranks as one run, so that thousands of ranks still make one short line
    SELECT MIN(rank) AS lo, MAX(rank) AS hi, COUNT(*) AS k
    FROM (SELECT rank, rank - ROW_NUMBER() OVER (ORDER BY rank) AS run FROM (SELECT DISTINCT rank FROM waiting))
    GROUP BY run
),
rank_text AS (
    SELECT string_agg(CASE WHEN k >= 3 THEN printf('%d-%d', lo, hi) WHEN k = 2 THEN printf('%d, %d', lo, hi)
                           ELSE CAST(lo AS VARCHAR) END, ', ' ORDER BY lo) AS ranks
    FROM rank_runs
),
recover AS (
    SELECT FLOOR(quantile_cont(wait_ns, 0.5)) AS recoverable_ns, quantile_cont(wall_ns, 0.5) AS wall_ns,
           quantile_cont(wait_ns / steps, 0.5) AS per_step_ns,
           (SELECT ranks FROM rank_text) AS ranks, COUNT(*) AS n
    FROM waiting
),
arrivals AS (  -- the late rank at its matched collectives in the analysed steps
    SELECT COUNT(*) FILTER (WHERE w.start_ns = w.last_start_ns) AS last, COUNT(*) AS total,
           SUM(w.late_ns) AS late_ns, COUNT(DISTINCT w.step) AS steps
    FROM comm_waits AS w JOIN main AS m ON m.rank = w.rank AND m.pid = w.pid
    WHERE w.analysed AND w.matched
),
late_steps AS (SELECT step FROM c WHERE straggler AND (rank, pid) IN (SELECT (rank, pid) FROM main)),
bd AS (  -- the breakdown rows of the steps where the main rank was late, with their rank
    SELECT b.*, (b.pid = (SELECT pid FROM main)) AS is_main
    FROM step_breakdown AS b
    WHERE b.step IN (SELECT step FROM late_steps) AND b.pid IN (SELECT pid FROM c)
),
delta AS (  -- per category: the late rank's mean per step minus the others' mean
    SELECT label, AVG(v) FILTER (WHERE is_main) - AVG(v) FILTER (WHERE NOT is_main) AS d,
           AVG(v) FILTER (WHERE is_main) AS mine, AVG(v) FILTER (WHERE NOT is_main) AS theirs
    FROM (SELECT is_main, UNNEST(['data loading', 'its own code (CPU)', 'CUDA API calls', 'OS waits',
                                  'copies', 'compute kernels']) AS label,
                 UNNEST([dataloader_ns, cpu_exec_ns, runtime_ns, other_ns, memcpy_ns, kernel_ns]) AS v
          FROM bd)
    GROUP BY label
),
top_delta AS (
    SELECT string_agg(printf('%s +%s', label, human_ns_each([d])[1]), ', ' ORDER BY d DESC) AS text
    FROM (SELECT * FROM delta WHERE label <> 'compute kernels' AND d > 0 ORDER BY d DESC LIMIT 2)
),
gpu AS (SELECT mine, theirs FROM delta WHERE label = 'compute kernels'),
fired AS (
    SELECT m.*, r.*, a.last, a.total, a.late_ns, s.n AS analysed_steps, o.text AS others_text, t.text AS why,
           g.mine AS gpu_mine, g.theirs AS gpu_theirs
    FROM main AS m, recover AS r, arrivals AS a, step_count AS s, others_late AS o, top_delta AS t, gpu AS g
    WHERE r.n > 0 AND r.recoverable_ns > 0 AND 100.0 * r.recoverable_ns >= $min_wait_pct * r.wall_ns
      AND r.per_step_ns >= $min_ns_per_step
),
shown AS (
    SELECT *, human_ns_each([CAST(per_step_ns AS BIGINT), CAST(late_ns / GREATEST(analysed_steps, 1) AS BIGINT),
                             CAST(gpu_mine AS BIGINT), CAST(gpu_theirs AS BIGINT)]) AS d
    FROM fired
)
SELECT 'straggler' AS rule,
       printf('Rank %d arrives late; rank%s %s wait%s %s per step (%.1f%%)', rank, CASE WHEN n > 1 THEN 's' ELSE '' END,
              ranks, CASE WHEN n > 1 THEN '' ELSE 's' END, d[1], 100.0 * recoverable_ns / wall_ns) AS title,
       printf('rank %d (pid %d, GPU %d), last in %d of %d analysed step%s%s; waiting: rank%s %s', rank, pid, device_id,
              steps, analysed_steps, plural_s(analysed_steps),
              CASE WHEN others_text IS NULL THEN '' ELSE '; also last: ' || others_text END,
              CASE WHEN n > 1 THEN 's' ELSE '' END, ranks) AS "where",
       printf('Rank %d arrives last at %s of %s collectives per step, %s after the first rank (summed per step). '
              || 'The other rank%s wait%s for it %s per step with no compute running (median rank, %.1f%% of the step '
              || 'wall time), spinning in NCCL kernels. In the steps it was late, against the other ranks, rank %d spends %s; '
              || 'its compute kernels ran %s per step (the others %s)%s.',
              rank, round(last / GREATEST(analysed_steps, 1), 1)::VARCHAR, round(total / GREATEST(analysed_steps, 1), 1)::VARCHAR,
              d[2], CASE WHEN n > 1 THEN 's' ELSE '' END, CASE WHEN n > 1 THEN '' ELSE 's' END, d[1],
              100.0 * recoverable_ns / wall_ns, rank, COALESCE(why, 'no more time in any host category'),
              d[3], d[4],
              CASE WHEN gpu_mine > 1.1 * gpu_theirs THEN ': its GPU is slower' ELSE ': not its GPU' END) AS evidence,
       printf('Find what makes rank %d late (`nsysql steps` and `nsysql gaps` on its process): give every rank the same '
              || 'work (even batch sizes and sequence lengths, no rank-0-only logging, checkpointing or evaluation inside '
              || 'the step), enough DataLoader workers on every rank, no host synchronization on the late rank; '
              || 'overlapping or tuning communication does not help while the others wait.', rank) AS action,
       CAST(recoverable_ns AS BIGINT) AS recoverable_ns,
       100.0 * recoverable_ns / wall_ns AS recoverable_pct
FROM shown
ORDER BY recoverable_ns DESC;
