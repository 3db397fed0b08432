-- nsysql: recipes._util_people v1
-- purpose: A utilization heatmap recipe as nsysql shows it to people: one row per report, process, device and kind of kernels, its mean and peak over the bins, and the bins themselves as one line of shades.
-- requires: none
-- params: none
-- notes: Reads `util_bin` (rank, pid, device_id, kind, bin, pct: the rows of recipes.cuda_gpu_time_util_map or
--   nccl_gpu_time_util_map of every report, one kind per column there, nsysql/answers/recipes.py). mean_pct: over
--   the bins inside the report's session (NULL bins, outside it, left out). bins: one character per bin in time
--   order, ` ` for 0 %, `▁▂▃▄▅▆▇` up to 100 %, `█` for 100 % and above (--cumulative), `·` outside the session.
-- columns:
--   rank | BIGINT | index (NVIDIA's: the report's place in name order)
--   pid | BIGINT | id
--   device_id | BIGINT | id
--   kind | VARCHAR | text (Kernel; or All, NCCL, Compute, Overlap)
--   mean_pct | DOUBLE | pct (of the session's bins) | 1
--   max_pct | DOUBLE | pct | 1
--   bins | VARCHAR | text (one shade per bin)
SELECT rank, pid, device_id, kind, AVG(pct) AS mean_pct, MAX(pct) AS max_pct,
       string_agg(CASE WHEN pct IS NULL THEN '·'
                       WHEN pct <= 0 THEN ' '
                       WHEN pct >= 100 THEN '█'
                       ELSE substr('▁▂▃▄▅▆▇', CAST(floor(pct / 100 * 7) AS INTEGER) + 1, 1) END, '' ORDER BY bin) AS bins
FROM util_bin
GROUP BY rank, pid, device_id, kind
ORDER BY rank, pid, device_id, min(kind_order);
