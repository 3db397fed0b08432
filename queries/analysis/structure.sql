-- nsysql: analysis.structure v3
-- purpose: The program's structure as nsysql read it, one row per process: what a step is and how it was found, what was left out as warm-up, whether the CPU runs ahead of the GPU, micro-batches and recomputation in a step, and the program's kind.
-- requires: analysis.steps, analysis.steady_steps, analysis.step_candidates, analysis._kernel_iterations, gpu_op_attribution, user_range
-- params: none
-- notes: step_source is analysis.steps' source (range, pattern, kernel-pattern, graph-launch) or gpu_span (no
--   steps: the span of GPU activity stands for one); step_rule says why that level (analysis.step_candidates'
--   rule; `top-level pattern` for a pattern, `op sequence` for iterations of the GPU op sequence); close_level
--   is the best other level the choice passed over that would make good steps too (NULL when none).
--   program_kind: `training` when some GPU op is backward or optimizer work (gpu_op_attribution), `inference`
--   when the step level is a decode step or a level of the program is named prefill or decode, or when the
--   steps are decode steps found in the op sequence inside requests (one long head, the prefill, then many
--   short iterations alike: analysis._kernel_iterations' request), else `unknown`
--   (forward work alone may be inference or evaluation). cpu_ahead_ns is the median step's GPU work end
--   after its range's end (negative: the GPU finished inside the range); clock `period` when it exceeds the
--   median step's wall time (analysis.steady_steps). micro_batches: the median number of micro-batch ranges
--   (named `micro_batch_3`, `microbatch2`, `mb_1`, `accum_step_2`, any case) that start in an analysed step
--   (gradient accumulation; 0 without); recompute_ns: the mean GPU time per analysed step of forward re-runs
--   in the backward (activation checkpointing, analysis.steps' recompute_ns).
-- columns:
--   pid | BIGINT | id
--   program_kind | VARCHAR | text (training, inference or unknown)
--   step_source | VARCHAR | text
--   step_level | VARCHAR | text (the level, pattern range or delimiting op; NULL for gpu_span)
--   step_rule | VARCHAR | text
--   steps | BIGINT | count
--   analysed | BIGINT | count
--   warmup_steps | BIGINT | count (left out as warm-up)
--   warmup_rule | VARCHAR | text (the rules that left steps out: warmup_range, slow_leading_step, comma-separated; NULL when none)
--   period_ops | BIGINT | count (GPU ops per iteration, for steps from the op sequence)
--   clock | VARCHAR | text (range or period)
--   cpu_ahead_ns | BIGINT | ns
--   close_level | VARCHAR | text
--   candidates | BIGINT | count (levels considered, analysis.step_candidates)
--   micro_batches | BIGINT | count (per analysed step, median)
--   recompute_ns | BIGINT | ns (per analysed step, mean)
--   request_ops | BIGINT | count (GPU ops per request when the steps are decode steps found in the op sequence; NULL otherwise)
WITH
steady AS (
    SELECT pid, COUNT(*) AS steps, COUNT(*) FILTER (WHERE analysed) AS analysed,
           COUNT(*) FILTER (WHERE NOT analysed) AS warmup_steps,
           string_agg(DISTINCT excluded_because, ', ' ORDER BY excluded_because) AS warmup_rule,
           arg_min(source, step) AS source, arg_min(clock, step) AS clock
    FROM steady_steps GROUP BY pid
),
stepped AS (
    SELECT pid, arg_min(level, step) AS level, MAX(period_ops) AS period_ops,
           CAST(MEDIAN(COALESCE(gpu_end_ns, end_ns) - end_ns) AS BIGINT) AS cpu_ahead_ns
    FROM steps GROUP BY pid
),
cands AS (
    SELECT pid, COUNT(*) AS candidates, arg_min(rule, CASE WHEN chosen THEN 0 ELSE 1 END) AS rule,
           arg_max(level, CASE WHEN close THEN score END) AS close_level,
           BOOL_OR(regexp_matches(level, '(^|/)(prefill|decode[^/]*|generate[^/]*)$', 'i')) AS inference_named,
           BOOL_OR(chosen AND rule = 'decode steps') AS decode_chosen
    FROM step_candidates GROUP BY pid
),
micro AS (  -- per analysed step, the micro-batch ranges that start in it
    SELECT w.pid, CAST(MEDIAN(w.n) AS BIGINT) AS micro_batches
    FROM (SELECT st.pid, st.step,
                 COUNT(u.range_id) FILTER (WHERE regexp_matches(u.layer,  -- the range's own name: its path's last part
                     '(^|/)(micro[_ -]?batch|mb|accum[a-z_]*)[_ #-]?[0-9]+$', 'i')) AS n
          FROM steady_steps AS st
          LEFT JOIN user_range AS u ON u.pid = st.pid AND u.start_ns >= st.range_start_ns
                                   AND u.start_ns < st.range_end_ns
          WHERE st.analysed AND st.step > 0
          GROUP BY st.pid, st.step) AS w
    GROUP BY w.pid
),
recomputed AS (
    SELECT s.pid, CAST(AVG(s.recompute_ns) AS BIGINT) AS recompute_ns
    FROM steps AS s JOIN steady_steps AS st ON st.pid = s.pid AND st.step = s.step AND st.analysed
    GROUP BY s.pid
),
kernel_requests AS (
    SELECT pid, MAX(request_ops) AS request_ops FROM _kernel_iterations WHERE request IS NOT NULL GROUP BY pid
),
work AS (
    SELECT o.pid, BOOL_OR(CAST(a.direction AS VARCHAR) IN ('bprop', 'optim')) AS trains
    FROM gpu_op AS o LEFT JOIN gpu_op_attribution AS a ON a.op_kind = o.op_kind AND a.op_id = o.op_id
    GROUP BY o.pid
)
SELECT s.pid,
       CASE WHEN COALESCE(w.trains, false) THEN 'training'
            WHEN COALESCE(c.decode_chosen OR c.inference_named, false) OR k.pid IS NOT NULL THEN 'inference'
            ELSE 'unknown' END AS program_kind,
       s.source AS step_source,
       t.level AS step_level,
       CASE s.source WHEN 'range' THEN c.rule WHEN 'pattern' THEN 'top-level pattern'
                     WHEN 'gpu_span' THEN NULL ELSE 'op sequence' END AS step_rule,
       s.steps, s.analysed, s.warmup_steps, s.warmup_rule, t.period_ops, s.clock, t.cpu_ahead_ns,
       c.close_level, COALESCE(c.candidates, 0) AS candidates,
       COALESCE(m.micro_batches, 0) AS micro_batches, COALESCE(rc.recompute_ns, 0) AS recompute_ns,
       k.request_ops
FROM steady AS s
LEFT JOIN stepped AS t ON t.pid = s.pid
LEFT JOIN cands AS c ON c.pid = s.pid
LEFT JOIN work AS w ON w.pid = s.pid
LEFT JOIN micro AS m ON m.pid = s.pid
LEFT JOIN recomputed AS rc ON rc.pid = s.pid
LEFT JOIN kernel_requests AS k ON k.pid = s.pid
ORDER BY s.pid;
