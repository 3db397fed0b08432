-- nsysql: analysis._step_busy v2
-- purpose: The busy intervals of analysis._process_busy inside each analysed step, clipped to the step, with the step's busy time before each: busy time inside any span of an analysed step without sweeping the whole capture's intervals.
-- requires: analysis.steady_steps, analysis._steady_windows, analysis._process_busy, macros.clip_to_steps
-- params: none
-- notes: An interval of the step's process counts where it overlaps the step (found by a hash join on time buckets,
--   analysis._steady_windows: each interval in every bucket it spans, each pair of interval and step once), clipped
--   to the step. Busy time inside [s, e] within step w = B(e) - B(s), B(t) = before_ns + LEAST(t, end_ns) - start_ns
--   of the step's last interval starting at or before t (0 when there is none): the same figure as
--   analysis._process_busy gives, since the clipped part is all that lies inside the step. A step is (pid, step):
--   steps are numbered per process. idx numbers the rows in (pid, step, start_ns) order, so a sweep in (pid, step,
--   time) order finds that interval as the running maximum of idx (macros.busy_in_step).
-- columns:
--   step | BIGINT | index (as in steady_steps, per process; only analysed steps)
--   pid | BIGINT | id
--   start_ns | BIGINT | ns timestamp (clipped to the step)
--   end_ns | BIGINT | ns timestamp (clipped to the step)
--   before_ns | BIGINT | ns (busy time of the step before start_ns)
--   idx | BIGINT | index (1, 2, ... in (step, start_ns) order)
WITH
busy AS (SELECT pid, start_ns, end_ns FROM _process_busy WHERE pid IN (SELECT pid FROM _steady_windows)),
clipped AS (  -- each interval clipped to each analysed step it overlaps (queries/macros/clip_to_steps.sql)
    SELECT step, pid, s AS start_ns, e AS end_ns FROM clip_to_steps(busy, _steady_windows)
)
SELECT step, pid, start_ns, end_ns,
       CAST(COALESCE(SUM(end_ns - start_ns) OVER (PARTITION BY pid, step ORDER BY start_ns
                                                  ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS BIGINT)
         AS before_ns,
       ROW_NUMBER() OVER (ORDER BY pid, step, start_ns) AS idx
FROM clipped
ORDER BY pid, step, start_ns;
