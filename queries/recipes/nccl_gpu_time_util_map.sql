-- nsysql: recipes.nccl_gpu_time_util_map v1
-- purpose: Per process and GPU, the share of each time bin in which any kernel, an NCCL kernel, a compute kernel, and NCCL and compute kernels at once ran (%), as NVIDIA's recipe `nsys recipe nccl_gpu_time_util_map` (Nsight Systems 2025.3) computes it for one report (its analysis.parquet); no rows when no kernel is NCCL's.
-- requires: kernel, macros.nvtx_events, macros.nvtx_chosen, macros.overlap_keep, macros.union_islands, macros.heatmap_pct
-- params: bin_size BIGINT (ns; NVIDIA: ceil(the longest session, aligned, / bins), the same for every export),
--   bins BIGINT default 30 (--bins),
--   max_duration BIGINT (this export's session end on the aligned clock: its duration + session_offset, ns),
--   session_offset BIGINT default 0 (this export's session start on the aligned clock, ns; 0 with --disable-alignment),
--   filter_name VARCHAR default NULL (--filter-nvtx: the text of the ranges to keep the kernels of; NULL: no filter),
--   filter_domain VARCHAR default NULL (its domain: NULL the default one, '*' any),
--   filter_index BIGINT default NULL (the n-th such range, 0-based; NULL: all),
--   time_from BIGINT default 0 (--filter-time: keep kernels ending at or after it, ns; NULL: no bound),
--   time_to BIGINT default NULL (keep kernels starting at or before it, ns)
-- notes: As the recipe: an NCCL kernel is one whose short name starts with `nccl` (NCCL's one-rank oneRankReduce is
--   compute here); kernels filtered as in recipes.cuda_gpu_time_util_map. Per process and device: all_pct the union
--   of every kernel, nccl_pct of the NCCL kernels, compute_pct of the others, overlap_pct of the time both unions
--   cover at once, each spread over the bins by macros.heatmap_pct. No rows at all when no kept kernel is NCCL's
--   (the recipe writes nothing for such a report).
-- columns:
--   bin_start_ns | BIGINT | ns (the bin's start on the aligned clock: bin * bin_size)
--   all_pct | DOUBLE | pct (of the bin) | 1
--   nccl_pct | DOUBLE | pct (of the bin) | 1
--   compute_pct | DOUBLE | pct (of the bin) | 1
--   overlap_pct | DOUBLE | pct (of the bin) | 1
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
    SELECT pid, device_id, starts_with(CAST(short_name AS VARCHAR), 'nccl') AS is_nccl,
           start_ns + $session_offset AS s, end_ns + $session_offset AS e
    FROM kernel
    WHERE ($filter_name IS NULL OR kernel_id IN (SELECT id FROM overlap_keep(items, chosen)))
      AND start_ns >= 0
      AND ($time_from IS NULL OR end_ns >= $time_from)
      AND ($time_to IS NULL OR start_ns <= $time_to)
),
spans AS (  -- grp: the process, device and kind (all, nccl, compute)
    SELECT {'pid': pid, 'device_id': device_id, 'kind': 'all'} AS grp, s, e FROM k
    UNION ALL
    SELECT {'pid': pid, 'device_id': device_id, 'kind': CASE WHEN is_nccl THEN 'nccl' ELSE 'compute' END}, s, e FROM k
),
islands AS MATERIALIZED (
    SELECT grp, s, e FROM union_islands(spans)
),
overlap AS (  -- where an NCCL island and a compute island of the same process and device meet
    SELECT {'pid': n.grp.pid, 'device_id': n.grp.device_id, 'kind': 'overlap'} AS grp,
           greatest(n.s, c.s) AS s, least(n.e, c.e) AS e
    FROM islands AS n
    JOIN islands AS c ON c.grp.pid = n.grp.pid AND c.grp.device_id = n.grp.device_id AND c.grp.kind = 'compute'
                     AND c.s < n.e AND c.e > n.s
    WHERE n.grp.kind = 'nccl'
),
intervals AS (
    SELECT grp, s, e, ROW_NUMBER() OVER (PARTITION BY grp ORDER BY s, e) AS rn
    FROM (SELECT grp, s, e FROM islands UNION ALL SELECT grp, s, e FROM overlap)
),
groups AS (
    SELECT {'pid': pid, 'device_id': device_id, 'kind': kind} AS grp
    FROM (SELECT DISTINCT pid, device_id FROM k) CROSS JOIN (VALUES ('all'), ('nccl'), ('compute'), ('overlap')) AS t(kind)
    WHERE EXISTS (SELECT 1 FROM k WHERE is_nccl)
),
pct AS (
    SELECT grp.pid AS pid, grp.device_id AS device_id, grp.kind AS kind, bin, pct
    FROM heatmap_pct(intervals, groups, $bin_size, $bins, $max_duration, $session_offset)
)
SELECT bin * $bin_size AS bin_start_ns,
       MAX(pct) FILTER (WHERE kind = 'all') AS all_pct,
       MAX(pct) FILTER (WHERE kind = 'nccl') AS nccl_pct,
       MAX(pct) FILTER (WHERE kind = 'compute') AS compute_pct,
       MAX(pct) FILTER (WHERE kind = 'overlap') AS overlap_pct,
       pid, device_id
FROM pct
GROUP BY pid, device_id, bin
ORDER BY pid, device_id, bin;
