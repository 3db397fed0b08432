-- nsysql: analysis._process_busy v1
-- purpose: When each process's GPUs were busy: the busy intervals (gpu_busy) of the devices it ran GPU work on, merged across its devices, in time order, with the busy time before each (a prefix sum) and the end of the one before; idle time inside any time span of the process follows from it without an interval join.
-- requires: gpu_op, gpu_busy, macros.union_islands
-- params: none
-- notes: A process's devices are those its GPU ops (kernels, copies, sets) ran on; a device is busy while any op of
--   any process runs on it (gpu_busy). With one device, the usual case, the process's intervals are gpu_busy's for
--   that device; with several they are merged (overlapping or touching intervals joined), so a process is busy while
--   any of its devices is. Intervals of one process are disjoint and separated by idle time.
--   Busy time inside [s, e] = B(e) - B(s), where B(t) = before_ns + LEAST(t, end_ns) - start_ns of the last interval
--   starting at or before t (0 when there is none); a gap is [prev_end_ns, start_ns]. That interval is found without
--   a join per point: sort the points together with the intervals by (pid, time, intervals first) and take the
--   running maximum of idx (idx numbers all intervals in (pid, start_ns) order), then join on idx and pid.
-- columns:
--   pid | BIGINT | id
--   start_ns | BIGINT | ns timestamp
--   end_ns | BIGINT | ns timestamp
--   before_ns | BIGINT | ns (busy time of the process's devices before start_ns)
--   prev_end_ns | BIGINT | ns timestamp (end of the previous busy interval of the process; NULL for the first)
--   idx | BIGINT | index (1, 2, ... in (pid, start_ns) order: a sweep finds the last interval before t as MAX(idx))
WITH
devices AS (
    SELECT DISTINCT pid, device_id FROM gpu_op
),
single AS (  -- processes on one device (their intervals are the device's)
    SELECT pid, MIN(device_id) AS device_id FROM devices GROUP BY pid HAVING COUNT(*) = 1
),
several AS (  -- processes on several devices: their devices' intervals, to be merged
    SELECT d.pid AS grp, b.start_ns AS s, b.end_ns AS e
    FROM devices AS d JOIN gpu_busy AS b USING (device_id)
    WHERE d.pid NOT IN (SELECT pid FROM single)
),
intervals AS (
    SELECT s.pid, b.start_ns, b.end_ns FROM single AS s JOIN gpu_busy AS b USING (device_id)
    UNION ALL
    SELECT grp, s, e FROM union_islands(several)  -- queries/macros/union_islands.sql
)
SELECT pid, start_ns, end_ns,
       CAST(COALESCE(SUM(end_ns - start_ns) OVER (PARTITION BY pid ORDER BY start_ns
                                                  ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS BIGINT)
         AS before_ns,
       LAG(end_ns) OVER (PARTITION BY pid ORDER BY start_ns) AS prev_end_ns,
       ROW_NUMBER() OVER (ORDER BY pid, start_ns) AS idx
FROM intervals
ORDER BY pid, start_ns;
