-- nsysql: recipes.nvtx_gpu_proj_pace v1
-- purpose: Each instance of one NVTX range projected onto the GPU (from its first GPU op's start to its last one's end), with its duration, the time since the previous one ended and their running sums, as NVIDIA's recipe `nsys recipe nvtx_gpu_proj_pace --name NAME` (Nsight Systems 2025.3) computes them for one report.
-- requires: nvtx_range, gpu_op, runtime, macros.nvtx_events, macros.nvtx_chosen, macros.overlap_keep
-- params: name VARCHAR (the range's text, any domain),
--   filter_name VARCHAR default NULL (--filter-nvtx or --filter-projected-nvtx: the text of the ranges to keep the GPU ops of; NULL: no filter),
--   filter_domain VARCHAR default NULL (its domain: NULL the default one, '*' any),
--   filter_index BIGINT default NULL (the n-th such range, 0-based; NULL: all),
--   filter_projected BOOLEAN default false (true: --filter-projected-nvtx, the chosen ranges' GPU projections),
--   time_from BIGINT default 0 (--filter-time: keep GPU ops ending at or after it, ns; NULL: no bound),
--   time_to BIGINT default NULL (keep GPU ops starting at or before it, ns)
-- notes: As the recipe (nsys_recipe/lib/nvtx.py project_nvtx_onto_gpu): the GPU ops are the kernels, copies and
--   sets with their launching CUDA call (a CUDA graph traced at graph level has no kernel rows and counts for
--   nothing here); --filter-nvtx keeps the ops whose GPU time is in one overlap group with a chosen range's CPU
--   time, --filter-projected-nvtx with a chosen range's projection (all ops when no chosen range projects), and
--   ops starting before the session or outside --filter-time's window are left out. A range named NAME that has
--   an end and ends on its own thread gets the ops whose CUDA call ran on that thread wholly inside it (starting
--   at or after its start and before its end, ending at or before its end); one with none has no instance. The
--   instances come per thread (in thread id order), each thread's in the order of their projected start (longer
--   first, then export order), all threads and processes in one sequence: delta is the instance's projected start
--   minus the previous instance's projected end, negative across threads.
-- columns:
--   iteration | BIGINT | index (0-based)
--   name | VARCHAR | text
--   start_ns | BIGINT | ns timestamp (the first GPU op's start)
--   end_ns | BIGINT | ns timestamp (the last GPU op's end)
--   duration_ns | BIGINT | ns
--   delta_ns | BIGINT | ns (start minus the previous instance's end)
--   duration_accum_ns | BIGINT | ns (running sum of duration_ns)
--   delta_accum_ns | BIGINT | ns (running sum of delta_ns)
WITH
op AS MATERIALIZED (  -- every kernel, copy and set with its launching call
    SELECT g.op_id, g.op_kind, g.start_ns, g.end_ns, r.runtime_id, r.global_tid, r.start_ns AS call_start_ns,
           r.end_ns AS call_end_ns
    FROM gpu_op AS g
    JOIN runtime AS r ON r.runtime_id = g.runtime_id
    WHERE g.op_kind <> 'graph'
),
events AS (
    SELECT * FROM nvtx_events(nvtx_range, nvtx_point) WHERE $filter_name IS NOT NULL
),
chosen_cpu AS (
    SELECT event_id, s, e FROM nvtx_chosen(events, $filter_name, $filter_domain, $filter_index)
),
chosen_proj AS (  -- the chosen ranges projected with every op (--filter-projected-nvtx)
    SELECT MIN(o.start_ns) AS s, MAX(o.end_ns) AS e
    FROM chosen_cpu AS c
    JOIN nvtx_range AS n ON n.range_id = c.event_id AND NOT n.is_open AND n.end_global_tid IS NULL
    JOIN op AS o ON o.global_tid = n.global_tid AND o.call_start_ns >= n.start_ns AND o.call_start_ns < n.end_ns
                AND o.call_end_ns <= n.end_ns
    WHERE $filter_projected
    GROUP BY n.range_id
),
chosen AS (
    SELECT s, e FROM chosen_cpu WHERE NOT $filter_projected
    UNION ALL
    SELECT s, e FROM chosen_proj
),
items AS (
    SELECT ROW_NUMBER() OVER () AS id, op_kind, op_id, start_ns AS s, end_ns AS e FROM op WHERE $filter_name IS NOT NULL
),
kept_ids AS (
    SELECT i.op_kind, i.op_id FROM overlap_keep(items, chosen) AS k JOIN items AS i ON i.id = k.id
),
kept AS (
    SELECT o.* FROM op AS o
    WHERE ($filter_name IS NULL
           OR ($filter_projected AND NOT EXISTS (SELECT 1 FROM chosen_proj))
           OR (o.op_kind, o.op_id) IN (SELECT (op_kind, op_id) FROM kept_ids))
      AND o.start_ns >= 0
      AND ($time_from IS NULL OR o.end_ns >= $time_from)
      AND ($time_to IS NULL OR o.start_ns <= $time_to)
),
proj AS (
    SELECT n.range_id, n.global_tid, n.text AS name, MIN(k.start_ns) AS start_ns, MAX(k.end_ns) AS end_ns
    FROM nvtx_range AS n
    JOIN kept AS k ON k.global_tid = n.global_tid AND k.call_start_ns >= n.start_ns AND k.call_start_ns < n.end_ns
                  AND k.call_end_ns <= n.end_ns
    WHERE n.text = $name AND NOT n.is_open AND n.end_global_tid IS NULL
    GROUP BY n.range_id, n.global_tid, n.text
),
ordered AS (
    SELECT name, start_ns, end_ns,
           ROW_NUMBER() OVER (ORDER BY global_tid, start_ns, end_ns DESC, range_id) AS seq
    FROM proj
),
inst AS (
    SELECT seq, name, start_ns, end_ns, end_ns - start_ns AS duration_ns,
           start_ns - COALESCE(LAG(end_ns) OVER (ORDER BY seq), 0) AS delta_ns
    FROM ordered
)
SELECT CAST(seq - 1 AS BIGINT) AS iteration, name, start_ns, end_ns, duration_ns, delta_ns,
       CAST(SUM(duration_ns) OVER w AS BIGINT) AS duration_accum_ns,
       CAST(SUM(delta_ns) OVER w AS BIGINT) AS delta_accum_ns
FROM inst
WINDOW w AS (ORDER BY seq ROWS UNBOUNDED PRECEDING)
ORDER BY iteration;
