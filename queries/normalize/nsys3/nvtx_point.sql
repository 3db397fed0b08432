-- nsysql: normalize.nsys3.nvtx_point v1
-- purpose: The NVTX events that are no range (marks, domain and category registrations ...), one row each: its instant, type, domain and text, for readers that take every NVTX_EVENTS row as NVIDIA's recipes do.
-- requires: raw.NVTX_EVENTS, raw.StringIds
-- params: none
-- notes: The ranges (event types 59, 60, 70, 71) are nvtx_node's; together the two hold every NVTX event.
--   NVIDIA's recipes read the whole NVTX table: their --filter-nvtx groups a range with every event that
--   overlaps it in time, and an event without an end (these mostly have none) joins the next one in time to
--   its group (queries/macros/overlap_keep.sql). Few rows: a capture has few marks and one registration per
--   domain.
-- columns:
--   event_id | BIGINT | id (row order of NVTX_EVENTS)
--   start_ns | BIGINT | ns timestamp
--   end_ns | BIGINT | ns timestamp (NULL for most: an instant)
--   event_type | BIGINT | code (NVTX_EVENTS.eventType: 34 mark, 75 domain registration, ...)
--   global_tid | BIGINT | id
--   domain_key | BIGINT | id (NVTX_EVENTS.domainId)
--   text | VARCHAR | text (for a domain registration its name)
CREATE TABLE nvtx_point AS
SELECT n.rowid AS event_id, n.start AS start_ns, n."end" AS end_ns, n.eventType AS event_type,
       n.globalTid AS global_tid, n.domainId AS domain_key, COALESCE(s.value, n.text) AS text
FROM raw.NVTX_EVENTS AS n
LEFT JOIN raw.StringIds AS s ON s.id = n.textId
WHERE n.eventType IS NULL OR n.eventType NOT IN (59, 60, 70, 71);
