-- nsysql: macros.clip_to_steps v1
-- purpose: Intervals cut to the analysed steps of their process: `clip_to_steps(intervals, windows)` reads the table or CTE named `intervals` (columns pid, start_ns, end_ns and any others, none named step, s, e or bucket) and `windows` (analysis._steady_windows) and returns one row per interval and analysed step it overlaps: the interval's columns, the step and the part inside it (s, e).
-- requires: none
-- params: none
-- notes: An interval [start, end) overlaps step w when start < w.end and end > w.start (a zero-length one lies
--   inside it); s = GREATEST(start, w.start), e = LEAST(end, w.end). Found by a hash join on (pid, time bucket)
--   (analysis._steady_windows): each interval under every bucket it spans (most span one: those skip the
--   generate_series), each pair of interval and step kept once, in the bucket where their overlap starts. No
--   range join. Callers leave out the processes without analysed steps first where that saves work.
--   analysis._step_busy, overview_gpus, findings.fp32_gemm and pageable_copy read it.
-- columns:
--   step | BIGINT | index (analysed step, per process)
--   s | BIGINT | ns timestamp (the interval's part inside the step: start)
--   e | BIGINT | ns timestamp (end)
CREATE OR REPLACE TEMP MACRO clip_to_steps(intervals, windows) AS TABLE
WITH
width AS (SELECT MIN(bucket_ns) AS ns FROM query_table(windows)),
cut AS (  -- each interval under the bucket(s) it spans
    SELECT i.*, i.start_ns // (SELECT ns FROM width) AS bucket
    FROM query_table(intervals) AS i
    WHERE i.start_ns // (SELECT ns FROM width) = (GREATEST(i.end_ns, i.start_ns + 1) - 1) // (SELECT ns FROM width)
    UNION ALL
    SELECT i.*, UNNEST(generate_series(i.start_ns // (SELECT ns FROM width),
                                       (GREATEST(i.end_ns, i.start_ns + 1) - 1) // (SELECT ns FROM width)))
    FROM query_table(intervals) AS i
    WHERE i.start_ns // (SELECT ns FROM width) <> (GREATEST(i.end_ns, i.start_ns + 1) - 1) // (SELECT ns FROM width)
)
SELECT c.* EXCLUDE (bucket), w.step, GREATEST(c.start_ns, w.start_ns) AS s, LEAST(c.end_ns, w.end_ns) AS e
FROM cut AS c
JOIN query_table(windows) AS w ON w.pid = c.pid AND w.bucket = c.bucket
WHERE c.start_ns < w.end_ns AND c.end_ns > w.start_ns
  AND c.bucket = GREATEST(c.start_ns, w.start_ns) // (SELECT ns FROM width);
