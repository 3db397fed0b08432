-- nsysql: analysis.steps v7
-- purpose: Training/inference iterations (steps): wall time, GPU busy time of the work launched in each, its period on the GPU's clock, and how many GPU ops, from the step level of the program's NVTX ranges or else from the repeating GPU op sequence.
-- requires: gpu_op_attribution, analysis._nvtx_steps, analysis._kernel_iterations, macros.union_ns
-- params: none
-- notes: Steps are the instances of the level analysis.step_candidates chooses (step-named ranges at any depth,
--   decode steps, or the outermost repeating level that tiles the thread's work; `--step-range` overrides it),
--   else a repetition of top-level ranges (analysis._nvtx_steps), else, without NVTX steps, the iterations of
--   the repeating GPU op sequence (analysis._kernel_iterations: source kernel-pattern or graph-launch).
--   docs/steps.md has the rules. A library's ranges never make steps (NCCL's, nvFuser's are no user ranges;
--   TensorRT's layer ranges are, but only layers).
--   A GPU op (kernel, memcpy, memset, or a CUDA graph traced at graph level) is in a step when the CUDA call that launched it lies inside the step's
--   time span on ANY thread of the step's process: PyTorch launches backward kernels from its autograd thread,
--   outside the main thread's ranges. Steps of one process are assumed not to overlap (an op goes to the
--   latest step that started before its launch). gpu_busy_ns is the length of the union of the step's op
--   intervals on all devices; ops may run past the step's end when nothing synchronizes (queued kernels, NCCL
--   kernels spinning until a late rank arrives): overrun_ns is the part of that union after the step's end, so
--   gpu_busy_pct above 100 % always comes with overrun_ns > 0. An export without CUDA
--   activity (--trace=nvtx only) still has steps, with GPU columns 0. fprop/bprop/optim/comm/other/recompute
--   are the busy times of the step's ops of each direction (gpu_op_attribution: bprop includes the autograd
--   thread's work, optim the optimizer's, comm NCCL's kernels); each is a union, so they add up to more than gpu_busy_ns only where
--   ops of two directions overlap in time (several streams).
--   Steps are numbered per process (1, 2, ... in start order within the process), so the ranks of a torchrun
--   capture compare step by step: (pid, step) names a step, and queries join on both. Rows are in (step, pid)
--   order: with several processes, each step's rows are together.
-- columns:
--   step | BIGINT | index (1, 2, ... in start order within the process)
--   name | VARCHAR | text (the step range's text; for a pattern, its first range's text)
--   source | VARCHAR | text (range: a range of the chosen step level; pattern: a repetition of top-level ranges; kernel-pattern, graph-launch: iterations of the GPU op sequence)
--   pid | BIGINT | id
--   tid | BIGINT | id (thread whose ranges make the step)
--   range_id | BIGINT | id (the step range, or the pattern step's first range)
--   start_ns | BIGINT | ns timestamp
--   end_ns | BIGINT | ns timestamp
--   wall_ns | BIGINT | ns (end - start)
--   period_ns | BIGINT | ns (the step on the GPU's clock: from when the GPU had finished all work launched before the step, or the step's start if later, to the end of its GPU work or its range, whichever is later)
--   gpu_ops | BIGINT | count (kernels, copies and sets launched in the step, any thread of the process)
--   kernels | BIGINT | count
--   off_thread_ops | BIGINT | count (of gpu_ops, launched by another thread than tid, e.g. autograd)
--   gpu_busy_ns | BIGINT | ns (union of the ops' intervals)
--   gpu_busy_pct | DOUBLE | pct of wall_ns | 1
--   fprop_ns | BIGINT | ns (busy, forward ops)
--   bprop_ns | BIGINT | ns (busy, backward ops)
--   optim_ns | BIGINT | ns (busy, optimizer ops)
--   comm_ns | BIGINT | ns (busy, communication: NCCL's kernels)
--   other_ns | BIGINT | ns (busy, ops with no direction, e.g. the input copy)
--   overrun_ns | BIGINT | ns (busy after the step's end: the ops launched in it that ran past it)
--   level | VARCHAR | text (the step level of analysis.step_candidates, the pattern's first range, or the delimiting op)
--   gpu_end_ns | BIGINT | ns timestamp (the latest end of the step's ops; NULL without any)
--   period_ops | BIGINT | count (GPU ops per iteration, for steps found in the op sequence; NULL for NVTX steps)
--   recompute_ns | BIGINT | ns (busy, forward re-runs in the backward: activation checkpointing; not in bprop_ns)
WITH
found AS (
    SELECT range_id, pid, tid, name, level, source, start_ns, end_ns, CAST(NULL AS BIGINT) AS period_ops
    FROM _nvtx_steps
    UNION ALL
    SELECT NULL, pid, tid, name, name, source, start_ns, end_ns, period_ops FROM _kernel_iterations
),
steps AS (
    SELECT ROW_NUMBER() OVER (PARTITION BY pid ORDER BY start_ns, tid, range_id) AS step, *
    FROM found
),
launched AS (
    SELECT o.op_kind, o.start_ns, o.end_ns, rt.pid, rt.tid, rt.start_ns AS api_start_ns, rt.end_ns AS api_end_ns,
           COALESCE(CAST(a.direction AS VARCHAR), 'other') AS direction
    FROM gpu_op AS o
    JOIN runtime AS rt ON rt.runtime_id = o.runtime_id
    LEFT JOIN gpu_op_attribution AS a ON a.op_kind = o.op_kind AND a.op_id = o.op_id
),
in_step AS (
    SELECT s.pid, s.step, s.tid AS step_tid, s.end_ns AS step_end_ns, l.op_kind, l.tid, l.direction, l.start_ns, l.end_ns
    FROM launched AS l
    ASOF JOIN steps AS s ON s.pid = l.pid AND s.start_ns <= l.api_start_ns
    WHERE l.api_end_ns <= s.end_ns
),
scoped AS (  -- every op once for the step as a whole (scope 0) and once for its direction (1-5): one integer group
    SELECT (pid << 36) | (step << 3) AS grp, start_ns AS s, end_ns AS e FROM in_step
    UNION ALL
    SELECT (pid << 36) | (step << 3) | CASE direction WHEN 'fprop' THEN 1 WHEN 'bprop' THEN 2 WHEN 'optim' THEN 3
                                                 WHEN 'comm' THEN 4 WHEN 'recompute' THEN 7 ELSE 5 END,
           start_ns, end_ns
    FROM in_step
    UNION ALL  -- scope 6: the part after the step's end
    SELECT (pid << 36) | (step << 3) | 6, GREATEST(start_ns, step_end_ns), end_ns FROM in_step WHERE end_ns > step_end_ns
),
busy AS (  -- the union of each group's intervals (queries/macros/union_ns.sql); pid < 2^24, step < 2^33
    SELECT grp >> 36 AS pid, (grp >> 3) & 8589934591 AS step,
           CAST(SUM(busy_ns) FILTER (WHERE grp & 7 = 0) AS BIGINT) AS busy_ns,
           CAST(SUM(busy_ns) FILTER (WHERE grp & 7 = 1) AS BIGINT) AS fprop_ns,
           CAST(SUM(busy_ns) FILTER (WHERE grp & 7 = 2) AS BIGINT) AS bprop_ns,
           CAST(SUM(busy_ns) FILTER (WHERE grp & 7 = 3) AS BIGINT) AS optim_ns,
           CAST(SUM(busy_ns) FILTER (WHERE grp & 7 = 4) AS BIGINT) AS comm_ns,
           CAST(SUM(busy_ns) FILTER (WHERE grp & 7 = 5) AS BIGINT) AS other_ns,
           CAST(SUM(busy_ns) FILTER (WHERE grp & 7 = 6) AS BIGINT) AS overrun_ns,
           CAST(SUM(busy_ns) FILTER (WHERE grp & 7 = 7) AS BIGINT) AS recompute_ns
    FROM union_ns(scoped)
    GROUP BY ALL
),
queued AS (  -- per launch, the latest GPU end of every op its process launched up to it
    SELECT pid, api_start_ns, MAX(end_ns) OVER (PARTITION BY pid ORDER BY api_start_ns, end_ns ROWS UNBOUNDED PRECEDING) AS done_ns
    FROM launched
),
queued_before AS (  -- when the GPU had finished everything launched before the step began
    SELECT s.pid, s.step, q.done_ns
    FROM steps AS s ASOF LEFT JOIN queued AS q ON q.pid = s.pid AND q.api_start_ns < s.start_ns
),
counts AS (
    SELECT pid, step, COUNT(*) AS gpu_ops, COUNT(*) FILTER (WHERE op_kind = 'kernel') AS kernels, MAX(end_ns) AS gpu_end_ns,
           COUNT(*) FILTER (WHERE tid <> step_tid) AS off_thread_ops
    FROM in_step GROUP BY pid, step
)
SELECT s.step, s.name, s.source, s.pid, s.tid, s.range_id, s.start_ns, s.end_ns,
       s.end_ns - s.start_ns AS wall_ns,
       GREATEST(s.end_ns, COALESCE(c.gpu_end_ns, s.end_ns)) - GREATEST(s.start_ns, COALESCE(q.done_ns, s.start_ns))
         AS period_ns,
       COALESCE(c.gpu_ops, 0) AS gpu_ops, COALESCE(c.kernels, 0) AS kernels,
       COALESCE(c.off_thread_ops, 0) AS off_thread_ops,
       COALESCE(b.busy_ns, 0) AS gpu_busy_ns,
       100.0 * COALESCE(b.busy_ns, 0) / NULLIF(s.end_ns - s.start_ns, 0) AS gpu_busy_pct,
       COALESCE(b.fprop_ns, 0) AS fprop_ns, COALESCE(b.bprop_ns, 0) AS bprop_ns,
       COALESCE(b.optim_ns, 0) AS optim_ns, COALESCE(b.comm_ns, 0) AS comm_ns, COALESCE(b.other_ns, 0) AS other_ns,
       COALESCE(b.overrun_ns, 0) AS overrun_ns,
       s.level, c.gpu_end_ns, s.period_ops, COALESCE(b.recompute_ns, 0) AS recompute_ns
FROM steps AS s
LEFT JOIN queued_before AS q ON q.pid = s.pid AND q.step = s.step
LEFT JOIN counts AS c ON c.pid = s.pid AND c.step = s.step
LEFT JOIN busy AS b ON b.pid = s.pid AND b.step = s.step
ORDER BY s.step, s.pid;
