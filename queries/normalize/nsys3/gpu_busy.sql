-- nsysql: normalize.nsys3.gpu_busy v1
-- purpose: Busy intervals of each GPU: the union of all its kernels, memcpys and memsets (overlapping ops merged), the basis of busy time, idle share and gaps.
-- requires: gpu_op
-- params: none
-- columns:
--   device_id | BIGINT | id
--   start_ns | BIGINT | ns
--   end_ns | BIGINT | ns
--   ops | BIGINT | count (ops merged into the interval)
CREATE TABLE gpu_busy AS
WITH reach AS (
    SELECT device_id, start_ns, end_ns,
           MAX(end_ns) OVER (PARTITION BY device_id ORDER BY start_ns, end_ns
                             ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reach
    FROM gpu_op
),
islands AS (
    SELECT device_id, start_ns, end_ns,
           SUM(CASE WHEN reach IS NULL OR start_ns > reach THEN 1 ELSE 0 END)
               OVER (PARTITION BY device_id ORDER BY start_ns, end_ns ROWS UNBOUNDED PRECEDING) AS island
    FROM reach
)
SELECT device_id, MIN(start_ns) AS start_ns, MAX(end_ns) AS end_ns, COUNT(*) AS ops
FROM islands
GROUP BY device_id, island
ORDER BY device_id, start_ns;
