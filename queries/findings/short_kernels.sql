-- nsysql: findings.short_kernels v4
-- purpose: Finding: streams running long runs of back-to-back kernels that are each shorter than the CUDA call that launched them, with the GPU idle between them: work to fuse.
-- requires: analysis.steady_steps, analysis._step_label, analysis._steady_windows, analysis._process_busy, kernel, runtime, macros.busy_inside, macros.human_ns_each, macros.plural_s, analysis.structure
-- params: $min_run BIGINT default 8 (fewest consecutive short kernels that make a run), $max_gap_ns BIGINT default 1000000 (longest time between two kernels of a run that counts, ns), $min_pct DOUBLE default 1 (fires when the bound is at least this share of the analysed steps' wall time, %)
-- notes: The advice of an inference program (analysis.structure's program_kind) names decode steps and no
--   optimizer. Kernels with a launching call (correlationId AND process), in the analysed step of their process in which
--   the call starts. A kernel is short when it ran for less time than its launching call took (end - start of the
--   kernel < end - start of the call); kernels replayed from a CUDA graph (graph node id set) are never short.
--   Per device, stream and step, kernels in start order (then id); a run is a maximal sequence of consecutive short
--   kernels, and counts when it has at least $min_run kernels.
--   recoverable_ns (per device and stream) = sum, over consecutive kernels k1, k2 of a counted run with
--   0 < k2.start - k1.end <= $max_gap_ns, of |[k1.end, k2.start]| - |busy ∩ [k1.end, k2.start]|, busy being the
--   process's busy intervals (analysis._process_busy: any stream, any of its devices): the GPU idle between the short kernels, which
--   fusing them (or replaying them as a graph) would remove. A longer pause (the thread doing something else) is
--   not the kernels' doing and is left out. These intervals of one stream never overlap; two streams' findings can,
--   and all are part of gpu_idle_in_step's idle time (mostly the same gaps launch_bound counts per thread).
--   Fires when recoverable_ns >= $min_pct % of the process's analysed wall time. where: steps, device and stream,
--   and the three most frequent kernels (short names; a cuBLAS name cut before `_tilesize`, a CUTLASS kernel by its
--   `cutlass_...` template argument) in the runs.
--   Medians are quantile_cont 0.5 over the kernels in the runs.
-- columns:
--   rule | VARCHAR | text (short_kernels)
--   title | VARCHAR | text
--   where | VARCHAR | text (steps, device, stream, kernels)
--   evidence | VARCHAR | text (numbers in ms, µs, %)
--   action | VARCHAR | text
--   recoverable_ns | BIGINT | ns (upper bound of wall time recoverable, total over the analysed steps)
--   recoverable_pct | DOUBLE | pct of the analysed steps' wall time | 1
WITH
win AS (  -- the analysed steady-state step windows
    SELECT step, pid, tid, start_ns, end_ns, end_ns - start_ns AS wall_ns FROM steady_steps WHERE analysed
),
bucket AS (  -- bucket width of analysis._steady_windows: the analysed step holding time t is a hash join away
    SELECT MIN(bucket_ns) AS ns FROM _steady_windows
),
launched AS (
    SELECT k.kernel_id, k.pid, k.device_id, k.stream_id, k.start_ns, k.end_ns, w.step, w.start_ns AS step_start_ns,
           w.end_ns AS step_end_ns, k.end_ns - k.start_ns AS kernel_ns, c.end_ns - c.start_ns AS api_ns,
           CASE WHEN regexp_matches(k.kernel_name, 'cutlass_[0-9]+_[A-Za-z0-9_]+')
                THEN regexp_extract(k.kernel_name, 'cutlass_[0-9]+_[A-Za-z0-9_]+')
                ELSE regexp_replace(k.short_name, '_tilesize.*$', '') END AS name,
           k.graph_node_id IS NULL AND k.end_ns - k.start_ns < c.end_ns - c.start_ns AS short
    FROM kernel AS k
    JOIN (SELECT pid, correlation_id, start_ns, end_ns, start_ns // (SELECT ns FROM bucket) AS bucket FROM runtime) AS c
      ON c.correlation_id = k.correlation_id AND c.pid = k.pid
    JOIN _steady_windows AS w ON w.pid = c.pid AND w.bucket = c.bucket
    WHERE c.start_ns >= w.start_ns AND c.start_ns < w.end_ns
),
grouped AS (  -- a new group at every kernel that is not short: the short kernels after it form one run
    SELECT *, SUM(CASE WHEN short THEN 0 ELSE 1 END)
                  OVER (PARTITION BY pid, device_id, stream_id, step ORDER BY start_ns, kernel_id
                        ROWS UNBOUNDED PRECEDING) AS grp
    FROM launched
),
runs AS MATERIALIZED (
    SELECT pid, device_id, stream_id, step, grp, COUNT(*) AS kernels
    FROM grouped WHERE short
    GROUP BY pid, device_id, stream_id, step, grp
    HAVING COUNT(*) >= $min_run
),
in_runs AS MATERIALIZED (  -- the kernels of the counted runs, each with the end of the one before it in its run
    SELECT g.*, LAG(g.end_ns) OVER (PARTITION BY g.pid, g.device_id, g.stream_id, g.step, g.grp
                                    ORDER BY g.start_ns, g.kernel_id) AS prev_end_ns
    FROM grouped AS g
    JOIN runs AS r USING (pid, device_id, stream_id, step, grp)
    WHERE g.short
),
probe AS (  -- the time between consecutive kernels of a run, where short enough to be launch overhead
    SELECT ROW_NUMBER() OVER () AS id, pid, device_id, stream_id, prev_end_ns AS s, start_ns AS e
    FROM in_runs
    WHERE prev_end_ns IS NOT NULL AND start_ns > prev_end_ns AND start_ns - prev_end_ns <= $max_gap_ns
),
probe_busy AS (SELECT * FROM busy_inside(probe, _process_busy)),  -- queries/macros/busy_inside.sql
run_idle AS MATERIALIZED (
    SELECT p.pid, p.device_id, p.stream_id, (p.e - p.s) - b.busy_ns AS idle_ns
    FROM probe AS p JOIN probe_busy AS b USING (id)
),
per_stream AS (
    SELECT r.pid, r.device_id, r.stream_id, COUNT(*) AS runs, SUM(r.kernels) AS kernels,
           (SELECT SUM(i.idle_ns) FROM run_idle AS i
            WHERE i.pid = r.pid AND i.device_id = r.device_id AND i.stream_id = r.stream_id) AS idle_ns
    FROM runs AS r GROUP BY r.pid, r.device_id, r.stream_id
),
stats AS (
    SELECT pid, device_id, stream_id, quantile_cont(kernel_ns, 0.5) AS median_kernel_ns,
           quantile_cont(api_ns, 0.5) AS median_api_ns
    FROM in_runs GROUP BY pid, device_id, stream_id
),
names AS (
    SELECT pid, device_id, stream_id, string_agg(name, ', ' ORDER BY n DESC, name) AS names
    FROM (SELECT pid, device_id, stream_id, name, COUNT(*) AS n,
                 ROW_NUMBER() OVER (PARTITION BY pid, device_id, stream_id ORDER BY COUNT(*) DESC, name) AS rank
          FROM in_runs GROUP BY pid, device_id, stream_id, name)
    WHERE rank <= 3 GROUP BY pid, device_id, stream_id
),
per_pid AS (
    SELECT pid, COUNT(*) AS steps, SUM(wall_ns) AS wall_ns FROM win GROUP BY pid
),
fired AS (
    SELECT s.*, p.steps, p.wall_ns, st.median_kernel_ns, st.median_api_ns, n.names, l.label
    FROM per_stream AS s
    JOIN per_pid AS p USING (pid)
    JOIN stats AS st USING (pid, device_id, stream_id)
    JOIN names AS n USING (pid, device_id, stream_id)
    JOIN _step_label AS l USING (pid)
    WHERE s.idle_ns > 0 AND 100.0 * s.idle_ns >= $min_pct * p.wall_ns
),
shown AS (  -- the per-step numbers in human units: d[1], d[2], ...
    SELECT *, human_ns_each([idle_ns / steps, median_kernel_ns, median_api_ns]) AS d
    FROM fired
)
SELECT 'short_kernels' AS rule,
       printf('Runs of kernels shorter than their launch: GPU idle %s per step (%.1f%%)',
              d[1], 100.0 * idle_ns / wall_ns) AS title,
       printf('%s, GPU %d stream %d, kernels %s', label, device_id, stream_id, names) AS "where",
       printf('%,d run%s of %d or more consecutive kernels each shorter than its launch call, %,d kernels in %,d step%s '
              || '(median kernel %s, median launch call %s). ', runs, plural_s(runs),
              $min_run, kernels, steps, plural_s(steps), d[2], d[3])
         || printf('Between them the GPU sat idle %s per step (%.1f%% of the step wall time).', d[1],
                   100.0 * idle_ns / wall_ns) AS evidence,
       CASE WHEN (SELECT MIN(program_kind) FROM structure AS k WHERE k.pid = shown.pid) = 'inference'
            THEN 'Fuse these small kernels: torch.compile the model, use fused layers (e.g. '
                 || 'scaled_dot_product_attention, fused LayerNorm), or replay each decode step as a CUDA graph.'
            ELSE 'Fuse these small kernels: torch.compile the model (or the optimizer step), use fused/foreach '
                 || 'optimizers and fused layers (e.g. scaled_dot_product_attention, fused LayerNorm), or replay '
                 || 'them as a CUDA graph.' END AS action,
       CAST(idle_ns AS BIGINT) AS recoverable_ns,
       100.0 * idle_ns / wall_ns AS recoverable_pct
FROM shown
ORDER BY recoverable_ns DESC, pid, device_id, stream_id;
