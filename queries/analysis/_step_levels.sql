-- nsysql: analysis._step_levels v1
-- purpose: Each user NVTX range that is an instance of a step-candidate level (analysis.step_candidates): its level path, depth and whether it is inside a warm-up range.
-- requires: nvtx_range, user_range, thread
-- params: none
-- notes: The level is the path of range texts from the top of the thread's user ranges, digits written as N, with
--   ranges whose text says warm-up (`warm[ _-]?up`, any case) left out of the path; those ranges themselves are no
--   instance. Push/pop user ranges only (no op markers, library ranges or nsysql.annotate backward ranges), on
--   threads other than PyTorch's autograd threads (`pt_autograd_*`), to depth 3 below the top (warm-up ranges not
--   counted).
-- columns:
--   range_id | BIGINT | id
--   pid | BIGINT | id
--   tid | BIGINT | id
--   level | VARCHAR | text
--   depth | INTEGER | count (0 = top level)
--   in_warm | BOOLEAN | flag (inside a warm-up range)
--   start_ns | BIGINT | ns timestamp
--   end_ns | BIGINT | ns timestamp
--   text | VARCHAR | text (the range's own text)
WITH RECURSIVE
users AS (
    SELECT u.range_id, u.user_parent_id, u.pid, r.tid, u.start_ns, u.end_ns, r.text,
           regexp_matches(r.text, 'warm[ _-]?up', 'i') AS is_warm,
           regexp_replace(r.text, '[0-9]+', 'N', 'g') AS norm
    FROM user_range AS u
    JOIN nvtx_range AS r ON r.range_id = u.range_id
    LEFT JOIN thread AS t ON t.global_tid = u.global_tid
    WHERE u.user_depth <= 4 AND NOT u.from_library AND NOT u.in_annotated AND r.end_global_tid IS NULL
      AND NOT COALESCE(starts_with(t.thread_name, 'pt_autograd'), false)
),
paths(range_id, level, depth, in_warm) AS (
    SELECT range_id, CASE WHEN is_warm THEN '' ELSE norm END, CASE WHEN is_warm THEN -1 ELSE 0 END, is_warm
    FROM users WHERE user_parent_id IS NULL
    UNION ALL
    SELECT u.range_id,
           CASE WHEN u.is_warm THEN p.level WHEN p.level = '' THEN u.norm ELSE p.level || '/' || u.norm END,
           p.depth + CASE WHEN u.is_warm THEN 0 ELSE 1 END, p.in_warm OR u.is_warm
    FROM users AS u JOIN paths AS p ON u.user_parent_id = p.range_id
    WHERE p.depth < 3
)
SELECT u.range_id, u.pid, u.tid, p.level, CAST(GREATEST(p.depth, 0) AS INTEGER) AS depth, p.in_warm,
       u.start_ns, u.end_ns, u.text
FROM paths AS p JOIN users AS u USING (range_id)
WHERE NOT u.is_warm AND p.level <> ''
ORDER BY u.range_id;
