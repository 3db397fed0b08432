-- nsysql: normalize.nsys3.nvtx_path v1
-- purpose: Full path of every NVTX range (texts from its top-level range down, joined by '/'); a view, computed only when a query asks, since paths of op-marker ranges are long.
-- requires: nvtx_range
-- params: none
-- columns:
--   range_id | BIGINT | id
--   path | VARCHAR | text
CREATE VIEW nvtx_path AS
WITH RECURSIVE walk(range_id, path) AS (
    SELECT range_id, text FROM nvtx_range WHERE parent_id IS NULL
    UNION ALL
    SELECT r.range_id, w.path || '/' || r.text
    FROM nvtx_range AS r JOIN walk AS w ON r.parent_id = w.range_id
)
SELECT range_id, path FROM walk;
