-- nsysql: recipes.cuda_gpu_time_util_map v1
-- purpose: Per process and GPU, the share of each time bin in which kernels ran (%), as NVIDIA's recipe `nsys recipe cuda_gpu_time_util_map` (Nsight Systems 2025.3) computes it for one report (its analysis.parquet).
-- requires: kernel, macros.nvtx_events, macros.nvtx_chosen, macros.overlap_keep, macros.union_islands, macros.heatmap_pct
-- params: bin_size BIGINT (ns; NVIDIA: ceil(the longest session, aligned, / bins), the same for every export),
--   bins BIGINT default 30 (--bins),
--   max_duration BIGINT (this export's session end on the aligned clock: its duration + session_offset, ns),
--   session_offset BIGINT default 0 (this export's session start on the aligned clock, ns; 0 with --disable-alignment),
--   cumulative BOOLEAN default false (--cumulative: add up overlapping kernels, above 100 %),
--   filter_name VARCHAR default NULL (--filter-nvtx: the text of the ranges to keep the kernels of; NULL: no filter),
--   filter_domain VARCHAR default NULL (its domain: NULL the default one, '*' any),
--   filter_index BIGINT default NULL (the n-th such range, 0-based; NULL: all),
--   time_from BIGINT default 0 (--filter-time: keep kernels ending at or after it, ns; NULL: no bound),
--   time_to BIGINT default NULL (keep kernels starting at or before it, ns)
-- notes: As the recipe: the kernels (no copies or sets; a CUDA graph traced at graph level has no kernel rows) left
--   after --filter-nvtx (macros.overlap_keep), those starting before the session and outside --filter-time's window
--   left out, moved by session_offset; per process and device, their union (touching kernels merged;
--   --cumulative: each kernel on its own) spread over `bins` bins of bin_size from 0 (macros.heatmap_pct). A bin
--   outside the export's session is NULL; one the session covers in part is scaled to that part. Rows per process
--   and device (ascending), then bin.
-- columns:
--   bin_start_ns | BIGINT | ns (the bin's start on the aligned clock: bin * bin_size)
--   kernel_pct | DOUBLE | pct (of the bin) | 1
--   pid | BIGINT | id
--   device_id | BIGINT | id
WITH
events AS (
    SELECT * FROM nvtx_events(nvtx_range, nvtx_point) WHERE $filter_name IS NOT NULL
),
chosen AS (
    SELECT s, e FROM nvtx_chosen(events, $filter_name, $filter_domain, $filter_index)
),
items AS (
    SELECT kernel_id AS id, start_ns AS s, end_ns AS e FROM kernel WHERE $filter_name IS NOT NULL
),
k AS MATERIALIZED (
    SELECT kernel_id, {'pid': pid, 'device_id': device_id} AS grp, start_ns + $session_offset AS s,
           end_ns + $session_offset AS e
    FROM kernel
    WHERE ($filter_name IS NULL OR kernel_id IN (SELECT id FROM overlap_keep(items, chosen)))
      AND start_ns >= 0
      AND ($time_from IS NULL OR end_ns >= $time_from)
      AND ($time_to IS NULL OR start_ns <= $time_to)
),
spans AS (
    SELECT grp, s, e FROM k WHERE NOT $cumulative
),
intervals AS (  -- rn: NVIDIA's row order within a group (time order of the union's pieces; export order of kernels)
    SELECT grp, s, e, ROW_NUMBER() OVER (PARTITION BY grp ORDER BY s) AS rn FROM union_islands(spans)
    UNION ALL
    SELECT grp, s, e, ROW_NUMBER() OVER (PARTITION BY grp ORDER BY kernel_id) FROM k WHERE $cumulative
),
groups AS (
    SELECT DISTINCT grp FROM k
)
SELECT bin * $bin_size AS bin_start_ns, pct AS kernel_pct, grp.pid AS pid, grp.device_id AS device_id
FROM heatmap_pct(intervals, groups, $bin_size, $bins, $max_duration, $session_offset)
ORDER BY pid, device_id, bin;
