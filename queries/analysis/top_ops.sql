-- nsysql: analysis.top_ops v2
-- purpose: Operators of the analysed steps by GPU time (TensorBoard's operator view): PyTorch ops from emit_nvtx op markers with calls, device self/total and host self/total time; without op markers, the innermost user ranges.
-- requires: analysis.steady_steps, analysis._steady_windows, nvtx_range, nvtx_ancestor, user_range, gpu_op, gpu_op_attribution, macros.fold_repeats
-- params: none
-- notes: An op marker (nvtx_range.is_op_marker, the `autograd::engine::evaluate_function: X` wrappers left out
--   since the node marker X inside them is the op) counts when it starts inside an analysed step of its process.
--   name = the marker's first field (`aten::addmm, seq = 3, op_id = 7, sizes = [...]` -> aten::addmm); ops are
--   grouped by name; shapes = the recorded `sizes` of the shape group with the most device self time, and
--   shape_variants how many distinct sizes the name has.
--   host_total_ns = sum of the markers' durations; host_self_ns = that minus the durations of op markers nested
--   directly in them. device_self_ns = sum of the durations of GPU ops (kernels, copies, sets) whose innermost op
--   marker is the op (gpu_op_attribution.op_range_id); device_total_ns = the same for the op and every op
--   marker nested in it (so nested ops are counted in each enclosing op's total; self times add up).
--   Without op markers in the analysed steps (kind = range): the innermost user ranges (user ranges with no
--   user range inside them) that start in an analysed step, grouped by layer path (user_range.layer, micro-batches folded: macros.fold_repeats); device
--   time = GPU ops whose layer is that range (gpu_op_attribution.layer_range_id, so the backward kernels
--   PyTorch's autograd thread launches count where attribution puts them; one whose layer was inferred, on
--   the range it borrowed, e.g. backward_pass: its layer is a block, no operator); self = total.
-- columns:
--   kind | VARCHAR | text (op: a PyTorch op marker; range: an innermost user range)
--   name | VARCHAR | text
--   shapes | VARCHAR | text (input sizes of the costliest shape group; NULL for ranges)
--   shape_variants | BIGINT | count
--   calls | BIGINT | count
--   device_self_ns | BIGINT | ns
--   device_total_ns | BIGINT | ns
--   host_self_ns | BIGINT | ns
--   host_total_ns | BIGINT | ns
WITH
bucket AS (SELECT MIN(bucket_ns) AS ns FROM _steady_windows),
markers AS MATERIALIZED (  -- op markers starting in an analysed step (a hash join on its time buckets)
    SELECT r.range_id, r.duration_ns, r.text
    FROM (SELECT *, start_ns // (SELECT ns FROM bucket) AS bucket FROM nvtx_range) AS r
    JOIN _steady_windows AS w ON w.pid = r.pid AND w.bucket = r.bucket
    WHERE r.start_ns >= w.start_ns AND r.start_ns < w.end_ns
      AND r.is_op_marker AND NOT starts_with(r.text, 'autograd::engine::evaluate_function: ')
),
op_time AS (SELECT a.op_range_id, o.end_ns - o.start_ns AS dur
            FROM gpu_op_attribution AS a JOIN gpu_op AS o ON o.op_kind = a.op_kind AND o.op_id = a.op_id
            WHERE a.op_range_id IS NOT NULL),
self_dev AS (SELECT op_range_id AS range_id, SUM(dur) AS ns FROM op_time GROUP BY ALL),
total_dev AS (
    SELECT an.ancestor_id AS range_id, SUM(t.ns) AS ns
    FROM self_dev AS t JOIN nvtx_ancestor AS an ON an.range_id = t.range_id
    WHERE an.ancestor_id IN (SELECT range_id FROM markers)
    GROUP BY ALL
),
children AS (
    SELECT c.parent_id AS range_id, SUM(c.duration_ns) AS ns
    FROM nvtx_range AS c WHERE c.is_op_marker AND c.parent_id IN (SELECT range_id FROM markers)
    GROUP BY ALL
),
per_marker AS (
    SELECT m.text, m.duration_ns AS host_total, m.duration_ns - COALESCE(ch.ns, 0) AS host_self,
           COALESCE(sd.ns, 0) AS dev_self, COALESCE(td.ns, 0) AS dev_total
    FROM markers AS m
    LEFT JOIN self_dev AS sd USING (range_id)
    LEFT JOIN total_dev AS td USING (range_id)
    LEFT JOIN children AS ch USING (range_id)
),
per_text AS (  -- the markers' texts repeat (one per op and shapes): name and shapes are cut once per text
    SELECT split_part(text, ', ', 1) AS name,
           NULLIF(split_part(split_part(text, ', sizes = ', 2), ', input_op_ids = ', 1), '') AS shapes,
           calls, host_total, host_self, dev_self, dev_total
    FROM (SELECT text, COUNT(*) AS calls, SUM(host_total) AS host_total, SUM(host_self) AS host_self,
                 SUM(dev_self) AS dev_self, SUM(dev_total) AS dev_total
          FROM per_marker GROUP BY text)
),
by_shape AS (SELECT name, shapes, SUM(dev_self) AS dev_self, SUM(host_self) AS host_self
             FROM per_text GROUP BY ALL),
ops AS (
    SELECT 'op' AS kind, p.name,
           (SELECT arg_max(b.shapes, b.dev_self + b.host_self * 1e-9) FROM by_shape AS b WHERE b.name = p.name) AS shapes,
           COUNT(DISTINCT p.shapes) AS shape_variants, SUM(p.calls) AS calls,
           SUM(p.dev_self) AS device_self_ns, SUM(p.dev_total) AS device_total_ns,
           SUM(p.host_self) AS host_self_ns, SUM(p.host_total) AS host_total_ns
    FROM per_text AS p GROUP BY p.name
),
leaves AS (  -- innermost user ranges in the analysed steps, used only without op markers
    SELECT u.range_id, u.layer, u.end_ns - u.start_ns AS dur
    FROM (SELECT *, start_ns // (SELECT ns FROM bucket) AS bucket FROM user_range) AS u
    JOIN _steady_windows AS w ON w.pid = u.pid AND w.bucket = u.bucket
    WHERE u.start_ns >= w.start_ns AND u.start_ns < w.end_ns AND NOT u.is_step AND NOT EXISTS (SELECT 1 FROM user_range AS c WHERE c.user_parent_id = u.range_id)
      AND NOT EXISTS (SELECT 1 FROM markers)
),
leaf_dev AS (  -- an inferred backward op counts where it ran: on the range it borrowed (no finer operator)
    SELECT COALESCE(a.borrowed_range_id, a.layer_range_id) AS range_id, SUM(o.end_ns - o.start_ns) AS ns
    FROM gpu_op_attribution AS a JOIN gpu_op AS o ON o.op_kind = a.op_kind AND o.op_id = a.op_id
    WHERE COALESCE(a.borrowed_range_id, a.layer_range_id) IN (SELECT range_id FROM leaves)
    GROUP BY ALL
),
ranges AS (
    SELECT 'range' AS kind, fold_repeats(l.layer) AS name, CAST(NULL AS VARCHAR) AS shapes, 0 AS shape_variants,
           COUNT(*) AS calls, SUM(COALESCE(d.ns, 0)) AS device_self_ns, SUM(COALESCE(d.ns, 0)) AS device_total_ns,
           SUM(l.dur) AS host_self_ns, SUM(l.dur) AS host_total_ns
    FROM leaves AS l LEFT JOIN leaf_dev AS d USING (range_id)
    GROUP BY fold_repeats(l.layer)
)
SELECT kind, name, shapes, CAST(shape_variants AS BIGINT) AS shape_variants, CAST(calls AS BIGINT) AS calls,
       CAST(device_self_ns AS BIGINT) AS device_self_ns, CAST(device_total_ns AS BIGINT) AS device_total_ns,
       CAST(host_self_ns AS BIGINT) AS host_self_ns, CAST(host_total_ns AS BIGINT) AS host_total_ns
FROM (SELECT kind, name, shapes, shape_variants, calls, device_self_ns, device_total_ns, host_self_ns, host_total_ns
      FROM ops
      UNION ALL
      SELECT kind, name, shapes, shape_variants, calls, device_self_ns, device_total_ns, host_self_ns, host_total_ns
      FROM ranges)
ORDER BY device_self_ns DESC, device_total_ns DESC, host_self_ns DESC, name;
