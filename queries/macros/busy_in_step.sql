-- nsysql: macros.busy_in_step v2
-- purpose: Busy time of a process's GPUs inside each of a set of probe intervals that lie within analysed steps: `busy_in_step(probe, step_busy)` reads the table or CTE named `probe` (columns id, pid, step, s, e: one interval inside analysed step `step` of process `pid`, ws <= s <= e <= we) and returns one row per probe id with busy_ns, the part of [s, e] covered by the step's busy intervals (analysis._step_busy).
-- requires: none
-- params: none
-- notes: busy_ns = B(e) - B(s), B(t) = before_ns + LEAST(t, end_ns) - start_ns of the step's last busy interval
--   starting at or before t (0 when there is none). Steps are numbered per process, so (pid, step) names one. One
--   sweep over the probes' points and the steps' busy intervals in (pid, step, time) order finds that interval (the
--   running maximum of idx; an interval of an earlier step fails the join on (pid, step), which is the 0). It reads
--   only the busy intervals inside the analysed steps, not the whole capture's (macros.busy_inside, for probes that
--   may reach outside a step). A probe outside its step gets a wrong figure: the caller clips probes to their step.
-- columns:
--   id | BIGINT | id (the probe's)
--   busy_ns | HUGEINT | ns
CREATE OR REPLACE TEMP MACRO busy_in_step(probe, busy) AS TABLE
SELECT p.id, SUM(CASE WHEN p.side = 1 THEN 1 ELSE -1 END
                 * COALESCE(b.before_ns + LEAST(p.t, b.end_ns) - b.start_ns, 0)) AS busy_ns
FROM (SELECT *, MAX(idx) OVER (ORDER BY pid, step, t, kind) AS last_idx
      FROM (SELECT b.pid, b.step, b.start_ns AS t, 0 AS kind, b.idx, NULL::BIGINT AS id, NULL::INTEGER AS side
            FROM query_table(busy) AS b
            SEMI JOIN (SELECT DISTINCT pid, step FROM query_table(probe)) AS q ON q.pid = b.pid AND q.step = b.step
            UNION ALL SELECT pid, step, s, 1, NULL, id, 0 FROM query_table(probe)
            UNION ALL SELECT pid, step, e, 1, NULL, id, 1 FROM query_table(probe))) AS p
LEFT JOIN query_table(busy) AS b ON b.idx = p.last_idx AND b.pid = p.pid AND b.step = p.step
WHERE p.kind = 1
GROUP BY p.id;
