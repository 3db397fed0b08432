-- nsysql: analysis.kernel_table_pyprof v3
-- purpose: The kernels of one step in the seed tables' PyProf layout (Idx, Direction, Layer, Op, Params, Kernel), numbered from 1 within the step.
-- requires: gpu_op, gpu_op_label, kernel, runtime, user_range
-- params: step BIGINT default 1 (the process's own step range: 1 = its first in time; 0 = every kernel in the export),
--   process BIGINT default null (the pid of the process whose step; null = every process that has that step)
-- notes: A step is a top-level step range (user_range.is_step), numbered within its process as analysis.steps
--   numbers named steps, so step 2 of a two-rank export is each rank's second step; `process` picks one (nsysql's
--   `pyprof_table` and `kernels --style pyprof` ask for it when several processes have the step). A kernel
--   belongs to the step when its launching call starts inside the step's time span in the same process, on any
--   thread: the backward pass runs on the autograd thread, outside the main thread's ranges. Layer: the layer path with a leading
--   `forward_pass`/`forward` phase dropped (direction says it) and '/' written ':' as PyProf does
--   (`MLP_0:Dropout`); '-' when unknown. Op: the aten op without `aten::`, or the autograd node.
--   Kernel: nsys's short kernel name, as in the seed tables.
-- optional: "Params", "Op"
-- text-min: "Kernel" 24
-- columns:
--   Idx | BIGINT | position
--   Direction | VARCHAR | fprop, bprop, optim, comm or other
--   Layer | VARCHAR | text
--   Op | VARCHAR | text
--   Params | VARCHAR | text
--   Kernel | VARCHAR | text
WITH
step AS (
    SELECT pid, start_ns, end_ns
    FROM (SELECT pid, start_ns, end_ns, row_number() OVER (PARTITION BY pid ORDER BY start_ns, range_id) AS nth
          FROM user_range WHERE is_step)
    WHERE nth = $step AND ($process IS NULL OR pid = $process)
),
chosen AS (
    SELECT o.start_ns, o.op_id, a.direction, a.layer, a.op, a.params, k.short_name
    FROM gpu_op AS o
    JOIN gpu_op_label AS a USING (op_kind, op_id)
    JOIN kernel AS k ON k.kernel_id = o.op_id
    LEFT JOIN runtime AS r ON r.runtime_id = o.runtime_id
    WHERE o.op_kind = 'kernel'
      AND ($step = 0 OR EXISTS (SELECT 1 FROM step AS s
                                WHERE s.pid = r.pid AND r.start_ns >= s.start_ns AND r.start_ns <= s.end_ns))
)
SELECT ROW_NUMBER() OVER (ORDER BY start_ns, op_id) AS Idx,
       direction AS Direction,
       CASE WHEN layer = '?' THEN '-'
            ELSE replace(regexp_replace(layer, '^(forward_pass|forward)/', '', 'i'), '/', ':') END AS Layer,
       COALESCE(regexp_replace(op, '^aten::', ''), '-') AS Op,
       COALESCE(params, '-') AS Params,
       short_name AS Kernel
FROM chosen
ORDER BY Idx;
