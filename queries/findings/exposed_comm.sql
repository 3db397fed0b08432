-- nsysql: findings.exposed_comm v3
-- purpose: Finding: communication transfer (NCCL kernels moving data, after the collective's last rank arrived) inside the analysed steps that no compute kernel overlaps on its GPU: time the step waits for the transfer itself.
-- requires: analysis.steady_steps, analysis._step_label, analysis.comm_waits, kernel, macros.human_ns_each, macros.plural_s, macros.union_islands, macros.device_busy_in
-- params: $min_exposed_pct DOUBLE default 30 (fires when at least this share of the communication time is exposed, %), $min_ns_per_step BIGINT default 10000 (and the exposed time is at least this much per analysed step, on average, ns)
-- notes: Communication kernel: a kernel whose demangled name contains `nccl` (any case: ncclDevKernel_*,
--   ncclKernel_*), or whose launching CUDA call (correlationId AND process) lies inside an NVTX range of the NCCL
--   domain on its thread (ncclAllReduce, ncclGroupEnd, ...: NCCL's own ranges; with one rank NCCL runs a kernel
--   named oneRankReduce). Compute kernel: any other kernel on the same device (any process; copies and memsets
--   are not compute). The communication kernels of a process with analysed steps count where they overlap one of its
--   analysed steps (clipped to it); per device.
--   recoverable_ns (per process and device) = sum over the analysed steps of |C - K|, C = the union of the
--   communication kernels in the step, K = the union of the device's compute kernels: the exposed communication,
--   i.e. communication time with no compute to hide it. Perfect overlap with compute would hide at most that.
--   Computed as |C| - |C ∩ K| from prefix sums of compute busy time (macros.device_busy_in), never as a sum of kernel
--   durations.
--   Fires when recoverable_ns >= $min_exposed_pct % of |C| summed over the steps (the rule is about overlap: a
--   collective that compute hides is fine at any size) and >= $min_ns_per_step x the analysed steps (a noise floor,
--   the same as pageable_copy's). Ranking by recoverable_ns puts a small one last.
--   Only the transfer part of each communication kernel counts (analysis.comm_waits: from the collective's last
--   rank's arrival to its end; all of it when unmatched): the time it spins waiting for a late rank is the
--   straggler finding's (findings.straggler), which better overlap would not recover. where: steps, device, the NCCL
--   streams and the three communication kernels (short names) with the most time. Numbers per step are means.
-- columns:
--   rule | VARCHAR | text (exposed_comm)
--   title | VARCHAR | text
--   where | VARCHAR | text (steps, device, streams, kernels)
--   evidence | VARCHAR | text (numbers in ms, %)
--   action | VARCHAR | text
--   recoverable_ns | BIGINT | ns (upper bound of wall time recoverable, total over the analysed steps)
--   recoverable_pct | DOUBLE | pct of the analysed steps' wall time | 1
WITH
win AS (  -- the analysed steady-state step windows
    SELECT step, pid, tid, start_ns, end_ns, end_ns - start_ns AS wall_ns FROM steady_steps WHERE analysed
),
comm_kernel AS (SELECT kernel_id FROM comm_waits),
comm_row AS MATERIALIZED (  -- the transfer part of the communication kernels (few), before they meet the windows
    SELECT k.kernel_id, k.pid, k.device_id, k.stream_id, k.short_name, w.wait_end_ns AS start_ns, k.end_ns
    FROM kernel AS k JOIN comm_waits AS w USING (kernel_id)
    WHERE k.end_ns > w.wait_end_ns
),
comm AS MATERIALIZED (  -- communication kernels of the processes with analysed steps, clipped to the step they overlap
    SELECT k.kernel_id, k.pid, k.device_id, k.stream_id, k.short_name, k.end_ns - k.start_ns AS dur_ns, w.step,
           GREATEST(k.start_ns, w.start_ns) AS s, LEAST(k.end_ns, w.end_ns) AS e
    FROM comm_row AS k
    JOIN win AS w ON w.pid = k.pid AND k.start_ns < w.end_ns AND k.end_ns > w.start_ns
),
compute_kernel AS (  -- compute kernels on the devices that run communication
    SELECT device_id AS grp, start_ns AS s, end_ns AS e
    FROM kernel
    WHERE device_id IN (SELECT device_id FROM comm) AND kernel_id NOT IN (SELECT kernel_id FROM comm_kernel)
),
compute AS MATERIALIZED (  -- disjoint compute-busy intervals per device (queries/macros/union_islands.sql)
    SELECT grp AS device_id, s AS start_ns, e AS end_ns FROM union_islands(compute_kernel)
),
comm_interval AS (SELECT {'pid': pid, 'device_id': device_id, 'step': step} AS grp, s, e FROM comm),
merged AS (  -- the union of the step's communication per device (queries/macros/union_islands.sql)
    SELECT grp.pid AS pid, grp.device_id AS device_id, grp.step AS step, s, e FROM union_islands(comm_interval)
),
probe AS (
    SELECT ROW_NUMBER() OVER () AS id, pid, device_id, step, s, e FROM merged
),
probe_busy AS (  -- compute time inside each probe (queries/macros/device_busy_in.sql)
    SELECT id, busy_ns FROM device_busy_in(probe, compute)
),
exposed AS MATERIALIZED (
    SELECT p.pid, p.device_id, p.e - p.s AS comm_ns, (p.e - p.s) - b.busy_ns AS exposed_ns
    FROM probe AS p JOIN probe_busy AS b USING (id)
),
per_device AS (
    SELECT pid, device_id, SUM(comm_ns) AS comm_ns, SUM(exposed_ns) AS exposed_ns FROM exposed GROUP BY pid, device_id
),
kernels AS (
    SELECT pid, device_id, COUNT(*) AS n, string_agg(DISTINCT stream_id::VARCHAR, ', ' ORDER BY stream_id::VARCHAR) AS streams
    FROM (SELECT DISTINCT kernel_id, pid, device_id, stream_id FROM comm) GROUP BY pid, device_id
),
names AS (
    SELECT pid, device_id, string_agg(short_name, ', ' ORDER BY t DESC, short_name) AS names
    FROM (SELECT pid, device_id, short_name, SUM(e - s) AS t,
                 ROW_NUMBER() OVER (PARTITION BY pid, device_id ORDER BY SUM(e - s) DESC, short_name) AS rank
          FROM comm GROUP BY pid, device_id, short_name)
    WHERE rank <= 3 GROUP BY pid, device_id
),
per_pid AS (
    SELECT pid, COUNT(*) AS steps, SUM(wall_ns) AS wall_ns FROM win GROUP BY pid
),
fired AS (
    SELECT d.*, p.steps, p.wall_ns, k.n, k.streams, n.names, l.label
    FROM per_device AS d
    JOIN per_pid AS p USING (pid)
    JOIN kernels AS k USING (pid, device_id)
    JOIN names AS n USING (pid, device_id)
    JOIN _step_label AS l USING (pid)
    WHERE d.exposed_ns > 0 AND 100.0 * d.exposed_ns >= $min_exposed_pct * d.comm_ns
      AND d.exposed_ns >= $min_ns_per_step * p.steps
),
shown AS (  -- the per-step numbers in human units: d[1], d[2], ...
    SELECT *, human_ns_each([exposed_ns / steps, comm_ns / steps]) AS d
    FROM fired
)
SELECT 'exposed_comm' AS rule,
       printf('Communication transfer not overlapped by compute: %s per step (%.1f%%)', d[1], 100.0 * exposed_ns / wall_ns)
         AS title,
       printf('%s, GPU %d stream%s %s, kernels %s', label, device_id, CASE WHEN contains(streams, ',') THEN 's' ELSE '' END,
              streams, names) AS "where",
       printf('%,d NCCL kernel%s in %,d step%s moved data for %s per step (their union, after the last rank arrived); '
              || 'for %s of it (%.0f%%) no compute kernel ran on '
              || 'GPU %d, so the step waited for the transfer: %.1f%% of the step wall time.', n,
              plural_s(n), steps, plural_s(steps), d[2], d[1],
              100.0 * exposed_ns / comm_ns, device_id, 100.0 * exposed_ns / wall_ns) AS evidence,
       'Overlap communication with compute: let DDP/FSDP launch bucketed all-reduces during backward (bucket_cap_mb, '
         || 'gradient_as_bucket_view, no_sync for accumulation, FSDP backward/forward prefetch), issue collectives '
         || 'asynchronously (async_op=True) and wait late; fewer, larger collectives; check the interconnect and '
         || 'NCCL settings if the collectives themselves are slow.' AS action,
       CAST(exposed_ns AS BIGINT) AS recoverable_ns,
       100.0 * exposed_ns / wall_ns AS recoverable_pct
FROM shown
ORDER BY recoverable_ns DESC, pid, device_id;
