-- nsysql: findings.pageable_copy v3
-- purpose: Finding: memory copies between the GPU and pageable (unpinned) host memory inside the analysed steps: staged by the driver, slower, and unable to overlap with compute.
-- requires: analysis.steady_steps, analysis._step_label, analysis._steady_windows, memcpy, runtime, runtime_nvtx, nvtx_context, user_range, thread, macros.human_ns_each, macros.plural_s, macros.call_layers, macros.thread_list, macros.union_ns, macros.clip_to_steps, analysis.structure
-- params: $min_ns_per_step BIGINT default 10000 (fires when the pageable copies take at least this much GPU time per analysed step, on average, ns)
-- notes: Pageable copy: a memcpy whose source or destination memory kind is Pageable (NVIDIA's label, as
--   analysis.memcpy's host_memory), of a process with analysed steps. Its GPU interval counts where it
--   overlaps an analysed step of its process (clipped to the step).
--   recoverable_ns = |union of the pageable copies' GPU intervals ∩ the analysed steps|: from pinned memory
--   with non_blocking=True a copy can run asynchronously on a copy engine while the GPU computes, so at most its
--   whole duration leaves the critical path. (The host time spent blocked in the copy's call is the business of
--   sync_in_step.) Fires when recoverable_ns >= $min_ns_per_step x the process's analysed steps: below ~10 µs
--   per step a copy costs its latency, which pinning does not change.
--   Evidence: count, bytes and kinds (copy kind) of the copies, their GPU time and achieved bandwidth
--   (bytes / summed GPU time), the duration of their launching calls (host time), and, when the process made
--   pinned copies of at least 1 MB in total anywhere in the capture, their bandwidth for comparison. Where: the
--   steps, the launching threads and the innermost user ranges (layer paths) of the calls, most time first.
--   Numbers per step are means over the analysed steps. The advice of an inference program (analysis.structure's
--   program_kind) names no DataLoader.
-- columns:
--   rule | VARCHAR | text (pageable_copy)
--   title | VARCHAR | text
--   where | VARCHAR | text (steps, threads, ranges)
--   evidence | VARCHAR | text (numbers in ms, µs, MB, GB/s)
--   action | VARCHAR | text
--   recoverable_ns | BIGINT | ns (upper bound of wall time recoverable, total over the analysed steps)
--   recoverable_pct | DOUBLE | pct of the analysed steps' wall time | 1
WITH
win AS (  -- the analysed steady-state step windows
    SELECT step, pid, tid, start_ns, end_ns, end_ns - start_ns AS wall_ns FROM steady_steps WHERE analysed
),
pageable_row AS (  -- pageable copies of the processes with analysed steps
    SELECT memcpy_id, pid, copy_kind, bytes, correlation_id, start_ns, end_ns
    FROM memcpy WHERE 'Pageable' IN (src_kind, dst_kind) AND pid IN (SELECT pid FROM win)
),
pageable AS MATERIALIZED (  -- pageable copies overlapping an analysed step, clipped to it
    -- (queries/macros/clip_to_steps.sql)
    SELECT m.memcpy_id, m.pid, m.copy_kind, m.bytes, m.end_ns - m.start_ns AS dur_ns, m.step, m.s, m.e,
           c.runtime_id, c.tid, c.end_ns - c.start_ns AS api_ns
    FROM clip_to_steps(pageable_row, _steady_windows) AS m
    LEFT JOIN runtime AS c ON c.correlation_id = m.correlation_id AND c.pid = m.pid
),
copy_interval AS (SELECT pid AS grp, s, e FROM pageable),
busy AS (  -- |union of the clipped copies| per process (queries/macros/union_ns.sql)
    SELECT grp AS pid, busy_ns AS union_ns FROM union_ns(copy_interval)
),
per_pid AS (
    SELECT w.pid, COUNT(*) AS steps, SUM(w.wall_ns) AS wall_ns FROM win AS w GROUP BY w.pid
),
copy_once AS (  -- each copy once, even if it straddles two steps
    SELECT DISTINCT memcpy_id, pid, copy_kind, bytes, dur_ns, runtime_id, tid, api_ns FROM pageable
),
totals AS (
    SELECT pid, COUNT(*) AS n, SUM(bytes) AS bytes, SUM(dur_ns) AS dur_ns, COALESCE(SUM(api_ns), 0) AS api_ns
    FROM copy_once GROUP BY pid
),
kinds AS (
    SELECT pid, string_agg(n || ' ' || copy_kind, ', ' ORDER BY n DESC, copy_kind) AS kinds
    FROM (SELECT pid, copy_kind, COUNT(*) AS n FROM copy_once GROUP BY pid, copy_kind) GROUP BY pid
),
pinned AS (  -- the process's pinned copies anywhere in the capture, for comparison
    SELECT pid, SUM(bytes) AS bytes, SUM(end_ns - start_ns) AS dur_ns
    FROM memcpy WHERE 'Pinned' IN (src_kind, dst_kind) AND pid IN (SELECT pid FROM win)
    GROUP BY pid HAVING SUM(bytes) >= 1000000 AND SUM(end_ns - start_ns) > 0
),
layer_call AS (SELECT pid, runtime_id, dur_ns AS weight FROM copy_once WHERE runtime_id IS NOT NULL),
thread_call AS (SELECT pid, tid FROM copy_once WHERE tid IS NOT NULL),
layers AS (  -- the top 3 user-range paths by copy time (queries/macros/call_layers.sql)
    SELECT pid, layers FROM call_layers(layer_call, runtime_nvtx, nvtx_context, user_range)
),
threads AS (SELECT pid, threads, n FROM thread_list(thread_call, thread)),  -- queries/macros/thread_list.sql
fired AS (
    SELECT p.pid, p.steps, p.wall_ns, b.union_ns, t.n, t.bytes, t.dur_ns, t.api_ns, k.kinds, l.layers,
           th.threads, th.n AS thread_count, s.label,
           CASE WHEN pn.dur_ns > 0 THEN pn.bytes / pn.dur_ns END AS pinned_gb_s
    FROM per_pid AS p
    JOIN busy AS b USING (pid)
    JOIN totals AS t USING (pid)
    JOIN kinds AS k USING (pid)
    JOIN _step_label AS s USING (pid)
    LEFT JOIN layers AS l USING (pid)
    LEFT JOIN threads AS th USING (pid)
    LEFT JOIN pinned AS pn USING (pid)
    WHERE b.union_ns > 0 AND b.union_ns >= $min_ns_per_step * p.steps
),
shown AS (  -- the per-step numbers in human units: d[1], d[2], ...
    SELECT *, human_ns_each([union_ns / steps, api_ns / steps]) AS d
    FROM fired
)
SELECT 'pageable_copy' AS rule,
       printf('Copies with pageable host memory: %s per step (%.1f%%)', d[1], 100.0 * union_ns / wall_ns) AS title,
       label || CASE WHEN threads IS NOT NULL
                     THEN ', thread' || CASE WHEN thread_count > 1 THEN 's ' ELSE ' ' END || threads ELSE '' END
         || CASE WHEN layers IS NOT NULL THEN ', in ' || layers ELSE '' END AS "where",
       printf('%,d pageable cop%s in %,d step%s (%s), ', n, CASE WHEN n = 1 THEN 'y' ELSE 'ies' END,
              steps, plural_s(steps), kinds)
         || CASE WHEN bytes >= 1e9 THEN printf('%.2f GB', bytes / 1e9) WHEN bytes >= 1e6 THEN printf('%.2f MB', bytes / 1e6)
                 WHEN bytes >= 1e3 THEN printf('%.1f kB', bytes / 1e3) ELSE printf('%d bytes', bytes) END
         || printf(': %s of GPU time per step at %.2f GB/s', d[1], CASE WHEN dur_ns > 0 THEN bytes / dur_ns ELSE 0 END)
         || CASE WHEN pinned_gb_s IS NOT NULL THEN printf(' (pinned copies in this capture: %.2f GB/s)', pinned_gb_s)
                 ELSE '' END
         || printf('; their calls held the CPU %s per step.', d[2]) AS evidence,
       'Put the host side in pinned memory: '
         || CASE WHEN (SELECT MIN(program_kind) FROM structure AS k WHERE k.pid = shown.pid) = 'inference'
                 THEN 'a pinned buffer (tensor.pin_memory()) reused for each step''s input' ELSE
                 'DataLoader(pin_memory=True) or tensor.pin_memory()' END
         || ', then copy with '
         || '.to(device, non_blocking=True) so the copy overlaps compute; keep reused buffers pinned.' AS action,
       CAST(union_ns AS BIGINT) AS recoverable_ns,
       100.0 * union_ns / wall_ns AS recoverable_pct
FROM shown
ORDER BY recoverable_ns DESC, pid;
