-- nsysql: analysis.steps v5
-- purpose: Training/inference iterations (steps): wall time, GPU busy time of the work launched in each, and how many GPU ops, from step-named NVTX ranges or else from a repeating pattern of top-level ranges.
-- requires: nvtx_range, user_range, thread, gpu_op_attribution, macros.union_ns
-- params: none
-- notes: Named steps: top-level user ranges (not PyTorch op markers nor library ranges) named like a step,
--   ignoring case: profiled_step, step, step_N, train_step, iteration N, iter_N, ProfilerStep#N (user_range.is_step,
--   the same ranges that kernel attribution leaves out of layer paths). A library's ranges never make steps (NCCL's,
--   nvFuser's are no user ranges; TensorRT's layer ranges are, but only layers). When the export has none, steps come from
--   a pattern: per process, on the thread with the most top-level user ranges (PyTorch autograd threads
--   `pt_autograd_*` never), the first top-level name that occurs twice or more (e.g. forward_pass in
--   forward_pass, backward_pass, optimizer_step, forward_pass, ...) starts a step at each occurrence; a pattern
--   step runs from that range's start to the latest end of the top-level ranges before the next occurrence.
--   Ranges before the first occurrence (e.g. `warmup`) are in no step.
--   A GPU op (kernel, memcpy, memset, or a CUDA graph traced at graph level) is in a step when the CUDA call that launched it lies inside the step's
--   time span on ANY thread of the step's process: PyTorch launches backward kernels from its autograd thread,
--   outside the main thread's ranges. Steps of one process are assumed not to overlap (an op goes to the
--   latest step that started before its launch). gpu_busy_ns is the length of the union of the step's op
--   intervals on all devices; ops may run past the step's end when nothing synchronizes (queued kernels, NCCL
--   kernels spinning until a late rank arrives): overrun_ns is the part of that union after the step's end, so
--   gpu_busy_pct above 100 % always comes with overrun_ns > 0. An export without CUDA
--   activity (--trace=nvtx only) still has steps, with GPU columns 0. fprop/bprop/optim/comm/other
--   are the busy times of the step's ops of each direction (gpu_op_attribution: bprop includes the autograd
--   thread's work, optim the optimizer's, comm NCCL's kernels); each is a union, so they add up to more than gpu_busy_ns only where
--   ops of two directions overlap in time (several streams).
--   Steps are numbered per process (1, 2, ... in start order within the process), so the ranks of a torchrun
--   capture compare step by step: (pid, step) names a step, and queries join on both. Rows are in (step, pid)
--   order: with several processes, each step's rows are together.
-- columns:
--   step | BIGINT | index (1, 2, ... in start order within the process)
--   name | VARCHAR | text (the step range's text; for a pattern, its first range's text)
--   source | VARCHAR | text (range: a step-named range; pattern: a repetition of top-level ranges)
--   pid | BIGINT | id
--   tid | BIGINT | id (thread whose ranges make the step)
--   range_id | BIGINT | id (the step range, or the pattern step's first range)
--   start_ns | BIGINT | ns timestamp
--   end_ns | BIGINT | ns timestamp
--   wall_ns | BIGINT | ns (end - start)
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
WITH
top_level AS (  -- top-level user ranges, with their thread's name
    SELECT u.range_id, u.global_tid, u.pid, r.tid, r.text, u.start_ns, u.end_ns, u.is_step,
           COALESCE(starts_with(t.thread_name, 'pt_autograd'), false) AS is_autograd
    FROM user_range AS u
    JOIN nvtx_range AS r ON r.range_id = u.range_id
    LEFT JOIN thread AS t ON t.global_tid = u.global_tid
    WHERE u.user_depth = 0 AND r.end_global_tid IS NULL AND NOT u.from_library  -- a library's layers make no step
),
named_steps AS (
    SELECT range_id, pid, tid, text AS name, start_ns, end_ns, 'range' AS source FROM top_level WHERE is_step
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
           MIN(start_ns) AS start_ns, MAX(end_ns) AS end_ns, 'pattern' AS source
    FROM numbered
    WHERE occurrence > 0 AND NOT EXISTS (SELECT 1 FROM named_steps)
    GROUP BY pid, occurrence
),
steps AS (
    SELECT ROW_NUMBER() OVER (PARTITION BY pid ORDER BY start_ns, tid, range_id) AS step, *
    FROM (SELECT range_id, pid, tid, name, start_ns, end_ns, source FROM named_steps
          UNION ALL
          SELECT range_id, pid, tid, name, start_ns, end_ns, source FROM pattern_steps)
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
                                                 WHEN 'comm' THEN 4 ELSE 5 END,
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
           CAST(SUM(busy_ns) FILTER (WHERE grp & 7 = 6) AS BIGINT) AS overrun_ns
    FROM union_ns(scoped)
    GROUP BY ALL
),
counts AS (
    SELECT pid, step, COUNT(*) AS gpu_ops, COUNT(*) FILTER (WHERE op_kind = 'kernel') AS kernels,
           COUNT(*) FILTER (WHERE tid <> step_tid) AS off_thread_ops
    FROM in_step GROUP BY pid, step
)
SELECT s.step, s.name, s.source, s.pid, s.tid, s.range_id, s.start_ns, s.end_ns, s.end_ns - s.start_ns AS wall_ns,
       COALESCE(c.gpu_ops, 0) AS gpu_ops, COALESCE(c.kernels, 0) AS kernels,
       COALESCE(c.off_thread_ops, 0) AS off_thread_ops,
       COALESCE(b.busy_ns, 0) AS gpu_busy_ns,
       100.0 * COALESCE(b.busy_ns, 0) / NULLIF(s.end_ns - s.start_ns, 0) AS gpu_busy_pct,
       COALESCE(b.fprop_ns, 0) AS fprop_ns, COALESCE(b.bprop_ns, 0) AS bprop_ns,
       COALESCE(b.optim_ns, 0) AS optim_ns, COALESCE(b.comm_ns, 0) AS comm_ns, COALESCE(b.other_ns, 0) AS other_ns,
       COALESCE(b.overrun_ns, 0) AS overrun_ns
FROM steps AS s
LEFT JOIN counts AS c ON c.pid = s.pid AND c.step = s.step
LEFT JOIN busy AS b ON b.pid = s.pid AND b.step = s.step
ORDER BY s.step, s.pid;
