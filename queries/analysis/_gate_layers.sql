-- nsysql: analysis._gate_layers v1
-- purpose: One side of the diff gate with `--metric layer:GLOB`: kernel time per analysed step and attributed layer, so that the gate sums the layers its glob matches, step by step.
-- requires: analysis.steady_steps, gpu_op_int, gpu_op_attribution, user_range
-- params: none
-- notes: Layers are gpu_op_attribution's, as in analysis.layers (the whole path, without op markers and without
--   a top-level step range; backward kernels on their forward layer; '?' when unknown). A kernel belongs to an
--   analysed step as in analysis._gate_kernels (its launching call starts inside the step range's span, same
--   process, any thread). Time: kernel time, the sum of the kernels' durations (copies and sets left out; a CUDA
--   graph traced at graph level as one kernel). A step none of whose kernels is on a matching layer has no row.
-- columns:
--   pid | BIGINT | id
--   step | BIGINT | index (as in analysis.steady_steps, per process; analysed steps only)
--   name | VARCHAR | text (layer path)
--   count | BIGINT | count (kernels)
--   total_ns | BIGINT | ns (sum of their durations)
WITH win AS (
    SELECT pid, step, range_start_ns, range_end_ns FROM steady_steps WHERE analysed
),
ops AS (
    SELECT o.pid, o.call_start_ns, COALESCE(u.layer, '?') AS name, o.end_ns - o.start_ns AS d
    FROM gpu_op_int AS o
    JOIN gpu_op_attribution AS a ON a.op_kind = CAST(o.op_kind AS VARCHAR) AND a.op_id = o.op_id
    LEFT JOIN user_range AS u ON u.range_id = a.layer_range_id
    WHERE o.op_kind IN ('kernel', 'graph') AND o.call_start_ns IS NOT NULL AND o.pid IN (SELECT pid FROM win)
)
SELECT w.pid, w.step, o.name, COUNT(*) AS count, CAST(SUM(o.d) AS BIGINT) AS total_ns
FROM ops AS o
ASOF JOIN win AS w ON w.pid = o.pid AND w.range_start_ns <= o.call_start_ns
WHERE o.call_start_ns <= w.range_end_ns
GROUP BY ALL
ORDER BY w.pid, w.step, total_ns DESC, o.name;
