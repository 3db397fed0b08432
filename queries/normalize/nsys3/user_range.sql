-- nsysql: normalize.nsys3.user_range v1
-- purpose: The user's own NVTX ranges (not PyTorch op markers nor library ranges, see nvtx_context) as a tree of their own, with the layer path kernel attribution reports: texts from the top down, joined by '/', with a top-level step range (profiled_step, step_3, ProfilerStep#3, iteration 2, ...) left out so that every step's `forward_pass/layer_3/...` is the same layer.
-- requires: nvtx_range, nvtx_context
-- params: none
-- notes: A step range is a top-level user range whose whole text matches (case-insensitive)
--   `profiled_step`, `(train_|training_|eval_|inference_)?(step|iteration|iter)` optionally followed by a
--   number (separated by nothing, ' ', '_', '#' or '-'), or PyTorch profiler's `ProfilerStep#N`.
--   The step range itself keeps its name as its path (kernels launched directly inside it).
--   A user range nested inside an op marker hangs under the op's nearest user ancestor.
-- columns:
--   range_id | BIGINT | id
--   user_parent_id | BIGINT | id
--   user_depth | INTEGER | count (0 = top level among user ranges)
--   is_step | BOOLEAN | flag (a top-level iteration range, left out of paths below it)
--   layer | VARCHAR | text (path without op markers and without the step range)
--   global_tid | BIGINT | id
--   pid | BIGINT | id
--   start_ns | BIGINT | ns
--   end_ns | BIGINT | ns
CREATE TABLE user_range AS
WITH RECURSIVE
users AS (
    SELECT r.range_id, r.text, r.global_tid, r.pid, r.start_ns, r.end_ns, pc.user_range_id AS user_parent_id
    FROM nvtx_range AS r
    JOIN nvtx_context AS cx ON cx.range_id = r.range_id
    LEFT JOIN nvtx_context AS pc ON pc.range_id = r.parent_id
    WHERE cx.is_user
),
tree(range_id, user_depth, is_step, layer) AS (
    SELECT range_id, 0,
           regexp_matches(text, '^(profiled_step|((train|training|eval|inference)_)?(step|iteration|iter)([ _#-]?[0-9]+)?|ProfilerStep#[0-9]+)$', 'i'),
           text
    FROM users WHERE user_parent_id IS NULL
    UNION ALL
    SELECT u.range_id, t.user_depth + 1, false,
           CASE WHEN t.is_step THEN u.text ELSE t.layer || '/' || u.text END
    FROM users AS u JOIN tree AS t ON u.user_parent_id = t.range_id
)
SELECT t.range_id, u.user_parent_id, t.user_depth, t.is_step, t.layer, u.global_tid, u.pid, u.start_ns, u.end_ns
FROM tree AS t JOIN users AS u USING (range_id)
ORDER BY t.range_id;
