-- nsysql: recipes.nvtx_pace v1
-- purpose: Each instance of one NVTX range, in export order, with its duration, the time since the previous one ended and their running sums, as NVIDIA's recipe `nsys recipe nvtx_pace --name NAME` (Nsight Systems 2025.3) computes them for one report.
-- requires: nvtx_range, macros.nvtx_events, macros.nvtx_chosen, macros.overlap_keep
-- params: name VARCHAR (the range's text, any domain),
--   filter_name VARCHAR default NULL (--filter-nvtx: the text of the ranges to keep the events of; NULL: no filter),
--   filter_domain VARCHAR default NULL (its domain: NULL the default one, '*' any),
--   filter_index BIGINT default NULL (the n-th such range, 0-based; NULL: all),
--   time_from BIGINT default 0 (--filter-time: keep events ending at or after it, ns; NULL: no bound),
--   time_to BIGINT default NULL (keep events starting at or before it, ns)
-- notes: As the recipe (nsys_recipe/lib/pace.py, data_service.py): every NVTX event (ranges, marks, domain
--   registrations) is read; --filter-nvtx keeps the events in one overlap group with a chosen range
--   (macros.overlap_keep); events starting before the session (negative times) and, with --filter-time, outside the
--   window are left out; of those, the ranges whose text is NAME and that have an end are the instances, in export
--   order (NVTX_EVENTS' row order, which is start order in nsys's exports), whatever their domain or thread. Delta:
--   the instance's start minus the previous instance's end (the first: its start, i.e. from the session's start),
--   negative when instances overlap (several threads or processes). Times on the export's clock; several exports
--   are aligned afterwards (nsysql/answers/recipes.py).
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
events AS MATERIALIZED (
    SELECT * FROM nvtx_events(nvtx_range, nvtx_point)
),
chosen AS (
    SELECT s, e FROM nvtx_chosen(events, $filter_name, $filter_domain, $filter_index)
),
items AS (
    SELECT event_id AS id, start_ns AS s, end_ns AS e FROM events
),
kept AS (
    SELECT event_id, text, start_ns, end_ns FROM events
    WHERE ($filter_name IS NULL OR event_id IN (SELECT id FROM overlap_keep(items, chosen)))
      AND start_ns >= 0
      AND ($time_from IS NULL OR end_ns >= $time_from)
      AND ($time_to IS NULL OR start_ns <= $time_to)
),
inst AS (
    SELECT event_id, text, start_ns, end_ns, end_ns - start_ns AS duration_ns,
           start_ns - COALESCE(LAG(end_ns) OVER (ORDER BY event_id), 0) AS delta_ns
    FROM kept
    WHERE text = $name AND end_ns IS NOT NULL
)
SELECT CAST(ROW_NUMBER() OVER w - 1 AS BIGINT) AS iteration, text AS name, start_ns, end_ns, duration_ns, delta_ns,
       CAST(SUM(duration_ns) OVER w AS BIGINT) AS duration_accum_ns,
       CAST(SUM(delta_ns) OVER w AS BIGINT) AS delta_accum_ns
FROM inst
WINDOW w AS (ORDER BY event_id ROWS UNBOUNDED PRECEDING)
ORDER BY iteration;
