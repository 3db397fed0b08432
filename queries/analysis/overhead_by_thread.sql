-- nsysql: analysis.overhead_by_thread v3
-- purpose: Kernel launch overhead per launching thread: launches, CPU time in launching calls, GPU busy and idle time over the thread's launching span, API and queue time statistics, kernels shorter than their launch call, and whether the thread is launch-bound.
-- requires: kernel|graph_trace, runtime, macros.kernel_launches, macros.launch_busy, macros.launch_stats, macros.device_busy_in, analysis.steady_steps
-- params: $every BOOLEAN default false (true: every launch of the capture; false: the analysed steps' launches)
-- notes: Launches in the analysed steps only (analysis.steady_steps: a launch whose call starts inside an analysed
--   step's range), unless $every (`--all`) or the export has no analysed step; the spans and the idle time
--   are then those of the analysed steps' launches (the time between steps included).
--   Per launch (a kernel and the CUDA API call that launched it, matched on correlationId AND process):
--   api = call end - call start; queue = kernel start - call end, floored at 0; kernel = kernel end - kernel start.
--   A CUDA graph traced at graph level (graph_trace) is one launch whose kernel is the whole graph
--   (named `[CUDA graph <id>]` per graph). Kernels without a launching call in the export are left out. cpu_ns counts each launching call once
--   (a CUDA graph launch runs several kernels); the per-launch statistics count it per kernel.
--   launch_span_ns: the thread's first launching call start to its last launching call end.
--   gpu_idle_ns: launch_span_ns minus the time the GPU was busy (any kernel, copy or set of any thread:
--   gpu_busy) inside the span; with kernels on several GPUs, the busiest of them counts.
--   launch_bound = launches >= 2 AND gpu_idle_ns > launch_span_ns / 2: the GPU sat idle more than half of
--   the time this thread was launching. (A thread that also waits on input or sleeps between launches shows
--   the same; the per-range view, analysis.overhead_by_range, narrows it down.)
--   Statistics: median = quantile_cont 0.5, p95 = quantile_cont 0.95 (linear interpolation between ranks).
-- columns:
--   pid | BIGINT | id
--   tid | BIGINT | id
--   thread_name | VARCHAR | text
--   launches | BIGINT | count
--   cpu_ns | BIGINT | ns (sum of launching call durations, each call once)
--   gpu_busy_ns | BIGINT | ns (union of its kernels' execution intervals)
--   launch_span_ns | BIGINT | ns (first launching call start to last launching call end)
--   gpu_idle_ns | BIGINT | ns (span time with the GPU idle)
--   kernel_ns | BIGINT | ns (sum of kernel durations)
--   mean_api_ns | DOUBLE | ns | 1
--   median_api_ns | DOUBLE | ns | 1
--   p95_api_ns | DOUBLE | ns | 1
--   mean_queue_ns | DOUBLE | ns | 1
--   median_queue_ns | DOUBLE | ns | 1
--   p95_queue_ns | DOUBLE | ns | 1
--   shorter_than_launch | BIGINT | count (kernels that ran shorter than their launch call)
--   launch_bound | BOOLEAN | flag (see notes)
WITH
analysed_window AS MATERIALIZED (  -- the analysed steps' ranges: a launch inside one is the step's
    SELECT pid, range_start_ns AS start_ns, range_end_ns AS end_ns FROM steady_steps WHERE analysed AND step > 0
),
launch AS MATERIALIZED (  -- queries/macros/kernel_launches.sql
    SELECT kernel_start_ns, kernel_end_ns, device_id, runtime_id, global_tid, pid, tid, api_start_ns, api_end_ns,
           api_ns, queue_ns, kernel_ns
    FROM kernel_launches(kernel, graph_trace, runtime) AS l
    WHERE ($every OR NOT EXISTS (SELECT 1 FROM analysed_window)  -- the analysed steps' launches, unless $every
           OR EXISTS (SELECT 1 FROM analysed_window AS w
                      WHERE w.pid = l.pid AND l.api_start_ns >= w.start_ns AND l.api_start_ns <= w.end_ns))
),
launch_group AS (SELECT global_tid AS grp, kernel_start_ns, kernel_end_ns, runtime_id, api_ns FROM launch),
busy AS (  -- per thread: launching calls' time (each call once) and the union of its kernels
    -- (queries/macros/launch_busy.sql)
    SELECT grp AS global_tid, cpu_ns, gpu_busy_ns FROM launch_busy(launch_group)
),
stats AS (
    SELECT global_tid, MIN(pid) AS pid, MIN(tid) AS tid, MIN(api_start_ns) AS span_start_ns,
           MAX(api_end_ns) AS span_end_ns, UNNEST(launch_stats(api_ns, queue_ns, kernel_ns))  -- queries/macros/launch_stats.sql
    FROM launch
    GROUP BY global_tid
),
thread_device AS (  -- the thread's launching span on each device it launched on
    SELECT d.global_tid AS id, d.device_id, s.span_start_ns AS s, s.span_end_ns AS e
    FROM (SELECT DISTINCT global_tid, device_id FROM launch) AS d
    JOIN stats AS s USING (global_tid)
),
busy_in_span AS (  -- busy time inside the span (queries/macros/device_busy_in.sql); the busiest device counts
    SELECT id AS global_tid, MAX(busy_ns) AS busy_ns FROM device_busy_in(thread_device, gpu_busy) GROUP BY id
)
SELECT s.pid, s.tid, t.thread_name, s.launches, CAST(u.cpu_ns AS BIGINT) AS cpu_ns,
       CAST(u.gpu_busy_ns AS BIGINT) AS gpu_busy_ns, s.span_end_ns - s.span_start_ns AS launch_span_ns,
       CAST(s.span_end_ns - s.span_start_ns - b.busy_ns AS BIGINT) AS gpu_idle_ns,
       CAST(s.kernel_ns AS BIGINT) AS kernel_ns,
       s.mean_api_ns, CAST(s.median_api_ns AS DOUBLE) AS median_api_ns, CAST(s.p95_api_ns AS DOUBLE) AS p95_api_ns,
       s.mean_queue_ns, CAST(s.median_queue_ns AS DOUBLE) AS median_queue_ns,
       CAST(s.p95_queue_ns AS DOUBLE) AS p95_queue_ns,
       s.shorter_than_launch,
       s.launches >= 2 AND 2 * (s.span_end_ns - s.span_start_ns - b.busy_ns) > s.span_end_ns - s.span_start_ns AS launch_bound
FROM stats AS s
JOIN busy AS u USING (global_tid)
JOIN busy_in_span AS b USING (global_tid)
LEFT JOIN thread AS t USING (global_tid)
ORDER BY s.launches DESC, s.pid, s.tid;
