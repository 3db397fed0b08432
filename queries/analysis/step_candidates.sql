-- nsysql: analysis.step_candidates v1
-- purpose: Every repeating level of the user's NVTX ranges that could be the program's step, per process and thread, scored on what a step is, with the one chosen and why.
-- requires: analysis._step_levels, analysis._step_override
-- params: none
-- notes: A level is a path of range texts from the top of a thread's user ranges down (`request/decode_step`),
--   digits written as N (`micro_batch_3` and `micro_batch_1` are one level `micro_batch_N`), and ranges whose
--   text says warm-up (`warmup`, `warm_up`, `warm-up`, `warm up`, any case) left out of the path, so that the
--   warm-up request's `warmup/request/decode_step` is the level `request/decode_step` too (its instances count
--   as warm-up). Only push/pop ranges that are the user's (no op markers, library ranges or nsysql.annotate
--   backward ranges) on threads other than PyTorch's autograd threads, to depth 3 below the top, are levels.
--   Per level: instances (all, and `steady`: outside warm-up ranges), `tiling` = the steady instances' total
--   time over the span from the first's start to the last's end (1 = they follow each other with nothing
--   between), `coverage` = that span over the span of every repeating level's steady instances on the thread
--   (1 = the level spans the thread's repeating work), `cv` = the coefficient of variation of the steady
--   instances' durations, and score = tiling x coverage.
--   The choice, per process, first rule that applies: `override` (--step-range names the level, or its last
--   components); `step name` (the outermost level whose text is named like a step: profiled_step, step_N,
--   train_step, iteration N, iter_N, ProfilerStep#N; every thread's); `decode steps` (a level named like a
--   decode/generation step: decode, decode_step, generate_step, next_token, token_N: the one with the most
--   steady instances); `repeating level` (levels with at least 2 steady instances, tiling and coverage of at
--   least 0.5: the outermost that repeats 3 times or more in the steady state, else the one with the most
--   steady instances). Without any, analysis.steps falls back on the top-level pattern, then on the GPU op
--   sequence (analysis._kernel_iterations).
--   `close` marks a level the choice passed over that would have been taken under the repeating-level rule too
--   (at least 3 steady instances, tiling and coverage of at least 0.8, instances at least a fifth of the chosen
--   level's median duration, so that a layer inside the step is not one, and not inside the chosen level when
--   that was chosen by its name or the override: the program's own word for its step wins): summarize says so.
-- columns:
--   pid | BIGINT | id
--   tid | BIGINT | id
--   level | VARCHAR | text (range texts from the top, digits as N, warm-up ranges left out)
--   depth | INTEGER | count (0 = top level, warm-up ranges not counted)
--   instances | BIGINT | count
--   steady | BIGINT | count (instances outside warm-up ranges)
--   median_ns | BIGINT | ns (of the steady instances' durations)
--   tiling | DOUBLE | ratio (NULL with fewer than 2 steady instances) | 3
--   coverage | DOUBLE | ratio (NULL with fewer than 2 steady instances) | 3
--   cv | DOUBLE | ratio | 3
--   score | DOUBLE | ratio (tiling x coverage) | 3
--   chosen | BOOLEAN | flag (this level makes the process's steps)
--   rule | VARCHAR | text (why it was chosen: override, step name, decode steps, repeating level; NULL otherwise)
--   close | BOOLEAN | flag (not chosen, but a good step level too)
WITH
levels AS (
    SELECT pid, tid, level, MIN(depth) AS depth, COUNT(*) AS instances,
           COUNT(*) FILTER (WHERE NOT in_warm) AS steady,
           CAST(MEDIAN(end_ns - start_ns) FILTER (WHERE NOT in_warm) AS BIGINT) AS median_ns,
           SUM(end_ns - start_ns) FILTER (WHERE NOT in_warm) AS busy_ns,
           MIN(start_ns) FILTER (WHERE NOT in_warm) AS first_ns, MAX(end_ns) FILTER (WHERE NOT in_warm) AS last_ns,
           STDDEV_POP(end_ns - start_ns) FILTER (WHERE NOT in_warm)
               / NULLIF(AVG(end_ns - start_ns) FILTER (WHERE NOT in_warm), 0) AS cv,
           BOOL_OR(regexp_matches(text, '^(profiled_step|((train|training|eval|inference)_)?(step|iteration|iter)([ _#-]?[0-9]+)?|ProfilerStep#[0-9]+)$', 'i')) AS named,
           BOOL_OR(regexp_matches(text, '^(decode|decoding|generate|generation|next_token|token)([ _#-]?(step|token|iter|iteration))?([ _#-]?[0-9]+)?$', 'i')) AS decode
    FROM _step_levels
    GROUP BY pid, tid, level
),
thread_span AS (  -- the span of every repeating level's steady instances on the thread
    SELECT pid, tid, MIN(first_ns) AS first_ns, MAX(last_ns) AS last_ns
    FROM levels WHERE steady >= 2 GROUP BY pid, tid
),
scored AS (
    SELECT l.*,  -- a level with fewer than 2 steady instances has neither
           CASE WHEN l.steady >= 2 THEN COALESCE(l.busy_ns / NULLIF(l.last_ns - l.first_ns, 0), 0.0) END AS tiling,
           CASE WHEN l.steady >= 2 THEN COALESCE((l.last_ns - l.first_ns) / NULLIF(s.last_ns - s.first_ns, 0), 0.0)
                END AS coverage
    FROM levels AS l LEFT JOIN thread_span AS s ON s.pid = l.pid AND s.tid = l.tid
),
wanted AS (  -- the override's text, digits as N, to compare with a level or its last components
    SELECT regexp_replace(trim(level, '/'), '[0-9]+', 'N', 'g') AS level FROM _step_override
),
ranked AS (
    SELECT s.*, s.tiling * s.coverage AS score,
           CASE WHEN EXISTS (SELECT 1 FROM wanted AS w WHERE s.level = w.level OR ends_with(s.level, '/' || w.level))
                    THEN 0
                WHEN EXISTS (SELECT 1 FROM wanted) THEN NULL
                WHEN s.named THEN 1
                WHEN s.decode AND s.steady >= 2 THEN 2
                WHEN s.steady >= 2 AND s.tiling >= 0.5 AND s.coverage >= 0.5 THEN 3 END AS rule_rank
    FROM scored AS s
),
best_rule AS (SELECT pid, MIN(rule_rank) AS rule_rank FROM ranked GROUP BY pid),
pick AS (  -- per process, the level of the best rule that applies; step names: every step-named level of the
    -- outermost depth (ProfilerStep#N and iteration N side by side), on every thread
    SELECT pid, level FROM (
        SELECT r.pid, r.level, r.rule_rank, r.depth,
               MIN(r.depth) OVER (PARTITION BY r.pid) AS top_depth,
               ROW_NUMBER() OVER (
                   PARTITION BY r.pid
                   ORDER BY CASE r.rule_rank
                                WHEN 0 THEN r.depth  -- the override: the outermost level it names
                                WHEN 1 THEN r.depth
                                WHEN 2 THEN -r.steady
                                ELSE (CASE WHEN r.steady >= 3 THEN 0 ELSE 1 END) * 1000000 + r.depth * 1000
                                     - LEAST(r.steady, 999) END,
                            r.score DESC, r.level) AS n
        FROM ranked AS r JOIN best_rule AS b ON b.pid = r.pid AND b.rule_rank = r.rule_rank)
    WHERE n = 1 OR (rule_rank = 1 AND depth = top_depth)
)
SELECT r.pid, r.tid, r.level, r.depth, r.instances, r.steady, r.median_ns, r.tiling, r.coverage, r.cv, r.score,
       p.level IS NOT NULL AS chosen,
       CASE WHEN p.level IS NULL THEN NULL
            ELSE CASE r.rule_rank WHEN 0 THEN 'override' WHEN 1 THEN 'step name' WHEN 2 THEN 'decode steps'
                                  ELSE 'repeating level' END END AS rule,
       p.level IS NULL AND r.steady >= 3 AND COALESCE(r.tiling >= 0.8 AND r.coverage >= 0.8, false)
         AND r.median_ns >= 0.2 * COALESCE(m.median_ns, 0)
         AND NOT (m.named AND starts_with(r.level, m.level || '/')) AS close
FROM ranked AS r
LEFT JOIN pick AS p ON p.pid = r.pid AND p.level = r.level
LEFT JOIN (SELECT k.pid, MAX(r2.median_ns) AS median_ns, MIN(k.level) AS level, BOOL_OR(r2.rule_rank <= 1) AS named
           FROM pick AS k JOIN ranked AS r2 ON r2.pid = k.pid AND r2.level = k.level
           GROUP BY k.pid) AS m ON m.pid = r.pid
ORDER BY r.pid, chosen DESC, r.score DESC NULLS LAST, r.steady DESC, r.depth, r.level, r.tid;
