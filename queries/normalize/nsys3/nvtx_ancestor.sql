-- nsysql: normalize.nsys3.nvtx_ancestor v2
-- purpose: Every (range, enclosing range) pair on a thread, the range itself included at distance 0; turns "innermost range" into "all ranges on the stack".
-- requires: nvtx_range
-- params: none
-- columns:
--   range_id | BIGINT | id
--   ancestor_id | BIGINT | id
--   distance | INTEGER | count (0 = itself, 1 = parent ...)
CREATE TABLE nvtx_ancestor AS
WITH RECURSIVE up(range_id, ancestor_id, distance) AS (
    SELECT range_id, range_id, 0 FROM nvtx_range WHERE end_global_tid IS NULL
    UNION ALL
    SELECT u.range_id, r.parent_id, u.distance + 1
    FROM up AS u JOIN nvtx_range AS r ON r.range_id = u.ancestor_id
    WHERE r.parent_id IS NOT NULL
)
SELECT range_id, ancestor_id, distance FROM up;  -- no ORDER BY: readers order what they show (a sort of every row saved)
