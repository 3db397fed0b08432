-- nsysql: analysis._plot_kernels v1
-- purpose: The kernels with the most GPU time (per full name) with a readable label source: short name and the PyTorch op or autograd node that launched most of their instances, for `nsysql plot kernels`.
-- requires: kernel, gpu_op_label
-- params: top BIGINT default 20
-- columns:
--   kernel_name | VARCHAR | text (demangled)
--   short_name | VARCHAR | text
--   main_op | VARCHAR | text (most frequent launching op or autograd node; NULL when none is known)
--   other_ops | BIGINT | count (further distinct ops that launched it)
--   instances | BIGINT | count
--   total_ns | BIGINT | ns
--   pct | DOUBLE | pct of all kernel time | 1
WITH per_launch AS (
    SELECT k.kernel_name, k.short_name, k.end_ns - k.start_ns AS duration_ns, a.op
    FROM kernel AS k
    LEFT JOIN gpu_op_label AS a ON a.op_kind = 'kernel' AND a.op_id = k.kernel_id
),
per_name AS (
    SELECT kernel_name, MIN(short_name) AS short_name, mode(op) AS main_op,
           GREATEST(COUNT(DISTINCT op) - 1, 0) AS other_ops, COUNT(*) AS instances,
           SUM(duration_ns) AS total_ns
    FROM per_launch
    GROUP BY kernel_name
)
SELECT kernel_name, short_name, main_op, other_ops, instances, CAST(total_ns AS BIGINT) AS total_ns,
       100.0 * total_ns / SUM(total_ns) OVER () AS pct
FROM per_name
ORDER BY total_ns DESC, kernel_name
LIMIT $top;
