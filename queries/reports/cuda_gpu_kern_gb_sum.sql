-- nsysql: reports.cuda_gpu_kern_gb_sum v1
-- purpose: GPU time per kernel name (demangled) and launch shape (grid and block dimensions), identical to `nsys stats -r cuda_gpu_kern_gb_sum` (Nsight Systems 2025.3).
-- requires: kernel
-- params: none
-- notes: Like cuda_gpu_kern_sum, with one row per distinct grid/block shape of a kernel. GridXYZ and BlockXYZ are
--   the three dimensions each right-aligned in 4 characters, separated by a space (`   8   16    1`), as NVIDIA
--   prints them (wider numbers are not cut). Ties on total time sort by instances, name, then grid and block.
-- columns:
--   Time (%) | DOUBLE | pct of all kernel time | 1
--   Total Time (ns) | BIGINT | ns
--   Instances | BIGINT | count
--   Avg (ns) | DOUBLE | ns | 1
--   Med (ns) | DOUBLE | ns | 1
--   Min (ns) | BIGINT | ns
--   Max (ns) | BIGINT | ns
--   StdDev (ns) | DOUBLE | ns (sample standard deviation; 0 for one instance) | 1
--   GridXYZ | VARCHAR | text (grid x y z, each `%4d`)
--   BlockXYZ | VARCHAR | text (block x y z, each `%4d`)
--   Name | VARCHAR | text (demangled kernel name)
WITH shapes AS (
    SELECT kernel_name, grid_x, grid_y, grid_z, block_x, block_y, block_z,
           SUM(end_ns - start_ns) AS total,
           COUNT(*) AS n,
           AVG(end_ns - start_ns) AS avg_ns,
           MEDIAN(end_ns - start_ns) AS med_ns,
           MIN(end_ns - start_ns) AS min_ns,
           MAX(end_ns - start_ns) AS max_ns,
           COALESCE(STDDEV_SAMP(end_ns - start_ns), 0.0) AS std_ns
    FROM kernel
    GROUP BY kernel_name, grid_x, grid_y, grid_z, block_x, block_y, block_z
)
SELECT 100.0 * total / SUM(total) OVER () AS "Time (%)",
       total AS "Total Time (ns)",
       n AS "Instances",
       avg_ns AS "Avg (ns)",
       med_ns AS "Med (ns)",
       min_ns AS "Min (ns)",
       max_ns AS "Max (ns)",
       std_ns AS "StdDev (ns)",
       printf('%4d %4d %4d', grid_x, grid_y, grid_z) AS "GridXYZ",
       printf('%4d %4d %4d', block_x, block_y, block_z) AS "BlockXYZ",
       kernel_name AS "Name"
FROM shapes
ORDER BY total DESC, n, kernel_name, grid_x, grid_y, grid_z, block_x, block_y, block_z;
