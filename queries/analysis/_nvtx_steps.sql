-- nsysql: analysis._nvtx_steps v1
-- purpose: The steps NVTX ranges make: the instances of the level analysis.step_candidates chose, or else a repetition of top-level ranges.
-- requires: nvtx_range, user_range, thread, analysis._step_levels, analysis.step_candidates
-- params: none
-- notes: Per process, the chosen level's instances (warm-up ones too: analysis.steady_steps leaves them out) are
--   steps of source `range`, each from its range's start to its end. A process without a chosen level gets
--   steps from a pattern: on the thread with the most top-level user ranges (PyTorch autograd threads
--   `pt_autograd_*` never), the first top-level name that occurs twice or more (e.g. forward_pass in
--   forward_pass, backward_pass, optimizer_step, forward_pass, ...) starts a step at each occurrence; a pattern
--   step runs from that range's start to the latest end of the top-level ranges before the next occurrence.
--   Ranges before the first occurrence (e.g. `warmup`) are in no step.
-- columns:
--   range_id | BIGINT | id (the step range, or the pattern step's first range)
--   pid | BIGINT | id
--   tid | BIGINT | id
--   name | VARCHAR | text
--   level | VARCHAR | text (the chosen level, or the pattern's first range text)
--   source | VARCHAR | text (range or pattern)
--   start_ns | BIGINT | ns timestamp
--   end_ns | BIGINT | ns timestamp
WITH
chosen AS (SELECT DISTINCT pid, level FROM step_candidates WHERE chosen),
level_steps AS (
    SELECT l.range_id, l.pid, l.tid, l.text AS name, l.level, 'range' AS source, l.start_ns, l.end_ns
    FROM _step_levels AS l JOIN chosen AS c ON c.pid = l.pid AND c.level = l.level
),
top_level AS (  -- top-level user ranges of the processes without a chosen level, with their thread's name
    SELECT u.range_id, u.global_tid, u.pid, r.tid, r.text, u.start_ns, u.end_ns,
           COALESCE(starts_with(t.thread_name, 'pt_autograd'), false) AS is_autograd
    FROM user_range AS u
    JOIN nvtx_range AS r ON r.range_id = u.range_id
    LEFT JOIN thread AS t ON t.global_tid = u.global_tid
    WHERE u.user_depth = 0 AND r.end_global_tid IS NULL AND NOT u.from_library  -- a library's layers make no step
      AND u.pid NOT IN (SELECT pid FROM chosen)
),
main_thread AS (  -- per process: most top-level user ranges, then longest total, then lowest id
    SELECT pid, global_tid FROM (
        SELECT pid, global_tid,
               ROW_NUMBER() OVER (PARTITION BY pid ORDER BY COUNT(*) DESC, SUM(end_ns - start_ns) DESC, global_tid) AS rank
        FROM top_level WHERE NOT is_autograd
        GROUP BY pid, global_tid)
    WHERE rank = 1
),
sequence AS (
    SELECT t.range_id, t.pid, t.tid, t.text, t.start_ns, t.end_ns,
           ROW_NUMBER() OVER (PARTITION BY t.pid ORDER BY t.start_ns, t.range_id) AS pos,
           COUNT(*) OVER (PARTITION BY t.pid, t.text) AS occurrences
    FROM top_level AS t JOIN main_thread AS m ON m.global_tid = t.global_tid
),
anchor AS (  -- the first name that repeats
    SELECT pid, arg_min(text, pos) AS text FROM sequence WHERE occurrences >= 2 GROUP BY pid
),
numbered AS (
    SELECT s.*, SUM(CASE WHEN s.text = a.text THEN 1 ELSE 0 END)
                    OVER (PARTITION BY s.pid ORDER BY s.pos ROWS UNBOUNDED PRECEDING) AS occurrence
    FROM sequence AS s JOIN anchor AS a ON a.pid = s.pid
),
pattern_steps AS (
    SELECT arg_min(range_id, pos) AS range_id, pid, arg_min(tid, pos) AS tid, arg_min(text, pos) AS name,
           arg_min(text, pos) AS level, 'pattern' AS source, MIN(start_ns) AS start_ns, MAX(end_ns) AS end_ns
    FROM numbered
    WHERE occurrence > 0
    GROUP BY pid, occurrence
)
SELECT range_id, pid, tid, name, level, source, start_ns, end_ns FROM level_steps
UNION ALL
SELECT range_id, pid, tid, name, level, source, start_ns, end_ns FROM pattern_steps
ORDER BY pid, start_ns, range_id;
