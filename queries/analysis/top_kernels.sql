-- nsysql: analysis.top_kernels v1
-- purpose: Kernels of the analysed steps grouped by short name (nsys's shortName: no template or argument lists), with their share of kernel time.
-- requires: analysis.steady_steps, analysis._steady_windows, kernel
-- params: none
-- notes: A kernel counts when it starts inside an analysed step of its process; its whole duration counts.
--   pct = share of the summed duration of all those kernels. full_name is the demangled name of the
--   costliest kernel of the group (for csv/json; tables shorten it).
-- columns:
--   short_name | VARCHAR | text
--   calls | BIGINT | count
--   total_ns | BIGINT | ns
--   avg_ns | DOUBLE | ns | 1
--   pct | DOUBLE | pct of kernel time in the analysed steps | 1
--   full_name | VARCHAR | text
WITH
bucket AS (SELECT MIN(bucket_ns) AS ns FROM _steady_windows),
k AS (  -- kernels starting in an analysed step (a hash join on the step's time buckets)
    SELECT COALESCE(k.short_name, k.kernel_name) AS short_name, k.kernel_name, k.end_ns - k.start_ns AS dur
    FROM (SELECT *, start_ns // (SELECT ns FROM bucket) AS bucket FROM kernel) AS k
    JOIN _steady_windows AS w ON w.pid = k.pid AND w.bucket = k.bucket
    WHERE k.start_ns >= w.start_ns AND k.start_ns < w.end_ns
),
names AS (SELECT short_name, kernel_name, SUM(dur) AS ns FROM k GROUP BY ALL)
SELECT short_name, COUNT(*) AS calls, CAST(SUM(dur) AS BIGINT) AS total_ns, AVG(dur) AS avg_ns,
       100.0 * SUM(dur) / NULLIF(SUM(SUM(dur)) OVER (), 0) AS pct,
       (SELECT arg_max(n.kernel_name, n.ns) FROM names AS n WHERE n.short_name = k.short_name) AS full_name
FROM k GROUP BY short_name
ORDER BY total_ns DESC, short_name;
