-- nsysql: analysis.requests v2
-- purpose: Per inference request: its prefill, the time to the first token's GPU end (TTFT as the trace sees it), its decode steps, the time per output token (mean, p50, p99), tokens per second and the share of decode time the GPU is idle.
-- requires: analysis.steps, analysis.steady_steps, analysis._step_levels, analysis._kernel_iterations, analysis.structure, gpu_op, runtime
-- params: none
-- notes: Requests exist where the steps are decode steps inside a level of their own (analysis.structure's
--   step_rule `decode steps`, or a step level chosen otherwise whose parent level holds the steps): each instance
--   of the step level's parent level (`request` for `request/decode_step`) is a request, warm-up ones too (warmup
--   true: inside a warm-up range). The prefill is the request's child range named `prefill` (any case; or
--   `prompt`, `encode`, `context`); ttft_ns runs from the request's start to the latest GPU end of the ops launched
--   inside the prefill range (the first token is its output), NULL without a prefill range. A request's decode
--   steps are the steps whose range lies inside it; a step's time is its time in analysis.steady_steps (its period
--   on the GPU's clock when the CPU runs ahead), and tpot_* are the mean, median and 99th percentile (continuous)
--   of those times. tokens_per_s = decode steps / their total time (one token per sequence of the batch a step;
--   the batch size is not in the trace). decode_gpu_idle_pct = 100 x (1 - the steps' GPU busy time / their
--   total time), at least 0.
--   Without NVTX, the requests are those analysis._kernel_iterations finds in the op sequence (an iteration
--   holding a head, the prefill, then a run of decode steps): the prefill runs from the request's start (its
--   first op's launching call) to the first decode step's start, ttft_ns to the latest GPU end of the ops
--   launched in that span, and a request is warm-up when its steps are (analysis.steady_steps'
--   `slow_leading_request`).
-- columns:
--   request | BIGINT | index (1, 2, ... in start order within the process)
--   pid | BIGINT | id
--   warmup | BOOLEAN | flag (inside a warm-up range)
--   start_ns | BIGINT | ns timestamp
--   wall_ns | BIGINT | ns (the request's range)
--   prefill_ns | BIGINT | ns (the prefill range's duration; NULL without one)
--   ttft_ns | BIGINT | ns (request start to the first token's GPU end)
--   decode_steps | BIGINT | count
--   decode_ns | BIGINT | ns (the decode steps' total time)
--   tpot_mean_ns | BIGINT | ns
--   tpot_p50_ns | BIGINT | ns
--   tpot_p99_ns | BIGINT | ns
--   tokens_per_s | DOUBLE | per second | 1
--   decode_gpu_idle_pct | DOUBLE | pct | 1
WITH
step_level AS (  -- per process, the steps' level and its parent level
    SELECT pid, step_level AS level,
           CASE WHEN contains(step_level, '/') THEN regexp_replace(step_level, '/[^/]*$', '') END AS parent
    FROM structure WHERE step_source = 'range'
),
range_req AS (
    SELECT l.range_id, l.pid, l.tid, l.in_warm, l.start_ns, l.end_ns,
           ROW_NUMBER() OVER (PARTITION BY l.pid ORDER BY l.start_ns, l.range_id) AS request
    FROM _step_levels AS l JOIN step_level AS s ON s.pid = l.pid AND s.parent = l.level
),
kernel_req AS (  -- requests found in the op sequence: the prefill is the head before the first decode step
    SELECT pid, tid, request, MIN(request_start_ns) AS start_ns, MAX(request_end_ns) AS end_ns,
           MIN(start_ns) AS first_step_ns
    FROM _kernel_iterations WHERE request IS NOT NULL
    GROUP BY pid, tid, request
),
req AS (
    SELECT range_id, pid, tid, in_warm, start_ns, end_ns, request FROM range_req
    UNION ALL
    SELECT NULL, k.pid, k.tid,
           EXISTS (SELECT 1 FROM steady_steps AS w
                   WHERE w.pid = k.pid AND w.excluded_because = 'slow_leading_request'
                     AND w.range_start_ns >= k.start_ns AND w.range_start_ns < k.end_ns),
           k.start_ns, k.end_ns, k.request
    FROM kernel_req AS k
),
prefill AS (
    SELECT pid, request, start_ns, first_step_ns AS end_ns FROM kernel_req
    UNION ALL
    SELECT r.pid, r.request, MIN(p.start_ns) AS start_ns, MAX(p.end_ns) AS end_ns
    FROM range_req AS r
    JOIN step_level AS s ON s.pid = r.pid
    JOIN _step_levels AS p ON p.pid = r.pid AND p.tid = r.tid AND starts_with(p.level, s.parent || '/')
      AND regexp_matches(p.text, '^(prefill|prompt|encode|context)([ _-].*)?$', 'i')
      AND p.start_ns >= r.start_ns AND p.end_ns <= r.end_ns
    GROUP BY r.pid, r.request
),
first_token AS (  -- the latest GPU end of the ops launched inside the prefill
    SELECT p.pid, p.request, MAX(o.end_ns) AS gpu_end_ns
    FROM prefill AS p
    JOIN runtime AS rt ON rt.pid = p.pid AND rt.start_ns >= p.start_ns AND rt.start_ns < p.end_ns
      AND rt.end_ns <= p.end_ns
    JOIN gpu_op AS o ON o.runtime_id = rt.runtime_id
    GROUP BY p.pid, p.request
),
decode AS (
    SELECT r.pid, r.request, COUNT(*) AS decode_steps, SUM(w.wall_ns) AS decode_ns,
           AVG(w.wall_ns) AS tpot_mean, MEDIAN(w.wall_ns) AS tpot_p50,
           QUANTILE_CONT(w.wall_ns, 0.99) AS tpot_p99, SUM(s.gpu_busy_ns) AS busy_ns
    FROM req AS r
    JOIN steps AS s ON s.pid = r.pid AND s.tid = r.tid AND s.start_ns >= r.start_ns AND s.end_ns <= r.end_ns
    JOIN steady_steps AS w ON w.pid = s.pid AND w.step = s.step
    GROUP BY r.pid, r.request
)
SELECT r.request, r.pid, r.in_warm AS warmup, r.start_ns, r.end_ns - r.start_ns AS wall_ns,
       p.end_ns - p.start_ns AS prefill_ns, f.gpu_end_ns - r.start_ns AS ttft_ns,
       COALESCE(d.decode_steps, 0) AS decode_steps, COALESCE(d.decode_ns, 0) AS decode_ns,
       CAST(round(d.tpot_mean) AS BIGINT) AS tpot_mean_ns, CAST(round(d.tpot_p50) AS BIGINT) AS tpot_p50_ns,
       CAST(round(d.tpot_p99) AS BIGINT) AS tpot_p99_ns,
       d.decode_steps * 1e9 / NULLIF(d.decode_ns, 0) AS tokens_per_s,
       GREATEST(0.0, 100.0 * (1 - d.busy_ns / NULLIF(d.decode_ns, 0))) AS decode_gpu_idle_pct
FROM req AS r
LEFT JOIN prefill AS p ON p.pid = r.pid AND p.request = r.request
LEFT JOIN first_token AS f ON f.pid = r.pid AND f.request = r.request
LEFT JOIN decode AS d ON d.pid = r.pid AND d.request = r.request
ORDER BY r.pid, r.request;
