-- nsysql: findings.gpu_idle_in_step v3
-- purpose: Finding: the GPU idle inside the analysed steady-state steps, with what the step's own thread was doing meanwhile (its ranges, CUDA API calls, OS calls).
-- requires: analysis.steady_steps, analysis._step_label, analysis._steady_windows, analysis._step_busy, user_range, runtime, thread, macros.busy_in_step, macros.human_ns, macros.human_ns_each, macros.thread_label, macros.thread_names, macros.per_step_phrase, macros.union_islands
-- params: $min_idle_pct DOUBLE default 10 (fires when the GPU idles at least this share of the analysed steps' wall time, %)
-- notes: Windows: the analysed steps of analysis.steady_steps (warm-up excluded); one finding per process with
--   analysed steps. Busy = the busy intervals of the process's devices (analysis._process_busy: any kernel, copy or
--   set running on a device it used; analysis._step_busy clips them to the steps); idle in a step = wall - |busy
--   clipped to the step|.
--   Fires when total idle >= $min_idle_pct % of the total wall time of the process's analysed steps.
--   recoverable_ns = sum over the analysed steps of (wall - busy): the wall time the steps would lose if the GPU
--   never waited. A ceiling shared by every other finding about idle time (sync_in_step, launch_bound,
--   dataloader_wait, short_kernels each bound a part of it): do not add them up.
--   What the CPU was doing: on the step's own thread (the thread whose ranges make the step), the idle time
--   inside each of its user ranges one level below the step (forward_pass, backward_pass, dataloader, ... :
--   the shallowest user ranges of that thread inside the step other than the step range itself), inside its
--   CUDA API calls (their union) and inside its OS runtime calls (their union; the call name with the most idle
--   time in brackets); the rest of the idle time (outside every call) is the thread's own code, e.g. Python.
--   Each is |idle ∩ X| = |X| - |busy ∩ X| with X's intervals disjoint, computed from prefix sums of busy time
--   in one sorted sweep per process (no interval self-join; no ASOF join, which DuckDB may run as a nested loop
--   when it underestimates the probe side). Evidence numbers are per-step means over the analysed
--   steps; recoverable_ns and recoverable_pct are totals over them.
-- columns:
--   rule | VARCHAR | text (gpu_idle_in_step)
--   title | VARCHAR | text
--   where | VARCHAR | text (steps, process's step thread)
--   evidence | VARCHAR | text (numbers in ms, %)
--   action | VARCHAR | text
--   recoverable_ns | BIGINT | ns (upper bound of wall time recoverable, total over the analysed steps)
--   recoverable_pct | DOUBLE | pct of the analysed steps' wall time | 1
WITH
win AS (  -- the analysed steady-state step windows
    SELECT step, pid, tid, start_ns, end_ns, end_ns - start_ns AS wall_ns FROM steady_steps WHERE analysed
),
bucket AS (  -- bucket width of analysis._steady_windows: the window holding time t is a hash join away
    SELECT MIN(bucket_ns) AS ns FROM _steady_windows
),
-- Probe intervals (kind, step, pid, name, s, e): the windows themselves, the step thread's child ranges, its
-- CUDA calls and its OS calls, each clipped to its analysed step (found by bucket: analysis._steady_windows).
thread_range AS (
    SELECT w.step, w.pid, r.text, u.user_depth, u.is_step,
           GREATEST(u.start_ns, w.start_ns) AS s, LEAST(u.end_ns, w.end_ns) AS e
    FROM (SELECT range_id, pid, user_depth, is_step, start_ns, end_ns, start_ns // (SELECT ns FROM bucket) AS bucket
          FROM user_range) AS u
    JOIN nvtx_range AS r ON r.range_id = u.range_id
    JOIN _steady_windows AS w ON w.pid = u.pid AND w.bucket = u.bucket
    WHERE r.tid = w.tid AND u.start_ns >= w.start_ns AND u.start_ns < w.end_ns
),
child AS (
    SELECT step, pid, text, s, e, user_depth,
           MIN(user_depth) FILTER (WHERE NOT is_step) OVER (PARTITION BY pid, step) AS child_depth
    FROM thread_range WHERE NOT is_step
),
cuda_call AS (
    SELECT w.step, w.pid, GREATEST(c.start_ns, w.start_ns) AS s, LEAST(c.end_ns, w.end_ns) AS e
    FROM (SELECT pid, tid, start_ns, end_ns, start_ns // (SELECT ns FROM bucket) AS bucket FROM runtime) AS c
    JOIN _steady_windows AS w ON w.pid = c.pid AND w.tid = c.tid AND w.bucket = c.bucket
    WHERE c.start_ns >= w.start_ns AND c.start_ns < w.end_ns
),
os_call AS (
    SELECT w.step, w.pid, c.api_name, COALESCE(c.nesting_level, 0) AS nesting_level,
           GREATEST(c.start_ns, w.start_ns) AS s, LEAST(c.end_ns, w.end_ns) AS e
    FROM (SELECT pid, tid, api_name, nesting_level, start_ns, end_ns, start_ns // (SELECT ns FROM bucket) AS bucket
          FROM osrt) AS c
    JOIN _steady_windows AS w ON w.pid = c.pid AND w.tid = c.tid AND w.bucket = c.bucket
    WHERE c.start_ns >= w.start_ns AND c.start_ns < w.end_ns
),
call_interval AS (  -- CUDA calls (kind 'cuda'), OS calls ('os') and both ('calls') of the thread, per step
    SELECT {'kind': kind, 'pid': pid, 'step': step} AS grp, s, e
    FROM (SELECT 'cuda' AS kind, step, pid, s, e FROM cuda_call UNION ALL SELECT 'os', step, pid, s, e FROM os_call
          UNION ALL SELECT 'calls', step, pid, s, e FROM cuda_call UNION ALL SELECT 'calls', step, pid, s, e FROM os_call)
),
call_union AS (  -- merged per step (queries/macros/union_islands.sql)
    SELECT grp.kind AS kind, grp.step AS step, grp.pid AS pid, s, e FROM union_islands(call_interval)
),
probe AS (
    SELECT ROW_NUMBER() OVER () AS id, *
    FROM (SELECT 'window' AS kind, step, pid, NULL AS name, start_ns AS s, end_ns AS e FROM win
          UNION ALL
          SELECT 'range', step, pid, text, s, e FROM child WHERE user_depth = child_depth
          UNION ALL
          SELECT kind, step, pid, NULL, s, e FROM call_union
          UNION ALL
          SELECT 'os_name', step, pid, api_name, s, e FROM os_call WHERE nesting_level = 0)
),
probe_busy AS (SELECT * FROM busy_in_step(probe, _step_busy)),  -- queries/macros/busy_in_step.sql
probe_idle AS MATERIALIZED (
    SELECT p.kind, p.step, p.pid, p.name, (p.e - p.s) - b.busy_ns AS idle_ns
    FROM probe AS p JOIN probe_busy AS b USING (id)
),
per_pid AS (
    SELECT w.pid, arg_min(w.tid, w.step) AS tid, COUNT(*) AS steps, SUM(w.wall_ns) AS wall_ns, MAX(w.step) AS last_step,
           (SELECT SUM(idle_ns) FROM probe_idle AS i WHERE i.kind = 'window' AND i.pid = w.pid) AS idle_ns
    FROM win AS w GROUP BY w.pid
),
range_idle AS (
    SELECT pid, name, SUM(idle_ns) AS idle_ns,
           ROW_NUMBER() OVER (PARTITION BY pid ORDER BY SUM(idle_ns) DESC, name) AS rank
    FROM probe_idle WHERE kind = 'range' GROUP BY pid, name
),
os_name_idle AS (
    SELECT pid, arg_max(name, (idle_ns, name)) AS name
    FROM (SELECT pid, name, SUM(idle_ns) AS idle_ns FROM probe_idle WHERE kind = 'os_name' GROUP BY pid, name)
    WHERE idle_ns > 0 GROUP BY pid
),
context AS (
    SELECT p.pid,
           (SELECT string_agg(r.name || ' ' || list_transform([r.idle_ns / p.steps], lambda x: human_ns(x))[1], ', ' ORDER BY r.rank)
            FROM range_idle AS r WHERE r.pid = p.pid AND r.rank <= 3 AND r.idle_ns > 0) AS ranges,
           (SELECT SUM(idle_ns) FROM probe_idle AS i WHERE i.kind = 'cuda' AND i.pid = p.pid) AS cuda_ns,
           (SELECT SUM(idle_ns) FROM probe_idle AS i WHERE i.kind = 'os' AND i.pid = p.pid) AS os_ns,
           (SELECT SUM(idle_ns) FROM probe_idle AS i WHERE i.kind = 'calls' AND i.pid = p.pid) AS calls_ns,
           (SELECT name FROM os_name_idle AS o WHERE o.pid = p.pid) AS os_name
    FROM per_pid AS p
),
fired AS (
    SELECT p.*, c.ranges, COALESCE(c.cuda_ns, 0) AS cuda_ns, COALESCE(c.os_ns, 0) AS os_ns,
           COALESCE(c.calls_ns, 0) AS calls_ns, c.os_name,
           l.label, thread_label(t.thread_name, p.tid) AS thread
    FROM per_pid AS p
    JOIN context AS c USING (pid)
    JOIN _step_label AS l USING (pid)
    LEFT JOIN thread_names(thread) AS t ON t.pid = p.pid AND t.tid = p.tid
    WHERE p.idle_ns > 0 AND 100.0 * p.idle_ns >= $min_idle_pct * p.wall_ns
),
shown AS (  -- the per-step numbers in human units: d[1], d[2], ...
    SELECT *, human_ns_each([idle_ns / steps, wall_ns / steps, cuda_ns / steps, os_ns / steps,
                (idle_ns - calls_ns) / steps]) AS d
    FROM fired
)
SELECT 'gpu_idle_in_step' AS rule,
       printf('GPU idle inside steps: %s of %s per step (%.1f%%)', d[1], d[2], 100.0 * idle_ns / wall_ns) AS title,
       label || ', thread ' || thread AS "where",
       per_step_phrase(last_step, steps)  -- queries/macros/per_step_phrase.sql
         || printf(': no GPU op ran for %s of %s (%.1f%%). Step thread meanwhile:', d[1], d[2],
                   100.0 * idle_ns / wall_ns)
         || CASE WHEN ranges IS NOT NULL THEN ' in ' || ranges || ';' ELSE '' END
         || printf(' in CUDA API calls %s, OS calls %s', d[3], d[4])
         || CASE WHEN os_name IS NOT NULL THEN ' (mostly ' || os_name || ')' ELSE '' END
         || printf(', its own code (e.g. Python) %s.', d[5]) AS evidence,
       'Find what the GPU waits for (`nsysql gaps`, the other findings): feed it ahead of time - overlap data '
         || 'loading and host work with GPU work, drop synchronizations inside the step, and cut launch overhead '
         || '(CUDA graphs, torch.compile, larger batches).' AS action,
       CAST(idle_ns AS BIGINT) AS recoverable_ns,
       100.0 * idle_ns / wall_ns AS recoverable_pct
FROM shown
ORDER BY recoverable_ns DESC, pid;
