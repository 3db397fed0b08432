-- nsysql: analysis.utilization v1
-- purpose: GPU utilization over time: per device, fixed windows from the capture's first GPU op to its last, with the busy time (union of kernels, copies and sets) and the ops started inside each window.
-- requires: kernel|memcpy|memset
-- params: $window_ns BIGINT default 10000000 (window length, ns; the CLI takes --window-ms)
-- notes: Windows are aligned across devices: window k covers [t0 + k * $window_ns, t0 + (k + 1) * $window_ns),
--   t0 = the first op start on any GPU; the last window ends at the last op end (so it may be shorter) and
--   busy_pct is relative to each window's own length. Every device with ops gets every window, idle ones
--   with busy_ns = 0. Busy intervals (gpu_busy) are cut at window edges, so the windows of a device add up
--   to its busy time.
-- columns:
--   device_id | BIGINT | id
--   window_index | BIGINT | count (0 = first window)
--   window_start_ns | BIGINT | ns timestamp
--   window_end_ns | BIGINT | ns timestamp
--   busy_ns | BIGINT | ns (union of ops inside the window)
--   busy_pct | DOUBLE | pct of the window | 2
--   ops_started | BIGINT | count (kernels, copies and sets starting in the window)
WITH
bounds AS (
    SELECT MIN(start_ns) AS t0, MAX(end_ns) AS t1 FROM gpu_busy
),
win AS (
    SELECT d.device_id, w.window_index, b.t0 + w.window_index * $window_ns AS window_start_ns,
           LEAST(b.t0 + (w.window_index + 1) * $window_ns, b.t1) AS window_end_ns
    FROM (SELECT DISTINCT device_id FROM gpu_busy) AS d
    CROSS JOIN bounds AS b
    CROSS JOIN (SELECT unnest(range(0, GREATEST((t1 - t0 - 1) // $window_ns + 1, 1))) AS window_index FROM bounds) AS w
),
spread AS (  -- each busy interval once per window it touches
    SELECT device_id, start_ns, end_ns, unnest(range(first_w, last_w + 1)) AS window_index
    FROM (SELECT g.device_id, g.start_ns, g.end_ns, (g.start_ns - b.t0) // $window_ns AS first_w,
                 GREATEST((g.end_ns - b.t0 - 1) // $window_ns, (g.start_ns - b.t0) // $window_ns) AS last_w
          FROM gpu_busy AS g CROSS JOIN bounds AS b)
),
busy AS (
    SELECT s.device_id, s.window_index,
           SUM(LEAST(s.end_ns, b.t0 + (s.window_index + 1) * $window_ns)
               - GREATEST(s.start_ns, b.t0 + s.window_index * $window_ns)) AS busy_ns
    FROM spread AS s CROSS JOIN bounds AS b
    GROUP BY s.device_id, s.window_index
),
started AS (
    SELECT o.device_id, (o.start_ns - b.t0) // $window_ns AS window_index, COUNT(*) AS ops_started
    FROM gpu_op AS o CROSS JOIN bounds AS b
    GROUP BY ALL
)
SELECT w.device_id, w.window_index, w.window_start_ns, w.window_end_ns,
       CAST(COALESCE(bu.busy_ns, 0) AS BIGINT) AS busy_ns,
       100.0 * COALESCE(bu.busy_ns, 0) / NULLIF(w.window_end_ns - w.window_start_ns, 0) AS busy_pct,
       COALESCE(st.ops_started, 0) AS ops_started
FROM win AS w
LEFT JOIN busy AS bu USING (device_id, window_index)
LEFT JOIN started AS st USING (device_id, window_index)
ORDER BY w.device_id, w.window_index;
