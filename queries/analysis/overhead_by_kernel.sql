-- nsysql: analysis.overhead_by_kernel v3
-- purpose: Kernel launch overhead per kernel name: launches, CPU time in the launching calls, GPU busy time, API and queue time statistics, kernels shorter than their launch call, and whether launching costs more than the kernels run.
-- requires: kernel|graph_trace, runtime, macros.kernel_launches, macros.launch_busy, macros.launch_stats, analysis.steady_steps
-- params: $every BOOLEAN default false (true: every launch of the capture; false: the analysed steps' launches)
-- notes: Launches in the analysed steps only (analysis.steady_steps: a launch whose call starts inside an analysed
--   step's range), unless $every (`--all`) or the export has no analysed step; the spans and the idle time
--   are then those of the analysed steps' launches (the time between steps included).
--   Per launch (a kernel and the CUDA API call that launched it, matched on correlationId AND process):
--   api = call end - call start; queue = kernel start - call end, floored at 0; kernel = kernel end - kernel start.
--   A CUDA graph traced at graph level (graph_trace) is one launch whose kernel is the whole graph
--   (named `[CUDA graph <id>]` per graph). Kernels without a launching call in the export are left out. cpu_ns counts each launching call once, even
--   when it launched several kernels of the name (a CUDA graph launch); the per-launch statistics count it per kernel.
--   gpu_busy_ns is the union of the name's execution intervals over all GPUs.
--   launch_bound = launches >= 2 AND gpu_busy_ns < cpu_ns / 2: launched back to back, these kernels would leave
--   the GPU idle more than half of the time the thread spends launching them.
--   Statistics: median = quantile_cont 0.5, p95 = quantile_cont 0.95 (linear interpolation between ranks).
-- columns:
--   kernel_name | VARCHAR | text (demangled)
--   launches | BIGINT | count
--   cpu_ns | BIGINT | ns (sum of launching call durations, each call once)
--   gpu_busy_ns | BIGINT | ns (union of execution intervals)
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
name AS MATERIALIZED (  -- a small integer per kernel name, so the steps below never sort long names
    SELECT kernel_name, ROW_NUMBER() OVER (ORDER BY kernel_name) AS name_id
    FROM (SELECT DISTINCT kernel_name FROM kernel
          UNION SELECT DISTINCT '[CUDA graph ' || graph_id || ']' FROM graph_trace)
),
launch AS MATERIALIZED (  -- queries/macros/kernel_launches.sql
    SELECT n.name_id, l.kernel_start_ns, l.kernel_end_ns, l.runtime_id, l.api_ns, l.queue_ns, l.kernel_ns
    FROM kernel_launches(kernel, graph_trace, runtime) AS l
    JOIN name AS n ON n.kernel_name IS NOT DISTINCT FROM l.kernel_name
    WHERE ($every OR NOT EXISTS (SELECT 1 FROM analysed_window)  -- the analysed steps' launches, unless $every
           OR EXISTS (SELECT 1 FROM analysed_window AS w
                      WHERE w.pid = l.pid AND l.api_start_ns >= w.start_ns AND l.api_start_ns <= w.end_ns))
),
launch_group AS (SELECT name_id AS grp, kernel_start_ns, kernel_end_ns, runtime_id, api_ns FROM launch),
busy AS (  -- per name: launching calls' time (each call once) and the union of its kernels (queries/macros/launch_busy.sql)
    SELECT grp AS name_id, cpu_ns, gpu_busy_ns FROM launch_busy(launch_group)
),
stats AS (
    SELECT name_id, UNNEST(launch_stats(api_ns, queue_ns, kernel_ns))  -- queries/macros/launch_stats.sql
    FROM launch
    GROUP BY name_id
)
SELECT n.kernel_name, s.launches, CAST(b.cpu_ns AS BIGINT) AS cpu_ns, CAST(b.gpu_busy_ns AS BIGINT) AS gpu_busy_ns,
       CAST(s.kernel_ns AS BIGINT) AS kernel_ns,
       s.mean_api_ns, CAST(s.median_api_ns AS DOUBLE) AS median_api_ns, CAST(s.p95_api_ns AS DOUBLE) AS p95_api_ns,
       s.mean_queue_ns, CAST(s.median_queue_ns AS DOUBLE) AS median_queue_ns,
       CAST(s.p95_queue_ns AS DOUBLE) AS p95_queue_ns,
       s.shorter_than_launch, s.launches >= 2 AND 2 * b.gpu_busy_ns < b.cpu_ns AS launch_bound
FROM stats AS s
JOIN busy AS b USING (name_id)
JOIN name AS n USING (name_id)
ORDER BY cpu_ns DESC, n.kernel_name;
