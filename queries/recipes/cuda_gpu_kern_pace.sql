-- nsysql: recipes.cuda_gpu_kern_pace v1
-- purpose: Each instance of one CUDA kernel, in export order, with its duration, the time since the previous one ended and their running sums, as NVIDIA's recipe `nsys recipe cuda_gpu_kern_pace --name NAME` (Nsight Systems 2025.3) computes them for one report.
-- requires: kernel, macros.nvtx_events, macros.nvtx_chosen, macros.overlap_keep
-- params: name VARCHAR (the kernel's short name, as nsys names it: e.g. vectorized_elementwise_kernel),
--   filter_name VARCHAR default NULL (--filter-nvtx: the text of the ranges to keep the kernels of; NULL: no filter),
--   filter_domain VARCHAR default NULL (its domain: NULL the default one, '*' any),
--   filter_index BIGINT default NULL (the n-th such range, 0-based; NULL: all),
--   time_from BIGINT default 0 (--filter-time: keep kernels ending at or after it, ns; NULL: no bound),
--   time_to BIGINT default NULL (keep kernels starting at or before it, ns)
-- notes: As the recipe (nsys_recipe/lib/pace.py): every kernel of the export, of every process and device, in
--   export order (CUPTI_ACTIVITY_KIND_KERNEL's row order, start order in nsys's exports); --filter-nvtx keeps the
--   kernels whose GPU time is in one overlap group with a chosen range's CPU time (macros.overlap_keep), kernels
--   starting before the session and, with --filter-time, outside the window are left out; the instances are those
--   whose short name is NAME. Delta: the instance's start minus the previous instance's end (the first: its start).
-- columns:
--   iteration | BIGINT | index (0-based)
--   name | VARCHAR | text
--   start_ns | BIGINT | ns timestamp
--   end_ns | BIGINT | ns timestamp
--   duration_ns | BIGINT | ns
--   delta_ns | BIGINT | ns (start minus the previous instance's end)
--   duration_accum_ns | BIGINT | ns (running sum of duration_ns)
--   delta_accum_ns | BIGINT | ns (running sum of delta_ns)
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
inst AS (
    SELECT kernel_id, CAST(short_name AS VARCHAR) AS name, start_ns, end_ns, end_ns - start_ns AS duration_ns,
           start_ns - COALESCE(LAG(end_ns) OVER (ORDER BY kernel_id), 0) AS delta_ns
    FROM kernel
    WHERE short_name = $name
      AND ($filter_name IS NULL OR kernel_id IN (SELECT id FROM overlap_keep(items, chosen)))
      AND start_ns >= 0
      AND ($time_from IS NULL OR end_ns >= $time_from)
      AND ($time_to IS NULL OR start_ns <= $time_to)
      AND end_ns IS NOT NULL
)
SELECT CAST(ROW_NUMBER() OVER w - 1 AS BIGINT) AS iteration, name, start_ns, end_ns, duration_ns, delta_ns,
       CAST(SUM(duration_ns) OVER w AS BIGINT) AS duration_accum_ns,
       CAST(SUM(delta_ns) OVER w AS BIGINT) AS delta_accum_ns
FROM inst
WINDOW w AS (ORDER BY kernel_id ROWS UNBOUNDED PRECEDING)
ORDER BY iteration;
