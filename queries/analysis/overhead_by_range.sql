-- nsysql: analysis.overhead_by_range v3
-- purpose: Kernel launch overhead per user NVTX range (its full path of user ranges, PyTorch op-marker ranges rolled up into their nearest user ancestor): launches, range CPU time, GPU busy and idle time, API and queue time statistics, and whether the range is launch-bound.
-- requires: kernel|graph_trace, runtime, nvtx_range, macros.kernel_launches, macros.union_ns, macros.launch_stats, macros.device_busy_in, analysis.steady_steps
-- params: $every BOOLEAN default false (true: every launch of the capture; false: the analysed steps' launches)
-- notes: Launches in the analysed steps only (analysis.steady_steps: a launch whose call starts inside an analysed
--   step's range), unless $every (`--all`) or the export has no analysed step; the spans and the idle time
--   are then those of the analysed steps' launches (the time between steps included).
--   Per launch (a kernel and the CUDA API call that launched it, matched on correlationId AND process):
--   api = call end - call start; queue = kernel start - call end, floored at 0; kernel = kernel end - kernel start.
--   A graph launch counts once per kernel it ran; a CUDA graph traced at graph level (graph_trace) is one launch
--   whose kernel is the whole graph. Kernels without a launching call in the export are left out.
--   A launch belongs to every user range (not nvtx_range.is_op_marker) open on its thread around the launching
--   call (runtime_nvtx, then up the nesting tree skipping op markers), so a row is inclusive of nested user
--   ranges and an op marker never makes a row of its own. Rows group instances by (process, thread, path),
--   path = texts of the enclosing user ranges from the top down joined by '/'. Launches under no user range
--   (e.g. PyTorch's autograd thread) make one '(outside user ranges)' row per thread, without range measures.
--   gpu_idle_ns: per instance, its wall time [start, end] minus the time the GPU was busy (any kernel, copy or
--   set of any thread: gpu_busy) inside it; with kernels on several GPUs, the busiest of them counts.
--   launch_span_ns: per instance, first launching call start to last launching call end.
--   launch_bound = launches >= 2 AND gpu_idle_ns > cpu_ns / 2 AND launch_span_ns >= cpu_ns / 2 (sums over
--   the instances): the GPU sat idle for more than half the range while the thread kept launching through at
--   least half of it, so the GPU waited for the CPU, not the reverse.
--   Statistics: median = quantile_cont 0.5, p95 = quantile_cont 0.95 (linear interpolation between ranks).
--   The sweep/ASOF normalized tables keep this linear: no range self-join; busy time inside a window is
--   a difference of cumulative busy time found by ASOF join.
-- columns:
--   pid | BIGINT | id
--   tid | BIGINT | id
--   range_path | VARCHAR | text (user range texts, top down, '/'-joined; '(outside user ranges)')
--   depth | BIGINT | count (user ranges above it; NULL for the outside row)
--   instances | BIGINT | count (instances with launches)
--   launches | BIGINT | count (kernels launched inside, nested user ranges included)
--   cpu_ns | BIGINT | ns (sum of instance durations)
--   gpu_busy_ns | BIGINT | ns (union of those kernels' execution intervals)
--   gpu_idle_ns | BIGINT | ns (instance time with the GPU idle, summed)
--   launch_span_ns | BIGINT | ns (first launch call start to last launch call end, summed over instances)
--   kernel_ns | BIGINT | ns (sum of kernel durations)
--   mean_api_ns | DOUBLE | ns | 1
--   median_api_ns | DOUBLE | ns | 1
--   p95_api_ns | DOUBLE | ns | 1
--   mean_queue_ns | DOUBLE | ns | 1
--   median_queue_ns | DOUBLE | ns | 1
--   p95_queue_ns | DOUBLE | ns | 1
--   shorter_than_launch | BIGINT | count (kernels that ran shorter than their launch call)
--   launch_bound | BOOLEAN | flag (see notes; NULL for the outside row)
WITH
analysed_window AS MATERIALIZED (  -- the analysed steps' ranges: a launch inside one is the step's
    SELECT pid, range_start_ns AS start_ns, range_end_ns AS end_ns FROM steady_steps WHERE analysed AND step > 0
),
launch AS MATERIALIZED (  -- queries/macros/kernel_launches.sql, with the innermost range of the call
    SELECT l.kernel_start_ns, l.kernel_end_ns, l.device_id, l.global_tid, l.pid, l.tid, l.api_start_ns,
           l.api_end_ns, l.api_ns, l.queue_ns, l.kernel_ns, rn.range_id AS innermost_id
    FROM kernel_launches(kernel, graph_trace, runtime) AS l
    LEFT JOIN runtime_nvtx AS rn ON rn.runtime_id = l.runtime_id
    WHERE ($every OR NOT EXISTS (SELECT 1 FROM analysed_window)  -- the analysed steps' launches, unless $every
           OR EXISTS (SELECT 1 FROM analysed_window AS w
                      WHERE w.pid = l.pid AND l.api_start_ns >= w.start_ns AND l.api_start_ns <= w.end_ns))
),
user_stack AS MATERIALIZED (  -- the user ranges enclosing each launch's innermost range (itself included)
    SELECT a.range_id AS innermost_id, a.ancestor_id AS range_id
    FROM nvtx_ancestor AS a
    JOIN nvtx_range AS r ON r.range_id = a.ancestor_id
    WHERE NOT r.is_op_marker AND a.range_id IN (SELECT innermost_id FROM launch)
),
path AS (
    SELECT a.range_id, string_agg(r.text, '/' ORDER BY a.distance DESC) AS range_path, COUNT(*) - 1 AS depth
    FROM nvtx_ancestor AS a
    JOIN nvtx_range AS r ON r.range_id = a.ancestor_id
    WHERE NOT r.is_op_marker AND a.range_id IN (SELECT range_id FROM user_stack)
    GROUP BY a.range_id
),
grp AS MATERIALIZED (  -- a small integer per (thread, path), so the heavy steps below never sort strings
    SELECT p.range_id, p.range_path, p.depth, r.duration_ns, r.start_ns, r.end_ns,
           MIN(p.range_id) OVER (PARTITION BY r.global_tid, p.range_path) AS group_id
    FROM path AS p JOIN nvtx_range AS r USING (range_id)
),
member AS (  -- (launch, group) pairs: one per enclosing user range, or the thread's outside group (-global_tid)
    SELECT l.*, u.range_id, g.group_id
    FROM launch AS l
    JOIN user_stack AS u USING (innermost_id)
    JOIN grp AS g ON g.range_id = u.range_id
    UNION ALL
    SELECT l.*, NULL, -l.global_tid
    FROM launch AS l
    WHERE NOT EXISTS (SELECT 1 FROM user_stack AS u WHERE u.innermost_id = l.innermost_id)
),
kernel_interval AS (SELECT group_id AS grp, kernel_start_ns AS s, kernel_end_ns AS e FROM member),
union_busy AS (  -- the union of the group's kernel intervals (queries/macros/union_ns.sql)
    SELECT grp AS group_id, busy_ns AS gpu_busy_ns FROM union_ns(kernel_interval)
),
launch_stats AS (
    SELECT group_id, MIN(pid) AS pid, MIN(tid) AS tid, MIN(api_start_ns) AS first_launch_ns,
           UNNEST(launch_stats(api_ns, queue_ns, kernel_ns))  -- queries/macros/launch_stats.sql
    FROM member
    GROUP BY group_id
),
instance AS MATERIALIZED (  -- per range instance with launches: its launching span and devices
    SELECT range_id, MIN(api_start_ns) AS first_call_ns, MAX(api_end_ns) AS last_call_end_ns
    FROM member WHERE range_id IS NOT NULL
    GROUP BY range_id
),
instance_device AS (  -- the instance's wall time on each device it launched on
    SELECT d.range_id AS id, d.device_id, g.start_ns AS s, g.end_ns AS e
    FROM (SELECT DISTINCT range_id, device_id FROM member WHERE range_id IS NOT NULL) AS d
    JOIN grp AS g USING (range_id)
),
busy_in_window AS (  -- busy time inside it (queries/macros/device_busy_in.sql); the busiest device counts
    SELECT id AS range_id, MAX(busy_ns) AS busy_ns FROM device_busy_in(instance_device, gpu_busy) GROUP BY id
),
range_stats AS (
    SELECT g.group_id, MIN(g.range_path) AS range_path, MIN(g.depth) AS depth, COUNT(*) AS instances,
           SUM(g.duration_ns) AS cpu_ns, SUM(g.duration_ns - b.busy_ns) AS gpu_idle_ns,
           SUM(i.last_call_end_ns - i.first_call_ns) AS launch_span_ns
    FROM instance AS i
    JOIN grp AS g USING (range_id)
    JOIN busy_in_window AS b USING (range_id)
    GROUP BY g.group_id
)
SELECT l.pid, l.tid, COALESCE(r.range_path, '(outside user ranges)') AS range_path, r.depth, r.instances, l.launches,
       CAST(r.cpu_ns AS BIGINT) AS cpu_ns, CAST(u.gpu_busy_ns AS BIGINT) AS gpu_busy_ns,
       CAST(r.gpu_idle_ns AS BIGINT) AS gpu_idle_ns, CAST(r.launch_span_ns AS BIGINT) AS launch_span_ns,
       CAST(l.kernel_ns AS BIGINT) AS kernel_ns,
       l.mean_api_ns, CAST(l.median_api_ns AS DOUBLE) AS median_api_ns, CAST(l.p95_api_ns AS DOUBLE) AS p95_api_ns,
       l.mean_queue_ns, CAST(l.median_queue_ns AS DOUBLE) AS median_queue_ns,
       CAST(l.p95_queue_ns AS DOUBLE) AS p95_queue_ns,
       l.shorter_than_launch,
       CASE WHEN r.cpu_ns IS NOT NULL
            THEN l.launches >= 2 AND 2 * r.gpu_idle_ns > r.cpu_ns AND 2 * r.launch_span_ns >= r.cpu_ns END AS launch_bound
FROM launch_stats AS l
JOIN union_busy AS u USING (group_id)
LEFT JOIN range_stats AS r USING (group_id)
ORDER BY l.pid, l.tid, r.depth IS NULL, l.first_launch_ns, range_path;
