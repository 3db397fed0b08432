-- nsysql: analysis._diff v1
-- purpose: Two exports side by side: count and time per name in A and in B and the change B - A, largest absolute change first.
-- requires: diff_a, diff_b (tables of name, count, total_ns: one side query, analysis._diff_ranges, diff_kernels or diff_layers, run on each export by nsysql.answers.diff)
-- params: none
-- notes: A name found on one side only has count 0 and time 0 on the other; delta_pct is NULL when A's time is 0.
-- optional: "ratio", ("a_count", "b_count")
-- text-min: "name" 30
-- unit-groups: ("a_ns", "b_ns", "delta_ns")
-- columns:
--   name | VARCHAR | text (range path, kernel name or base name, or layer)
--   a_count | BIGINT | count
--   b_count | BIGINT | count
--   a_ns | BIGINT | ns
--   b_ns | BIGINT | ns
--   delta_ns | BIGINT | ns (b_ns - a_ns)
--   delta_pct | DOUBLE | pct of a_ns | 1
--   ratio | DOUBLE | b_ns / a_ns | 3
WITH joined AS (
    SELECT COALESCE(a.name, b.name) AS name, COALESCE(a.count, 0) AS a_count, COALESCE(b.count, 0) AS b_count,
           COALESCE(a.total_ns, 0) AS a_ns, COALESCE(b.total_ns, 0) AS b_ns
    FROM diff_a AS a
    FULL OUTER JOIN diff_b AS b ON a.name IS NOT DISTINCT FROM b.name
)
SELECT name, a_count, b_count, a_ns, b_ns, b_ns - a_ns AS delta_ns,
       100.0 * (b_ns - a_ns) / NULLIF(a_ns, 0) AS delta_pct,
       b_ns / NULLIF(a_ns, 0) AS ratio
FROM joined
ORDER BY abs(b_ns - a_ns) DESC, name;
