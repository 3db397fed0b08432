-- nsysql: macros.nvtx_events v1
-- purpose: Every NVTX event as NVIDIA's recipes read the NVTX table: `nvtx_events(ranges, points)` reads the tables named `ranges` (nvtx_range) and `points` (nvtx_point) and returns one row per event (event_id, start_ns, end_ns, text, domain_name, is_range).
-- requires: none
-- params: none
-- notes: A range without an end event (nvtx_range.is_open) has a NULL end here, as in the export: NVIDIA's recipes
--   leave such a range out of what they time. The events that are no range have no domain name ('' where their
--   domain is the default one, NULL otherwise); only ranges are chosen by domain (macros.nvtx_chosen).
-- columns:
--   event_id | BIGINT | id (row order of NVTX_EVENTS)
--   start_ns | BIGINT | ns timestamp
--   end_ns | BIGINT | ns timestamp (NULL: no end)
--   text | VARCHAR | text
--   domain_name | VARCHAR | text ('' = default domain)
--   is_range | BOOLEAN | flag
CREATE OR REPLACE TEMP MACRO nvtx_events(ranges, points) AS TABLE
SELECT range_id AS event_id, start_ns, CASE WHEN is_open THEN NULL ELSE end_ns END AS end_ns, text,
       domain AS domain_name, true AS is_range
FROM query_table(ranges)
UNION ALL
SELECT event_id, start_ns, end_ns, text, CASE WHEN domain_key = 0 THEN '' END, false
FROM query_table(points);
