-- nsysql: recipes._pace_people v1
-- purpose: The instances of a pacing recipe as nsysql shows them to people: each with its start since the (earliest) session start, duration, delta and whether either is an outlier of its report.
-- requires: none
-- params: none
-- notes: Reads `pace_instance` (rank, iteration, name, start_ns, end_ns, duration_ns, delta_ns: the aligned rows
--   of every report, nsysql/answers/recipes.py). Outliers by Tukey's fences per report: below Q1 - 1.5 IQR or above
--   Q3 + 1.5 IQR of its instances (linearly interpolated quartiles): `long`/`short` for the duration, `late`/`early`
--   for the delta. The first instance's delta counts from the session's start, so it is neither judged nor counted.
-- columns:
--   rank | BIGINT | index (NVIDIA's: the report's place in name order)
--   iteration | BIGINT | index (0-based)
--   start_ns | BIGINT | ns (since the earliest session start)
--   duration_ns | BIGINT | ns
--   delta_ns | BIGINT | ns (since the previous instance's end)
--   outlier | VARCHAR | text (long, short, late, early)
WITH
fences AS (
    SELECT rank,
           quantile_cont(duration_ns, 0.25) AS d1, quantile_cont(duration_ns, 0.75) AS d3,
           quantile_cont(delta_ns, 0.25) FILTER (WHERE iteration > 0) AS g1,
           quantile_cont(delta_ns, 0.75) FILTER (WHERE iteration > 0) AS g3
    FROM pace_instance
    GROUP BY rank
),
flagged AS (
    SELECT p.rank, p.iteration, p.start_ns, p.duration_ns, p.delta_ns,
           CASE WHEN p.duration_ns > f.d3 + 1.5 * (f.d3 - f.d1) THEN 'long'
                WHEN p.duration_ns < f.d1 - 1.5 * (f.d3 - f.d1) THEN 'short' END AS by_duration,
           CASE WHEN p.iteration = 0 THEN NULL
                WHEN p.delta_ns > f.g3 + 1.5 * (f.g3 - f.g1) THEN 'late'
                WHEN p.delta_ns < f.g1 - 1.5 * (f.g3 - f.g1) THEN 'early' END AS by_delta
    FROM pace_instance AS p
    JOIN fences AS f USING (rank)
)
SELECT rank, iteration, CAST(start_ns AS BIGINT) AS start_ns, CAST(duration_ns AS BIGINT) AS duration_ns,
       CAST(delta_ns AS BIGINT) AS delta_ns, concat_ws(', ', by_duration, by_delta) AS outlier
FROM flagged
ORDER BY rank, iteration;
