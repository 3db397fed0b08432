-- nsysql: analysis._steady_windows v1
-- purpose: The analysed steady-state windows of analysis.steady_steps cut into fixed time buckets, so that finding the analysed step holding a timestamp is a hash join on (pid, bucket) rather than a range or ASOF join.
-- requires: analysis.steady_steps
-- params: none
-- notes: bucket_ns = the smallest power of two at or above the median wall time of the analysed windows (at least
--   1024 ns), the same in every row: a window spans a few buckets and a bucket holds a few windows. One row per
--   analysed window and bucket it overlaps (buckets s // bucket_ns to (e - 1) // bucket_ns). Time t of process p is
--   in the analysed window w when w.pid = p, w.bucket = t // bucket_ns and w.start_ns <= t < w.end_ns; an interval
--   [a, b) overlapping w meets it in bucket GREATEST(a, w.start_ns) // bucket_ns.
-- columns:
--   step | BIGINT | index (as in `nsysql steps`, per process; 0 = the whole GPU activity when there are no steps)
--   pid | BIGINT | id
--   tid | BIGINT | id (the step's own thread)
--   start_ns | BIGINT | ns timestamp
--   end_ns | BIGINT | ns timestamp
--   wall_ns | BIGINT | ns
--   bucket | BIGINT | index (start of the bucket // bucket_ns)
--   bucket_ns | BIGINT | ns (bucket width)
WITH
win AS (
    SELECT step, pid, tid, start_ns, end_ns, wall_ns FROM steady_steps WHERE analysed AND end_ns > start_ns
),
width AS (
    SELECT CAST(2 ** GREATEST(CEIL(LOG2(GREATEST(MEDIAN(wall_ns), 1))), 10) AS BIGINT) AS bucket_ns FROM win
),
spans AS (
    SELECT w.*, x.bucket_ns, generate_series(w.start_ns // x.bucket_ns, (w.end_ns - 1) // x.bucket_ns) AS buckets
    FROM win AS w CROSS JOIN width AS x
)
SELECT step, pid, tid, start_ns, end_ns, wall_ns, UNNEST(buckets) AS bucket, bucket_ns
FROM spans
ORDER BY pid, bucket, start_ns;
