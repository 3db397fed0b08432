-- nsysql: findings.dataloader_wait v3
-- purpose: Finding: the step's thread waiting for its next batch (inside a data-loading NVTX range) while the GPU has nothing to do, in the analysed steps.
-- requires: analysis.steady_steps, analysis._step_label, analysis._step_busy, nvtx_range, thread, macros.busy_in_step, macros.human_ns_each, macros.thread_label, macros.thread_names, macros.per_step_phrase, macros.union_islands, macros.is_data_loading
-- params: $min_pct DOUBLE default 1 (fires when the bound is at least this share of the analysed steps' wall time, %)
-- notes: Data-loading range: an NVTX range (user range or PyTorch marker) on the step's own thread whose text
--   matches, ignoring case, dataloader|data[ _-]?load|load[ _-]?(batch|data)|(next|get|fetch)[ _-]?batch|^data$|
--   ^batch$|input[ _-]?pipeline: `dataloader`, `data_loading`, `load_batch`, `next_batch`, PyTorch's
--   `enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__` profiler marker. Its part inside an analysed step
--   of its process counts; nested or overlapping ones are merged.
--   recoverable_ns = sum over analysed steps of |data-loading time ∩ GPU idle| = |L| - |L ∩ busy|, busy being the
--   busy intervals of the process's devices (analysis._process_busy, clipped to the step: analysis._step_busy):
--   the time the GPU waited while the step fetched data. Loading ahead (worker processes, prefetching) could hide at most that. Part of
--   gpu_idle_in_step's idle time. Waiting for data before a step range opens is outside every step and not
--   counted (gpu_idle_in_step does not count it either).
--   Fires when recoverable_ns >= $min_pct % of the process's analysed wall time. where: steps, the thread and the
--   range names (most time first). Numbers per step are means over the analysed steps.
-- columns:
--   rule | VARCHAR | text (dataloader_wait)
--   title | VARCHAR | text
--   where | VARCHAR | text (steps, thread, ranges)
--   evidence | VARCHAR | text (numbers in ms, %)
--   action | VARCHAR | text
--   recoverable_ns | BIGINT | ns (upper bound of wall time recoverable, total over the analysed steps)
--   recoverable_pct | DOUBLE | pct of the analysed steps' wall time | 1
WITH
win AS (  -- the analysed steady-state step windows
    SELECT step, pid, tid, start_ns, end_ns, end_ns - start_ns AS wall_ns FROM steady_steps WHERE analysed
),
loading AS MATERIALIZED (  -- data-loading ranges of the step threads, clipped to their analysed step
    SELECT w.step, w.pid, w.tid, r.text, GREATEST(r.start_ns, w.start_ns) AS s, LEAST(r.end_ns, w.end_ns) AS e
    FROM nvtx_range AS r
    JOIN win AS w ON w.pid = r.pid AND w.tid = r.tid AND r.start_ns < w.end_ns AND r.end_ns > w.start_ns
    WHERE is_data_loading(r.text)
),
load_interval AS (SELECT {'pid': pid, 'step': step} AS grp, s, e FROM loading),
merged AS (  -- nested or overlapping ones merged (queries/macros/union_islands.sql)
    SELECT grp.step AS step, grp.pid AS pid, s, e FROM union_islands(load_interval)
),
probe AS (
    SELECT ROW_NUMBER() OVER () AS id, step, pid, s, e FROM merged
),
probe_busy AS (SELECT * FROM busy_in_step(probe, _step_busy)),  -- queries/macros/busy_in_step.sql
merged_idle AS MATERIALIZED (
    SELECT p.step, p.pid, p.e - p.s AS load_ns, (p.e - p.s) - b.busy_ns AS idle_ns
    FROM probe AS p JOIN probe_busy AS b USING (id)
),
per_pid AS (
    SELECT w.pid, arg_min(w.tid, w.step) AS tid, COUNT(*) AS steps, SUM(w.wall_ns) AS wall_ns, MAX(w.step) AS last_step,
           (SELECT SUM(load_ns) FROM merged_idle AS i WHERE i.pid = w.pid) AS load_ns,
           (SELECT SUM(idle_ns) FROM merged_idle AS i WHERE i.pid = w.pid) AS idle_ns,
           (SELECT COUNT(DISTINCT step) FROM merged_idle AS i WHERE i.pid = w.pid) AS loading_steps
    FROM win AS w GROUP BY w.pid
),
names AS (
    SELECT pid, string_agg(text, ', ' ORDER BY t DESC, text) AS names
    FROM (SELECT pid, text, SUM(e - s) AS t, ROW_NUMBER() OVER (PARTITION BY pid ORDER BY SUM(e - s) DESC, text) AS rank
          FROM loading GROUP BY pid, text)
    WHERE rank <= 3 GROUP BY pid
),
fired AS (
    SELECT p.*, n.names, l.label, thread_label(t.thread_name, p.tid) AS thread
    FROM per_pid AS p
    JOIN names AS n USING (pid)
    JOIN _step_label AS l USING (pid)
    LEFT JOIN thread_names(thread) AS t ON t.pid = p.pid AND t.tid = p.tid
    WHERE p.idle_ns > 0 AND 100.0 * p.idle_ns >= $min_pct * p.wall_ns
),
shown AS (  -- the per-step numbers in human units: d[1], d[2], ...
    SELECT *, human_ns_each([idle_ns / steps, load_ns / steps]) AS d
    FROM fired
)
SELECT 'dataloader_wait' AS rule,
       printf('Waiting for data with the GPU idle: %s per step (%.1f%%)', d[1], 100.0 * idle_ns / wall_ns) AS title,
       label || ', thread ' || thread || ', in ' || names AS "where",
       per_step_phrase(last_step, steps)  -- queries/macros/per_step_phrase.sql
         || printf(' the step thread spent %s loading data (%.1f%% of the step wall time); no GPU op ran for %s of it. ',
                   d[2], 100.0 * load_ns / wall_ns, d[1])
         || printf('%,d of %,d steps load inside the step.', loading_steps, steps) AS evidence,
       'Load ahead of the GPU: DataLoader(num_workers=N, persistent_workers=True, prefetch_factor=2 or more, '
         || 'pin_memory=True); make per-sample transforms cheaper or move them to the GPU; prefetch the next batch '
         || 'to the device on a side stream while the current step runs.' AS action,
       CAST(idle_ns AS BIGINT) AS recoverable_ns,
       100.0 * idle_ns / wall_ns AS recoverable_pct
FROM shown
ORDER BY recoverable_ns DESC, pid;
