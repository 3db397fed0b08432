-- nsysql: analysis.step_breakdown v4
-- purpose: TensorBoard's step time breakdown for each analysed step: every instant of the step's wall time in exactly one category, so the nine columns add up to wall_ns.
-- requires: analysis.steady_steps, analysis._steady_windows, analysis.comm_waits, gpu_op
-- params: none
-- notes: The categories, in priority order (an instant goes to the first that holds):
--   kernel: a compute kernel of the step's process runs on any GPU (or a CUDA graph traced at graph level, whose
--   kernels have no rows); communication kernels (analysis.comm_waits) are split in two: comm_transfer: else the
--   transfer part of one of its communication kernels runs (after the collective's last rank arrived; all of an
--   unmatched one); comm_wait: else one of its communication kernels spins waiting for the last rank (busy to
--   CUPTI, doing nothing useful); memcpy: else a copy of the process runs;
--   memset: else a memset of the process runs; runtime: else a thread of the step's process is inside a CUDA
--   runtime/driver API call (PyTorch's autograd thread launches the backward while the step's thread waits in
--   backward()); dataloader: else the step's thread (steady_steps.tid) is inside a data-loading NVTX range (text,
--   ignoring case, starting with `enumerate(DataLoader)` - PyTorch's DataLoader iterator marker - or equal to
--   data, dataloader, data_loader, data loading, data_loading, load_data, load_batch, get_batch, next_batch,
--   fetch_batch, batch, input or input_pipeline, optionally followed by a number); cpu_exec: else at least one
--   of the step's threads - its own thread and every thread of the process that made a CUDA call in the step -
--   is running, i.e. not inside an OS runtime call (nsys traces those, with --trace=osrt, when longer than its
--   --osrt-threshold, 1 µs by default: waits, sleeps, I/O; outermost calls only); other: the rest, i.e. all of
--   those threads waiting in OS runtime calls with nothing above happening. Without OS runtime data
--   (--trace=osrt off) nothing is known to be a wait, so the whole remainder is cpu_exec.
--   Every interval is clipped to each analysed step it overlaps (found by a hash join on time buckets, see
--   analysis._steady_windows); a sweep per step over the clipped intervals' boundaries gives each elementary
--   segment the highest-priority category open in it (the eight open counts are packed 20 bits each into three
--   running sums, so a category may have up to 1,048,575 intervals open at once in one step). Steps are numbered
--   per process: (pid, step) names one.
-- columns:
--   step | BIGINT | index (as in steady_steps, per process; only analysed steps)
--   pid | BIGINT | id
--   wall_ns | BIGINT | ns
--   kernel_ns | BIGINT | ns (compute kernels)
--   comm_transfer_ns | BIGINT | ns (communication moving data, no compute running)
--   comm_wait_ns | BIGINT | ns (communication waiting for another rank, no compute or transfer running)
--   memcpy_ns | BIGINT | ns
--   memset_ns | BIGINT | ns
--   runtime_ns | BIGINT | ns
--   dataloader_ns | BIGINT | ns
--   cpu_exec_ns | BIGINT | ns
--   other_ns | BIGINT | ns
WITH
win AS (SELECT step, pid, tid, start_ns, end_ns FROM steady_steps WHERE analysed AND end_ns > start_ns),
bucket AS (SELECT MIN(bucket_ns) AS ns FROM _steady_windows),
waits AS (SELECT pid, kernel_id, start_ns, wait_end_ns, end_ns FROM comm_waits),
spans AS NOT MATERIALIZED (  -- candidate intervals: (pid, tid, category, start, end); category = priority (1 kernel .. 8 OS call)
    SELECT o.pid, CAST(NULL AS BIGINT) AS tid, CASE o.op_kind WHEN 'kernel' THEN 1 WHEN 'graph' THEN 1 WHEN 'memcpy' THEN 4 ELSE 5 END AS cat,
           o.start_ns AS s, o.end_ns AS e
    FROM gpu_op AS o WHERE o.pid IN (SELECT pid FROM win)
      AND NOT (o.op_kind = 'kernel' AND o.op_id IN (SELECT kernel_id FROM waits))
    UNION ALL  -- communication kernels: waiting until the last rank arrives, then transfer
    SELECT w.pid, NULL, 3, w.start_ns, w.wait_end_ns FROM waits AS w WHERE w.pid IN (SELECT pid FROM win)
    UNION ALL
    SELECT w.pid, NULL, 2, w.wait_end_ns, w.end_ns FROM waits AS w WHERE w.pid IN (SELECT pid FROM win)
    UNION ALL
    SELECT r.pid, r.tid, 6, r.start_ns, r.end_ns FROM runtime AS r WHERE r.pid IN (SELECT pid FROM win)
    UNION ALL
    SELECT n.pid, n.tid, 7, n.start_ns, n.end_ns
    FROM nvtx_range AS n SEMI JOIN (SELECT DISTINCT pid, tid FROM win) AS t ON t.pid = n.pid AND t.tid = n.tid
    WHERE n.end_global_tid IS NULL
      AND (starts_with(lower(n.text), 'enumerate(dataloader)')
           OR regexp_matches(n.text, '^(data|dataloader|data_loader|data loading|data_loading|load_data|load_batch|get_batch|next_batch|fetch_batch|batch|input|input_pipeline)([ _#-]?[0-9]+)?$', 'i'))
    UNION ALL
    SELECT x.pid, x.tid, 8, x.start_ns, x.end_ns
    FROM osrt AS x WHERE x.nesting_level = 0 AND x.pid IN (SELECT pid FROM win)
),
cut AS (  -- each interval in the time bucket(s) it spans (most span one)
    SELECT pid, tid, cat, s, e, s // (SELECT ns FROM bucket) AS bucket
    FROM spans WHERE e > s AND s // (SELECT ns FROM bucket) = (e - 1) // (SELECT ns FROM bucket)
    UNION ALL
    SELECT pid, tid, cat, s, e,
           UNNEST(generate_series(s // (SELECT ns FROM bucket), (e - 1) // (SELECT ns FROM bucket))) AS bucket
    FROM spans WHERE e > s AND s // (SELECT ns FROM bucket) <> (e - 1) // (SELECT ns FROM bucket)
),
clipped AS MATERIALIZED (  -- each interval clipped to each analysed step it overlaps (each pair once)
    SELECT w.pid, w.step, c.tid, c.cat, GREATEST(c.s, w.start_ns) AS s, LEAST(c.e, w.end_ns) AS e
    FROM cut AS c JOIN _steady_windows AS w ON w.pid = c.pid AND w.bucket = c.bucket
    WHERE c.s < w.end_ns AND c.e > w.start_ns AND c.bucket = GREATEST(c.s, w.start_ns) // (SELECT ns FROM bucket)
),
step_threads AS (  -- the step's own thread and every thread of its process that made a CUDA call in it
    SELECT pid, step, tid FROM win
    UNION
    SELECT pid, step, tid FROM clipped WHERE cat = 6
),
thread_count AS (SELECT pid, step, COUNT(*) AS threads FROM step_threads GROUP BY pid, step),
kept AS (  -- OS calls count only on the step's threads
    SELECT pid, step, cat, s, e FROM clipped WHERE cat <> 8
    UNION ALL
    SELECT c.pid, c.step, c.cat, c.s, c.e FROM clipped AS c
    SEMI JOIN step_threads AS t ON t.pid = c.pid AND t.step = c.step AND t.tid = c.tid
    WHERE c.cat = 8
),
edges AS (  -- +1 at each start, -1 at each end, plus the step's own bounds
    SELECT pid, step, s AS t, cat, 1 AS delta FROM kept
    UNION ALL
    SELECT pid, step, e, cat, -1 FROM kept
    UNION ALL
    SELECT pid, step, start_ns, 0, 0 FROM win
    UNION ALL
    SELECT pid, step, end_ns, 0, 0 FROM win
),
open_counts AS (  -- one sweep over every step's boundaries in (pid, step, time) order; the eight open counts packed 20
    -- bits each into three running sums (categories 1-3, 4-6 and 7-8: 60 bits at most each). A step's changes add up
    -- to zero (each interval opens and closes in it), so the running sums start every step at zero. Of the rows tied
    -- at one instant only the last has seg_ns > 0, and its running sums hold every change at that instant.
    SELECT pid, step, CASE WHEN LEAD(pid) OVER w = pid AND LEAD(step) OVER w = step THEN LEAD(t) OVER w - t END AS seg_ns,
           SUM(CASE WHEN cat BETWEEN 1 AND 3 THEN delta * (CAST(1 AS BIGINT) << (20 * (cat - 1))) ELSE 0 END)
               OVER (w ROWS UNBOUNDED PRECEDING) AS low,
           SUM(CASE WHEN cat BETWEEN 4 AND 6 THEN delta * (CAST(1 AS BIGINT) << (20 * (cat - 4))) ELSE 0 END)
               OVER (w ROWS UNBOUNDED PRECEDING) AS mid,
           SUM(CASE WHEN cat >= 7 THEN delta * (CAST(1 AS BIGINT) << (20 * (cat - 7))) ELSE 0 END)
               OVER (w ROWS UNBOUNDED PRECEDING) AS high
    FROM edges
    WINDOW w AS (ORDER BY pid, step, t, cat, delta)
),
unpacked AS (
    SELECT pid, step, seg_ns,
           (low >> 0) & 1048575 AS n1, (low >> 20) & 1048575 AS n2, (low >> 40) & 1048575 AS n3,
           (mid >> 0) & 1048575 AS n4, (mid >> 20) & 1048575 AS n5, (mid >> 40) & 1048575 AS n6,
           (high >> 0) & 1048575 AS n7, (high >> 20) & 1048575 AS n8
    FROM open_counts WHERE seg_ns > 0
),
segments AS (
    SELECT o.pid, o.step, o.seg_ns,
           CASE WHEN n1 > 0 THEN 1 WHEN n2 > 0 THEN 2 WHEN n3 > 0 THEN 3 WHEN n4 > 0 THEN 4 WHEN n5 > 0 THEN 5
                WHEN n6 > 0 THEN 6 WHEN n7 > 0 THEN 7 WHEN n8 >= c.threads THEN 9 ELSE 8 END AS cat
    FROM unpacked AS o JOIN thread_count AS c USING (pid, step)
),
totals AS (
    SELECT pid, step,
           SUM(seg_ns) FILTER (WHERE cat = 1) AS kernel_ns, SUM(seg_ns) FILTER (WHERE cat = 2) AS comm_transfer_ns,
           SUM(seg_ns) FILTER (WHERE cat = 3) AS comm_wait_ns,
           SUM(seg_ns) FILTER (WHERE cat = 4) AS memcpy_ns,
           SUM(seg_ns) FILTER (WHERE cat = 5) AS memset_ns, SUM(seg_ns) FILTER (WHERE cat = 6) AS runtime_ns,
           SUM(seg_ns) FILTER (WHERE cat = 7) AS dataloader_ns, SUM(seg_ns) FILTER (WHERE cat = 8) AS cpu_exec_ns,
           SUM(seg_ns) FILTER (WHERE cat = 9) AS other_ns
    FROM segments GROUP BY pid, step
)
SELECT w.step, w.pid, w.end_ns - w.start_ns AS wall_ns,
       CAST(COALESCE(kernel_ns, 0) AS BIGINT) AS kernel_ns,
       CAST(COALESCE(comm_transfer_ns, 0) AS BIGINT) AS comm_transfer_ns,
       CAST(COALESCE(comm_wait_ns, 0) AS BIGINT) AS comm_wait_ns, CAST(COALESCE(memcpy_ns, 0) AS BIGINT) AS memcpy_ns,
       CAST(COALESCE(memset_ns, 0) AS BIGINT) AS memset_ns, CAST(COALESCE(runtime_ns, 0) AS BIGINT) AS runtime_ns,
       CAST(COALESCE(dataloader_ns, 0) AS BIGINT) AS dataloader_ns,
       CAST(COALESCE(cpu_exec_ns, 0) AS BIGINT) AS cpu_exec_ns, CAST(COALESCE(other_ns, 0) AS BIGINT) AS other_ns
FROM win AS w LEFT JOIN totals AS t USING (pid, step)
ORDER BY w.step, w.pid;
