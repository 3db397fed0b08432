-- nsysql: analysis.launch_summary v1
-- purpose: Launch overhead overview per launching thread: launches, mean/median API and queue time, and the share of kernels that ran shorter than their launch call.
-- requires: kernel, runtime
-- params: none
-- columns:
--   pid | BIGINT | id
--   tid | BIGINT | id
--   thread_name | VARCHAR | text
--   launches | BIGINT | count (kernels launched)
--   mean_api_ns | DOUBLE | ns | 1
--   median_api_ns | DOUBLE | ns | 1
--   mean_queue_ns | DOUBLE | ns | 1
--   median_queue_ns | DOUBLE | ns | 1
--   kernel_ns | BIGINT | ns (sum of their kernel times)
--   shorter_than_launch_pct | DOUBLE | pct of kernels with kernel time < API time | 1
SELECT rt.pid, rt.tid, MIN(t.thread_name) AS thread_name, COUNT(*) AS launches,
       AVG(rt.end_ns - rt.start_ns) AS mean_api_ns, MEDIAN(rt.end_ns - rt.start_ns) AS median_api_ns,
       AVG(GREATEST(k.start_ns - rt.end_ns, 0)) AS mean_queue_ns,
       MEDIAN(GREATEST(k.start_ns - rt.end_ns, 0)) AS median_queue_ns,
       SUM(k.end_ns - k.start_ns) AS kernel_ns,
       100.0 * COUNT(*) FILTER (WHERE k.end_ns - k.start_ns < rt.end_ns - rt.start_ns) / COUNT(*) AS shorter_than_launch_pct
FROM kernel AS k
JOIN runtime AS rt ON rt.correlation_id = k.correlation_id AND rt.pid = k.pid
LEFT JOIN thread AS t ON t.global_tid = rt.global_tid
GROUP BY rt.pid, rt.tid
ORDER BY launches DESC, rt.pid, rt.tid;
