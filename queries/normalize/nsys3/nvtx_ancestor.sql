-- nsysql: normalize.nsys3.nvtx_ancestor v3
-- purpose: Every (range, enclosing range) pair on a thread, the range itself included at distance 0; turns "innermost range" into "all ranges on the stack".
-- requires: nvtx_node
-- params: none
-- notes: Built top-down, one recursive step per depth level: each range carries the list of its ancestors (its
--   parent's list with itself in front), unnested at the end, so each step emits one row per range rather than
--   one per pair. Each step joins on depth as well as parent, so DuckDB reads only that level of nvtx_node (a
--   dynamic join filter) instead of hashing every range at every step.
-- columns:
--   range_id | BIGINT | id
--   ancestor_id | BIGINT | id
--   distance | INTEGER | count (0 = itself, 1 = parent ...)
CREATE TABLE nvtx_ancestor AS
WITH RECURSIVE down(range_id, depth, chain) AS (
    SELECT range_id, depth, [range_id] FROM nvtx_node WHERE end_global_tid IS NULL AND parent_id IS NULL
    UNION ALL
    SELECT c.range_id, c.depth, list_prepend(c.range_id, a.chain)  -- chain[1] = itself, chain[2] = parent, ...
    FROM nvtx_node AS c JOIN down AS a ON c.parent_id = a.range_id AND c.depth = a.depth + 1
)
SELECT range_id, unnest(chain) AS ancestor_id, CAST(generate_subscripts(chain, 1) - 1 AS INTEGER) AS distance
FROM down;  -- no ORDER BY: readers order what they show (a sort of every row saved)
