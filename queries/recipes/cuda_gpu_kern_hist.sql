-- nsysql: recipes.cuda_gpu_kern_hist v1
-- purpose: Every CUDA kernel with its duration and short name, in export order, the rows whose durations NVIDIA's recipe `nsys recipe cuda_gpu_kern_hist` (Nsight Systems 2025.3) draws as histograms (its analysis.parquet) for one report.
-- requires: kernel, macros.nvtx_events, macros.nvtx_chosen, macros.overlap_keep
-- params: filter_name VARCHAR default NULL (--filter-nvtx: the text of the ranges to keep the kernels of; NULL: no filter),
--   filter_domain VARCHAR default NULL (its domain: NULL the default one, '*' any),
--   filter_index BIGINT default NULL (the n-th such range, 0-based; NULL: all),
--   time_from BIGINT default 0 (--filter-time: keep kernels ending at or after it, ns; NULL: no bound),
--   time_to BIGINT default NULL (keep kernels starting at or before it, ns)
-- notes: As the recipe: every kernel of the export, all processes and devices, in export order; --filter-nvtx
--   keeps the kernels whose GPU time is in one overlap group with a chosen range's CPU time (macros.overlap_keep);
--   kernels starting before the session, outside --filter-time's window, or of no duration are left out.
--   kernel_index: the kernel's place among all the export's kernels (0-based), the index of NVIDIA's frame.
-- columns:
--   kernel_index | BIGINT | index (0-based, among all kernels in export order)
--   duration_ns | BIGINT | ns
--   name | VARCHAR | text (short name)
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
numbered AS (
    SELECT kernel_id, CAST(ROW_NUMBER() OVER (ORDER BY kernel_id) - 1 AS BIGINT) AS kernel_index, start_ns, end_ns,
           CAST(short_name AS VARCHAR) AS name
    FROM kernel
)
SELECT kernel_index, end_ns - start_ns AS duration_ns, name
FROM numbered
WHERE ($filter_name IS NULL OR kernel_id IN (SELECT id FROM overlap_keep(items, chosen)))
  AND start_ns >= 0
  AND ($time_from IS NULL OR end_ns >= $time_from)
  AND ($time_to IS NULL OR start_ns <= $time_to)
  AND end_ns - start_ns > 0
ORDER BY kernel_index;
