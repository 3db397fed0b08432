-- nsysql: macros.overlap_keep v1
-- purpose: The items in one overlap group with a chosen interval, as NVIDIA's recipes filter by NVTX range: `overlap_keep(items, chosen)` reads the tables or CTEs named `items` (columns id, s, e) and `chosen` (columns s, e; macros.nvtx_chosen) and returns the id of every item kept.
-- requires: none
-- params: none
-- notes: NVIDIA's rule (nsys_recipe/lib/overlap.py group_overlapping_ranges, Nsight Systems 2025.3): items and
--   chosen intervals together, in start order, form groups; an interval opens a new group when it starts after
--   the furthest end among those before it (touching ones share a group), and an item is kept when its group holds
--   a chosen interval. So an item is kept when a chain of overlapping intervals links it to a chosen one, not only
--   when it overlaps one itself (a parent range links all its children). An interval without an end (NULL e: an
--   NVTX mark, a domain registration) never ends a group, as pandas' running maximum skips it and the comparison
--   with it is false: the interval after it in time joins its group.
-- columns:
--   id | BIGINT | id (of an item kept)
CREATE OR REPLACE TEMP MACRO overlap_keep(items, chosen) AS TABLE
WITH
u AS (
    SELECT id, s, e, false AS is_chosen FROM query_table(items)
    UNION ALL
    SELECT NULL, s, e, true FROM query_table(chosen)
),
ordered AS (  -- rn: start order (ties: items first, then by id, for a deterministic order)
    SELECT id, s, e, is_chosen, ROW_NUMBER() OVER (ORDER BY s NULLS LAST, is_chosen, id) AS rn FROM u
),
opening AS (  -- reach: the furthest end before it; prev_e: the end of the one just before (NULL: none)
    SELECT id, is_chosen, rn,
           CASE WHEN s > MAX(e) OVER (ORDER BY rn ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
                 AND LAG(e) OVER (ORDER BY rn) IS NOT NULL THEN 1 ELSE 0 END AS opens
    FROM ordered
),
grouped AS (
    SELECT id, is_chosen, SUM(opens) OVER (ORDER BY rn ROWS UNBOUNDED PRECEDING) AS grp FROM opening
)
SELECT id FROM grouped
WHERE NOT is_chosen AND grp IN (SELECT grp FROM grouped WHERE is_chosen);
