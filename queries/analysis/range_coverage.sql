-- nsysql: analysis.range_coverage v1
-- purpose: How much kernel time NVTX ranges account for, per launching thread: inside any range, inside a user range (not a PyTorch op marker), or in none.
-- requires: kernel, runtime
-- params: none
-- notes: PyTorch runs backward kernels on its autograd thread, outside the user's ranges; there they are covered at best
--   by emit_nvtx op markers; linking them to their forward layer needs the autograd sequence numbers.
-- columns:
--   pid | BIGINT | id
--   tid | BIGINT | id (NULL: kernels without a launching API row)
--   thread_name | VARCHAR | text
--   kernels | BIGINT | count
--   kernel_ns | BIGINT | ns
--   in_user_range_ns | BIGINT | ns
--   in_op_marker_only_ns | BIGINT | ns
--   in_no_range_ns | BIGINT | ns
--   kernel_pct | DOUBLE | pct of all kernel time | 1
WITH k AS (
    SELECT kr.kernel_id, kr.end_ns - kr.start_ns AS dur, kr.pid, rt.tid, rt.global_tid, rn.range_id
    FROM kernel AS kr
    LEFT JOIN runtime AS rt ON rt.correlation_id = kr.correlation_id AND rt.pid = kr.pid
    LEFT JOIN runtime_nvtx AS rn ON rn.runtime_id = rt.runtime_id
),
user_covered AS (
    SELECT DISTINCT k.kernel_id
    FROM k JOIN nvtx_ancestor AS a ON a.range_id = k.range_id
    JOIN nvtx_range AS r ON r.range_id = a.ancestor_id
    WHERE NOT r.is_op_marker
)
SELECT k.pid, k.tid, MIN(t.thread_name) AS thread_name, COUNT(*) AS kernels, SUM(k.dur) AS kernel_ns,
       COALESCE(SUM(k.dur) FILTER (WHERE u.kernel_id IS NOT NULL), 0) AS in_user_range_ns,
       COALESCE(SUM(k.dur) FILTER (WHERE u.kernel_id IS NULL AND k.range_id IS NOT NULL), 0) AS in_op_marker_only_ns,
       COALESCE(SUM(k.dur) FILTER (WHERE k.range_id IS NULL), 0) AS in_no_range_ns,
       100.0 * SUM(k.dur) / SUM(SUM(k.dur)) OVER () AS kernel_pct
FROM k
LEFT JOIN user_covered AS u USING (kernel_id)
LEFT JOIN thread AS t ON t.global_tid = k.global_tid
GROUP BY k.pid, k.tid
ORDER BY kernel_ns DESC, k.pid, k.tid;
