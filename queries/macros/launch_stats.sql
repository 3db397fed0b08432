-- nsysql: macros.launch_stats v1
-- purpose: The launch-overhead statistics of a group of kernel launches, as one aggregate: `UNNEST(launch_stats(api_ns, queue_ns, kernel_ns))` in a grouped SELECT gives the columns launches, kernel_ns, mean/median/p95 of api_ns and of queue_ns, and shorter_than_launch (kernels that ran shorter than their launch call).
-- requires: none
-- params: none
-- notes: A scalar macro over aggregates, inlined where it is called: a STRUCT of COUNT, SUM, AVG and quantile_cont
--   (the median and p95 interpolate, as NVIDIA's reports do not: these are nsysql's own columns).
--   analysis.overhead_by_kernel, overhead_by_thread and overhead_by_range read it.
-- columns:
--   launch_stats | STRUCT | struct (launches BIGINT, kernel_ns HUGEINT, mean_api_ns DOUBLE, median_api_ns DOUBLE, p95_api_ns DOUBLE, mean_queue_ns DOUBLE, median_queue_ns DOUBLE, p95_queue_ns DOUBLE, shorter_than_launch BIGINT)
CREATE OR REPLACE TEMP MACRO launch_stats(api_ns, queue_ns, kernel_ns) AS {
    launches: COUNT(*), kernel_ns: SUM(kernel_ns),
    mean_api_ns: AVG(api_ns), median_api_ns: quantile_cont(api_ns, 0.5), p95_api_ns: quantile_cont(api_ns, 0.95),
    mean_queue_ns: AVG(queue_ns), median_queue_ns: quantile_cont(queue_ns, 0.5),
    p95_queue_ns: quantile_cont(queue_ns, 0.95),
    shorter_than_launch: COUNT(*) FILTER (WHERE kernel_ns < api_ns)};
