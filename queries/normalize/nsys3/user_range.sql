-- nsysql: normalize.nsys3.user_range v3
-- purpose: The user's own NVTX ranges (not PyTorch op markers nor library ranges, see nvtx_context) as a tree of their own, with the layer path kernel attribution reports: texts from the top down, joined by '/', with a top-level step range (profiled_step, step_3, ProfilerStep#3, iteration 2, ...) left out so that every step's `forward_pass/layer_3/...` is the same layer.
-- requires: nvtx_range, nvtx_context
-- params: none
-- built: on first use (derived from nvtx_range and nvtx_context; read by attribution, steps and findings)
-- notes: A step range is a top-level user range whose whole text matches (case-insensitive)
--   `profiled_step`, `(train_|training_|eval_|inference_)?(step|iteration|iter)` optionally followed by a
--   number (separated by nothing, ' ', '_', '#' or '-'), or PyTorch profiler's `ProfilerStep#N`.
--   The step range itself keeps its name as its path (kernels launched directly inside it).
--   A user range nested inside an op marker hangs under the op's nearest user ancestor.
--   Module paths (nsysql.annotate, docs/annotate.md): a range named `model/layers.3/attn` inside one named
--   `model/layers.3` (or inside any range below it, e.g. the model's own `attention_sublayer`) adds only
--   `attn` to the path, so `forward_pass/layer_3/model/layers.3/attention_sublayer/attn`, not the module path
--   twice. The anchor is the nearest enclosing range whose text contains '/' (or the parent itself). A
--   trailing ` [backward]` is left out of the path: a module's backward range has its forward's path.
--   TensorRT's layer ranges are user ranges of a library (from_library; nvtx_context): layers, never a step
--   (is_step is false for them, and analysis.steps skips them); a layer named by a JSON object (TensorRT's
--   ProfilingVerbosity kDETAILED: `{"Name": "conv1 + relu1", ...}`) is named by its "Name" in the path.
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
--   in_annotated | BOOLEAN | flag (an nsysql.annotate backward range `... [backward]`, or a range inside one)
--   from_library | BOOLEAN | flag (a library's range that is a layer: TensorRT's; never a step)
CREATE TABLE user_range AS
WITH RECURSIVE
users AS (
    SELECT r.range_id, r.global_tid, r.pid, r.start_ns, r.end_ns, pc.user_range_id AS user_parent_id,
           CASE WHEN ends_with(r.text, ' [backward]') THEN left(r.text, length(r.text) - 11)
                WHEN cx.is_library AND starts_with(r.text, '{')  -- TensorRT's detailed layer info: its "Name"
                    THEN COALESCE(NULLIF(regexp_extract(r.text, '"Name"\s*:\s*"([^"]*)"', 1), ''), r.text)
                ELSE r.text END AS text,
           cx.annotated_range_id IS NOT NULL AS in_annotated, cx.is_library AS from_library
    FROM nvtx_range AS r
    JOIN nvtx_context AS cx ON cx.range_id = r.range_id
    LEFT JOIN nvtx_context AS pc ON pc.range_id = r.parent_id
    WHERE cx.is_user
),
tree(range_id, user_depth, is_step, layer, text, anchor) AS (
    SELECT range_id, 0,
           NOT from_library
             AND regexp_matches(text, '^(profiled_step|((train|training|eval|inference)_)?(step|iteration|iter)([ _#-]?[0-9]+)?|ProfilerStep#[0-9]+)$', 'i'),
           text, text, CASE WHEN contains(text, '/') THEN text END
    FROM users WHERE user_parent_id IS NULL
    UNION ALL
    SELECT range_id, user_depth, false,
           CASE WHEN parent_is_step THEN text ELSE parent_layer || '/' || substr(text, length(prefix) + 1) END,
           text,
           CASE WHEN prefix <> '' OR contains(text, '/') THEN text ELSE parent_anchor END
    FROM (
        SELECT u.range_id, t.user_depth + 1 AS user_depth, t.is_step AS parent_is_step, t.layer AS parent_layer,
               u.text, t.anchor AS parent_anchor,
               CASE WHEN NOT contains(u.text, '/') THEN ''  -- most ranges: no module path, nothing to compare
                    WHEN starts_with(u.text, t.text || '/') THEN t.text || '/'
                    WHEN starts_with(u.text, t.anchor || '/') THEN t.anchor || '/' ELSE '' END AS prefix
        FROM users AS u JOIN tree AS t ON u.user_parent_id = t.range_id
    )
)
SELECT t.range_id, u.user_parent_id, t.user_depth, t.is_step, t.layer, u.global_tid, u.pid, u.start_ns, u.end_ns,
       u.in_annotated, u.from_library
FROM tree AS t JOIN users AS u USING (range_id)
ORDER BY t.range_id;
