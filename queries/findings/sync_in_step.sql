-- nsysql: findings.sync_in_step v2
-- purpose: Finding: synchronizing CUDA calls inside the analysed steps (device/stream/event/context synchronize, and copies or memsets whose call blocked until they ended), with the GPU idle time they cost.
-- requires: analysis.steady_steps, analysis._step_label, analysis._steady_windows, analysis._process_busy, gpu_op, runtime, runtime_nvtx, nvtx_context, user_range, thread, macros.busy_before, macros.copy_is_sync, macros.human_ns_each, macros.plural_s, macros.call_layers, macros.thread_list, macros.interval_islands, macros.is_sync_call
-- params: $min_pct DOUBLE default 1 (fires when the bound is at least this share of the analysed steps' wall time, %)
-- notes: Synchronizing calls: CUDA API calls named cudaDeviceSynchronize, cudaStreamSynchronize,
--   cudaEventSynchronize, cudaThreadSynchronize or their driver forms (cuCtxSynchronize, cuStreamSynchronize,
--   cuEventSynchronize), on any thread of a process with analysed steps; and calls that launched a copy or memset
--   and blocked, by the rule of analysis.memcpy (a blocking variant cudaMemcpy/cudaMemset/cuMemcpy/cuMemset without
--   Async, or a call that returned only at or after its copy ended, e.g. .item() or a pageable copy). A call
--   belongs to the analysed step of its process in which it starts.
--   Cost of one call c: while the CPU is blocked in it, the GPU drains its queue and then idles, and it stays idle
--   until the CPU hands it new work after c returns. Its window is [c.start, r] with r = c.end when the process's
--   GPUs are busy at c.end, else the start of their next busy interval after c.end, capped at the step's end. The time the CPU spent blocked while the GPU still had queued work is not lost and is not counted.
--   recoverable_ns = sum over analysed steps of |GPU idle ∩ union of the windows of the step's calls|, GPU idle
--   being the complement of the busy intervals of the process's devices (analysis._process_busy): an upper
--   bound of what removing the synchronizations could save. It is part of gpu_idle_in_step's idle time.
--   Fires when recoverable_ns >= $min_pct % of the process's analysed wall time.
--   where: steps, the calling threads, and the three innermost user ranges (layer paths, the step range left
--   out as in `nsysql layers`) of the calls whose own windows hold the most idle time. Evidence numbers are
--   per-step means over the analysed steps.
-- columns:
--   rule | VARCHAR | text (sync_in_step)
--   title | VARCHAR | text
--   where | VARCHAR | text (steps, threads, ranges)
--   evidence | VARCHAR | text (numbers in ms, %)
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
blocking AS (  -- synchronizing calls: by name, or a copy/set call that blocked until its op ended
    SELECT runtime_id, pid, tid, api_short_name AS api, start_ns, end_ns
    FROM runtime
    WHERE is_sync_call(api_short_name)
      AND pid IN (SELECT pid FROM win)
    UNION
    SELECT c.runtime_id, c.pid, c.tid,
           c.api_short_name || CASE WHEN o.op_kind = 'memset' THEN ' (blocking memset)' ELSE ' (blocking copy)' END,
           c.start_ns, c.end_ns
    FROM gpu_op AS o
    JOIN runtime AS c ON c.runtime_id = o.runtime_id
    WHERE o.op_kind IN ('memcpy', 'memset') AND c.pid IN (SELECT pid FROM win)
      AND copy_is_sync(c.api_name, c.end_ns, o.end_ns)  -- queries/macros/copy_is_sync.sql
),
in_step AS (  -- the analysed step each call starts in
    SELECT b.runtime_id, b.pid, b.tid, b.api, b.start_ns, b.end_ns, w.step, w.end_ns AS step_end_ns
    FROM (SELECT *, start_ns // (SELECT ns FROM bucket) AS bucket FROM blocking) AS b
    JOIN _steady_windows AS w ON w.pid = b.pid AND w.bucket = b.bucket
    WHERE b.start_ns >= w.start_ns AND b.start_ns < w.end_ns
),
points AS (  -- per call: its start (side 0), its end (1) and its step's end (2)
    SELECT runtime_id AS id, pid, start_ns AS t, 0 AS side FROM in_step
    UNION ALL SELECT runtime_id, pid, end_ns, 1 FROM in_step
    UNION ALL SELECT runtime_id, pid, step_end_ns, 2 FROM in_step
),
looked AS MATERIALIZED (  -- the busy interval starting last at or before each point (analysis._process_busy, found by
    -- macros.busy_before: one sorted sweep); busy_to = B(t), the busy time up to t
    SELECT p.id, p.side, p.t, b.idx, b.end_ns AS last_end_ns,
           COALESCE(b.before_ns + LEAST(p.t, b.end_ns) - b.start_ns, 0) AS busy_to
    FROM busy_before(points, _process_busy) AS p  -- queries/macros/busy_before.sql
    LEFT JOIN _process_busy AS b ON b.idx = p.idx AND b.pid = p.pid
),
resumed AS (  -- when the GPU got work again after the call: at its end if busy then, else at the next busy
    -- interval's start; capped at the step's end. b_* = B() at the call's start and at that moment.
    SELECT c.*, s.busy_to AS b_start,
           LEAST(CASE WHEN e.last_end_ns > c.end_ns THEN c.end_ns ELSE COALESCE(n.start_ns, c.step_end_ns) END,
                 c.step_end_ns) AS resume_ns,
           CASE WHEN LEAST(CASE WHEN e.last_end_ns > c.end_ns THEN c.end_ns ELSE COALESCE(n.start_ns, c.step_end_ns) END,
                           c.step_end_ns) = c.step_end_ns THEN x.busy_to
                WHEN e.last_end_ns > c.end_ns THEN e.busy_to
                ELSE n.before_ns END AS b_resume
    FROM in_step AS c
    JOIN looked AS s ON s.id = c.runtime_id AND s.side = 0
    JOIN looked AS e ON e.id = c.runtime_id AND e.side = 1
    JOIN looked AS x ON x.id = c.runtime_id AND x.side = 2
    LEFT JOIN _process_busy AS n
           ON n.pid = c.pid AND n.idx = COALESCE(e.idx + 1, (SELECT MIN(idx) FROM _process_busy AS f WHERE f.pid = c.pid))
),
call_idle AS MATERIALIZED (  -- each call's own idle time (for ranking where, and per API)
    SELECT *, (resume_ns - start_ns) - (b_resume - b_start) AS idle_ns FROM resumed
),
call_window AS (  -- the call windows per step (calls of several threads, or back to back, overlap)
    SELECT {'pid': pid, 'step': step} AS grp, start_ns AS s, resume_ns AS e, b_start, b_resume FROM resumed
),
merged_idle AS MATERIALIZED (  -- idle time of each merged window (queries/macros/interval_islands.sql): its length
    -- minus B(end) - B(start)
    SELECT grp.pid AS pid, (MAX(e) - MIN(s)) - (arg_max(b_resume, e) - arg_min(b_start, s)) AS idle_ns
    FROM interval_islands(call_window)
    GROUP BY grp, island
),
per_pid AS (
    SELECT w.pid, COUNT(*) AS steps, SUM(w.wall_ns) AS wall_ns,
           (SELECT SUM(idle_ns) FROM merged_idle AS i WHERE i.pid = w.pid) AS idle_ns,
           (SELECT COUNT(*) FROM call_idle AS c WHERE c.pid = w.pid) AS calls,
           (SELECT SUM(end_ns - start_ns) FROM call_idle AS c WHERE c.pid = w.pid) AS blocked_ns
    FROM win AS w GROUP BY w.pid
),
per_api AS (
    SELECT pid, string_agg(api || ' ' || printf('%,d', n), ', ' ORDER BY n DESC, api) AS apis
    FROM (SELECT pid, api, COUNT(*) AS n FROM call_idle GROUP BY pid, api) GROUP BY pid
),
layer_call AS (SELECT pid, runtime_id, idle_ns AS weight FROM call_idle),
layers AS (  -- the top 3 user-range paths by GPU idle time (queries/macros/call_layers.sql)
    SELECT pid, layers FROM call_layers(layer_call, runtime_nvtx, nvtx_context, user_range)
),
threads AS (SELECT pid, threads, n FROM thread_list(call_idle, thread)),  -- queries/macros/thread_list.sql
fired AS (
    SELECT p.*, a.apis, l.layers, t.threads, t.n AS thread_count, s.label
    FROM per_pid AS p
    JOIN per_api AS a USING (pid)
    JOIN threads AS t USING (pid)
    JOIN _step_label AS s USING (pid)
    LEFT JOIN layers AS l USING (pid)
    WHERE p.calls > 0 AND p.idle_ns > 0 AND 100.0 * p.idle_ns >= $min_pct * p.wall_ns
),
shown AS (  -- the per-step numbers in human units: d[1], d[2], ...
    SELECT *, human_ns_each([idle_ns / steps, blocked_ns / steps]) AS d
    FROM fired
)
SELECT 'sync_in_step' AS rule,
       printf('Host synchronization inside steps: GPU idle %s per step (%.1f%%)', d[1], 100.0 * idle_ns / wall_ns)
         AS title,
       label || ', thread' || CASE WHEN thread_count > 1 THEN 's ' ELSE ' ' END || threads
         || CASE WHEN layers IS NOT NULL THEN ', in ' || layers ELSE '' END AS "where",
       printf('%,d synchronizing call%s in %,d step%s (%s). ', calls, plural_s(calls),
              steps, plural_s(steps), apis)
         || CASE WHEN steps = 1 THEN 'They' ELSE 'Per step they' END
         || printf(' blocked the CPU %s and left the GPU idle %s (%.1f%% of the step wall time), from their start '
                   || 'until the GPU got work again.', d[2], d[1], 100.0 * idle_ns / wall_ns) AS evidence,
       'Keep the step free of host synchronization: drop torch.cuda.synchronize(), .item(), .cpu(), .tolist() '
         || 'and printing tensors inside it (read metrics every N steps, time with CUDA events), and copy with '
         || 'non_blocking=True from pinned memory.' AS action,
       CAST(idle_ns AS BIGINT) AS recoverable_ns,
       100.0 * idle_ns / wall_ns AS recoverable_pct
FROM shown
ORDER BY recoverable_ns DESC, pid;
