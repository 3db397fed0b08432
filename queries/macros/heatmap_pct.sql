-- nsysql: macros.heatmap_pct v1
-- purpose: The share of each time bin that intervals cover, in %, as NVIDIA's utilization heatmap recipes compute it: `heatmap_pct(intervals, groups, bin_size, bins, max_duration, session_offset)` reads the tables or CTEs named `intervals` (columns grp, s, e, rn: an interval of group grp, rn its place in the group's order) and `groups` (column grp) and returns one row per group and bin (grp, bin, pct).
-- requires: none
-- params: none
-- notes: NVIDIA's arithmetic (nsys_recipe/lib/heatmap.py, Nsight Systems 2025.3), step for step in float64: each
--   interval's start and end are divided by bin_size; an interval within one bin adds min(ceil(s), e) - s to it
--   (so one that starts exactly on a bin's boundary adds nothing, as NVIDIA's does), one over several bins adds
--   e - max(floor(e), s) to its last, min(ceil(s), e) - s to its first and 1 to each bin between. The additions to a
--   bin are summed in NVIDIA's order: the one-bin intervals first, then the others, each in rn order. The bins the
--   session (session_offset to max_duration) only partly covers are divided by the share it covers; bins outside it
--   are NULL (NaN in NVIDIA's files). pct is that value times 100, rounded to 1 decimal as numpy rounds (half to
--   even on the binary value). Intervals are not merged: overlapping ones add up (above 100 %); merge them first
--   (macros.union_islands) for the share of time any of them runs. Bins beyond `bins` are not returned.
-- columns:
--   grp | ANY | id (as given)
--   bin | BIGINT | index (0-based; the bin starts at bin * bin_size)
--   pct | DOUBLE | pct (NULL outside the session)
CREATE OR REPLACE TEMP MACRO heatmap_pct(intervals, groups, bin_size, bins, max_duration, session_offset) AS TABLE
WITH
scaled AS (
    SELECT grp, rn, s / bin_size AS ss, e / bin_size AS es FROM query_table(intervals)
),
parts AS (
    SELECT grp, rn, CAST(floor(ss) AS BIGINT) AS sb, CAST(floor(es) AS BIGINT) AS eb,
           least(ceil(ss), es) - ss AS sp, es - greatest(floor(es), ss) AS ep
    FROM scaled
),
added AS (  -- phase 0: one-bin intervals; phase 1: the others (their last bin, first bin, the bins between)
    SELECT grp, sb AS bin, 0 AS phase, rn, sp AS v FROM parts WHERE sb = eb
    UNION ALL
    SELECT grp, eb, 1, rn, ep FROM parts WHERE sb <> eb
    UNION ALL
    SELECT grp, sb, 1, rn, sp FROM parts WHERE sb <> eb
    UNION ALL
    SELECT grp, UNNEST(range(sb + 1, eb)) AS bin, 1, rn, 1.0 FROM parts WHERE eb > sb + 1
),
summed AS (
    SELECT grp, bin, list_reduce(list(v ORDER BY phase, rn), (a, b) -> a + b) AS v
    FROM added WHERE bin >= 0 AND bin < bins
    GROUP BY grp, bin
),
session AS (
    SELECT CAST(floor(s0) AS BIGINT) AS sb0, CAST(floor(e0) AS BIGINT) AS eb0,
           least(ceil(s0), e0) - s0 AS sp0, e0 - greatest(floor(e0), s0) AS ep0
    FROM (SELECT session_offset / bin_size AS s0, max_duration / bin_size AS e0)
),
grid AS (
    SELECT g.grp, b.bin FROM (SELECT DISTINCT grp FROM query_table(groups)) AS g
    CROSS JOIN (SELECT UNNEST(range(bins)) AS bin) AS b
),
rectified AS (
    SELECT grid.grp, grid.bin,
           CASE WHEN grid.bin < se.sb0 OR grid.bin > se.eb0 THEN NULL
                ELSE COALESCE(su.v, 0.0)
                     / CASE WHEN grid.bin = se.sb0 AND se.sp0 <> 0 THEN se.sp0 ELSE 1.0 END
                     / CASE WHEN grid.bin = se.eb0 AND se.ep0 <> 0 AND se.sb0 <> se.eb0 THEN se.ep0 ELSE 1.0 END
           END AS v
    FROM grid CROSS JOIN session AS se
    LEFT JOIN summed AS su ON su.grp = grid.grp AND su.bin = grid.bin
)
SELECT grp, bin, round_even(v * 100 * 10, 0) / 10 AS pct FROM rectified;
