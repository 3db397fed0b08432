-- nsysql: analysis._gate_kernels v1
-- purpose: One side of the diff gate with `--metric kernel:GLOB`: kernel time per analysed step and kernel name, so that the gate sums the names its glob matches, step by step.
-- requires: analysis.steady_steps, gpu_op_int
-- params: none
-- notes: A kernel belongs to an analysed step (analysis.steady_steps) when its launching CUDA call starts inside
--   the step range's span (range_start_ns to range_end_ns) in the same process, on any thread, as in
--   analysis.layers with `step`; a kernel without a launching call belongs to no step. Names are the full
--   demangled kernel names (what-if's `kernel:GLOB` reads the same); a CUDA graph traced at graph level counts
--   as one kernel named `[CUDA graph <id>]`, as in analysis.layers. Time: the sum of the kernels' durations.
--   A step none of whose kernels match has no row: the gate counts it as 0.
-- columns:
--   pid | BIGINT | id
--   step | BIGINT | index (as in analysis.steady_steps, per process; analysed steps only)
--   name | VARCHAR | text (demangled kernel name)
--   count | BIGINT | count (kernels)
--   total_ns | BIGINT | ns (sum of their durations)
WITH win AS (
    SELECT pid, step, range_start_ns, range_end_ns FROM steady_steps WHERE analysed
),
ops AS (
    SELECT pid, call_start_ns, COALESCE(CAST(kernel_name AS VARCHAR), label) AS name, end_ns - start_ns AS d
    FROM gpu_op_int
    WHERE op_kind IN ('kernel', 'graph') AND call_start_ns IS NOT NULL AND pid IN (SELECT pid FROM win)
)
SELECT w.pid, w.step, o.name, COUNT(*) AS count, CAST(SUM(o.d) AS BIGINT) AS total_ns
FROM ops AS o
ASOF JOIN win AS w ON w.pid = o.pid AND w.range_start_ns <= o.call_start_ns
WHERE o.call_start_ns <= w.range_end_ns
GROUP BY ALL
ORDER BY w.pid, w.step, total_ns DESC, o.name;
