-- nsysql: findings.launch_bound v5
-- purpose: Finding: threads that cannot launch GPU work as fast as the GPU runs it inside the analysed steps (kernels shorter than their launch calls, the GPU idle between them), which CUDA graphs or torch.compile would fix.
-- requires: analysis.steady_steps, analysis._step_label, analysis._steady_windows, analysis._process_busy, gpu_op, runtime, gpu_op_attribution, user_range, thread, macros.human_ns_each, macros.plural_s, macros.thread_names, analysis.structure
-- params: $min_launches_per_step BIGINT default 20 (fewest launches per analysed step, on average), $min_short_pct DOUBLE default 50 (share of the thread's kernels that ran shorter than their launch call, %), $max_gap_ns BIGINT default 1000000 (longest idle gap counted as waiting for a launch, ns), $min_pct DOUBLE default 1 (fires when the bound is at least this share of the analysed steps' wall time, %)
-- notes: The advice of an inference program (analysis.structure's program_kind) names decode steps and no
--   optimizer. Launch: a GPU op (kernel, copy, set) and the CUDA call that launched it (correlationId AND process); it
--   belongs to the analysed step of its process in which the call starts, and to the call's thread.
--   Busy = the busy intervals of the process's devices (analysis._process_busy); a gap is the idle time between two
--   consecutive ones. The op of the process that ends a gap starts exactly at its end (of several: one with a
--   launching call, then kernels first, then by kind and id); a gap ended by another process's op is not counted. The GPU waited for that op's launch when its call returned after the gap began
--   (call end > gap start): the work reached the GPU only after it had run dry.
--   Per launching thread: it is launch-bound when it made at least $min_launches_per_step launches per analysed
--   step and at least $min_short_pct % of its kernels ran shorter than their launch call (kernel duration < call
--   duration): the GPU finishes each kernel faster than the CPU issues the next.
--   recoverable_ns = sum of the gaps, clipped to their step, that the thread's launches ended while the GPU waited
--   for them, counting only gaps of at most $max_gap_ns (longer idle is something else: data, I/O, host work).
--   A CUDA graph replays the launches back to back, so at most this idle time goes. Gaps belong to one thread each,
--   so two threads' findings do not overlap; both are part of gpu_idle_in_step's idle time.
--   Fires when launch-bound and recoverable_ns >= $min_pct % of the process's analysed wall time.
--   where: steps, the thread, and the top-level user ranges (first component of the layer path from kernel
--   attribution, e.g. forward_pass, optimizer_step; `backward` for backward ops, `communication` for NCCL's kernels,
--   direction comm) whose ops ended the most waiting.
--   Medians are quantile_cont 0.5 over the thread's kernel launches in the analysed steps.
-- columns:
--   rule | VARCHAR | text (launch_bound)
--   title | VARCHAR | text
--   where | VARCHAR | text (steps, thread, ranges)
--   evidence | VARCHAR | text (numbers in ms, µs, %)
--   action | VARCHAR | text
--   recoverable_ns | BIGINT | ns (upper bound of wall time recoverable, total over the analysed steps)
--   recoverable_pct | DOUBLE | pct of the analysed steps' wall time | 1
WITH
win AS (  -- the analysed steady-state step windows
    SELECT step, pid, tid, start_ns, end_ns, end_ns - start_ns AS wall_ns FROM steady_steps WHERE analysed
),
bucket AS (  -- bucket width of analysis._steady_windows: the analysed step holding time t is a hash join away
    SELECT MIN(bucket_ns) AS ns FROM _steady_windows
),
launch AS MATERIALIZED (  -- every launch in an analysed step, with its thread
    SELECT c.pid, c.tid, w.step, o.op_kind, o.end_ns - o.start_ns AS op_ns, c.end_ns - c.start_ns AS api_ns,
           o.pid AS op_pid, o.start_ns AS op_start_ns
    FROM gpu_op AS o
    JOIN (SELECT runtime_id, pid, tid, start_ns, end_ns, start_ns // (SELECT ns FROM bucket) AS bucket FROM runtime) AS c
      ON c.runtime_id = o.runtime_id
    JOIN _steady_windows AS w ON w.pid = c.pid AND w.bucket = c.bucket
    WHERE c.start_ns >= w.start_ns AND c.start_ns < w.end_ns
),
gap AS MATERIALIZED (  -- idle gaps of the process's GPUs no longer than $max_gap_ns (analysis._process_busy) that an op
    -- launched in an analysed step ends: only those can count (below), so the others are never joined to the ops
    SELECT g.pid, g.start_ns, g.prev_end_ns
    FROM _process_busy AS g
    SEMI JOIN launch AS l ON l.op_pid = g.pid AND l.op_start_ns = g.start_ns
    WHERE g.pid IN (SELECT pid FROM win) AND g.prev_end_ns IS NOT NULL
      AND g.start_ns - g.prev_end_ns <= $max_gap_ns
),
gap_op AS (  -- those gaps and the op of the process that ends each (it starts exactly at the gap's end; of several: one with a launching call, then
    -- kernels first, then by kind and id: the smallest key below, kind and id packed into one number), with its call
    SELECT m.pid, m.gap_start_ns, m.gap_end_ns, o.runtime_id, o.op_kind, o.op_id
    FROM (SELECT g.pid, g.start_ns AS gap_end_ns, MIN(g.prev_end_ns) AS gap_start_ns,
                 MIN((CASE WHEN o.runtime_id IS NULL THEN 4 ELSE 0 END
                      + CASE o.op_kind WHEN 'kernel' THEN 0 WHEN 'memcpy' THEN 1 WHEN 'memset' THEN 2 ELSE 3 END)
                     * 1152921504606846976
                     + o.op_id) AS key
          FROM gap AS g
          JOIN gpu_op AS o ON o.pid = g.pid AND o.start_ns = g.start_ns
          GROUP BY g.pid, g.start_ns) AS m
    JOIN gpu_op AS o
      ON o.op_kind = CASE (m.key // 1152921504606846976) % 4 WHEN 0 THEN 'kernel' WHEN 1 THEN 'memcpy' WHEN 2 THEN 'memset'
                     ELSE 'graph' END
     AND o.op_id = m.key % 1152921504606846976
),
waited AS MATERIALIZED (  -- gaps the GPU spent waiting for a launch, in the analysed step of the launching call
    SELECT g.*, c.tid, w.step,
           LEAST(g.gap_end_ns, w.end_ns) - GREATEST(g.gap_start_ns, w.start_ns) AS wait_ns
    FROM gap_op AS g
    JOIN (SELECT runtime_id, pid, tid, start_ns, end_ns, start_ns // (SELECT ns FROM bucket) AS bucket FROM runtime) AS c
      ON c.runtime_id = g.runtime_id
    JOIN _steady_windows AS w ON w.pid = c.pid AND w.bucket = c.bucket
    WHERE c.start_ns >= w.start_ns AND c.start_ns < w.end_ns AND c.end_ns > g.gap_start_ns
      AND LEAST(g.gap_end_ns, w.end_ns) > GREATEST(g.gap_start_ns, w.start_ns)
),
per_pid AS (
    SELECT pid, COUNT(*) AS steps, SUM(wall_ns) AS wall_ns FROM win GROUP BY pid
),
per_thread AS (
    SELECT l.pid, l.tid, COUNT(*) AS launches, COUNT(*) FILTER (WHERE op_kind = 'kernel') AS kernels,
           COUNT(*) FILTER (WHERE op_kind = 'kernel' AND op_ns < api_ns) AS short_kernels,
           quantile_cont(op_ns, 0.5) FILTER (WHERE op_kind = 'kernel') AS median_kernel_ns,
           quantile_cont(api_ns, 0.5) FILTER (WHERE op_kind = 'kernel') AS median_api_ns
    FROM launch AS l GROUP BY l.pid, l.tid
),
wait_thread AS (
    SELECT pid, tid, COUNT(*) AS gaps, SUM(wait_ns) AS wait_ns FROM waited GROUP BY pid, tid
),
wait_layer AS (  -- where the waiting happened: the top-level user range of the op ending the gap ('backward' for bprop,
    -- 'communication' for NCCL's kernels)
    SELECT w.pid, w.tid,
           CASE WHEN a.direction = 'bprop' THEN 'backward' WHEN a.direction = 'comm' THEN 'communication'
                ELSE COALESCE(split_part(u.layer, '/', 1), '(outside user ranges)') END AS top_range,
           SUM(w.wait_ns) AS wait_ns
    FROM waited AS w
    LEFT JOIN gpu_op_attribution AS a ON a.op_kind = w.op_kind AND a.op_id = w.op_id
    LEFT JOIN user_range AS u ON u.range_id = a.layer_range_id
    GROUP BY w.pid, w.tid, top_range
),
layers AS (
    SELECT pid, tid, string_agg(top_range, ', ' ORDER BY wait_ns DESC, top_range) AS layers
    FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY pid, tid ORDER BY wait_ns DESC, top_range) AS rank FROM wait_layer)
    WHERE rank <= 3 GROUP BY pid, tid
),
fired AS (
    SELECT p.pid, t.tid, p.steps, p.wall_ns, t.launches, t.kernels, t.short_kernels, t.median_kernel_ns,
           t.median_api_ns, w.gaps, w.wait_ns, l.layers, s.label,
           COALESCE(n.thread_name, '?') || ' (' || t.tid || ')' AS thread
    FROM per_thread AS t
    JOIN per_pid AS p USING (pid)
    JOIN wait_thread AS w USING (pid, tid)
    JOIN _step_label AS s USING (pid)
    LEFT JOIN layers AS l USING (pid, tid)
    LEFT JOIN thread_names(thread) AS n
           ON n.pid = t.pid AND n.tid = t.tid
    WHERE t.launches >= $min_launches_per_step * p.steps AND t.kernels > 0
      AND 100.0 * t.short_kernels >= $min_short_pct * t.kernels
      AND w.wait_ns > 0 AND 100.0 * w.wait_ns >= $min_pct * p.wall_ns
),
shown AS (  -- the per-step numbers in human units: d[1], d[2], ...
    SELECT *, human_ns_each([wait_ns / steps, median_kernel_ns, median_api_ns, $max_gap_ns]) AS d
    FROM fired
)
SELECT 'launch_bound' AS rule,
       printf('Launch-bound thread %s: GPU waits %s per step (%.1f%%)', thread, d[1], 100.0 * wait_ns / wall_ns) AS title,
       label || ', thread ' || thread || CASE WHEN layers IS NOT NULL THEN ', in ' || layers ELSE '' END AS "where",
       printf('%,d launches in %,d step%s; %.0f%% of its %,d kernels ran shorter than their launch call (median kernel %s, '
              || 'median launch call %s). ', launches, steps, plural_s(steps),
              100.0 * short_kernels / kernels, kernels, d[2], d[3])
         || printf('The GPU ran dry and waited for its next launch in %,d gaps of at most %s: %s per step '
                   || '(%.1f%% of the step wall time).', gaps, d[4], d[1], 100.0 * wait_ns / wall_ns) AS evidence,
       CASE WHEN (SELECT MIN(program_kind) FROM structure AS k WHERE k.pid = shown.pid) = 'inference'
            THEN 'Cut the launches: capture each decode step (or the forward) in a CUDA graph - torch.compile(mode='
                 || '"reduce-overhead") or torch.cuda.graphs, with static shapes (a static KV cache) - and fuse '
                 || 'small ops with torch.compile; give each kernel more work (batch more requests together).'
            ELSE 'Cut the launches: capture the step (or its forward/backward) in a CUDA graph - torch.compile(mode='
                 || '"reduce-overhead") or torch.cuda.graphs - and fuse small ops with torch.compile; use '
                 || 'fused/foreach optimizers; give each kernel more work (larger batches).' END AS action,
       CAST(wait_ns AS BIGINT) AS recoverable_ns,
       100.0 * wait_ns / wall_ns AS recoverable_pct
FROM shown
ORDER BY recoverable_ns DESC, pid, tid;
