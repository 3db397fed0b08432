-- nsysql: normalize.nsys3.gpu_busy v1
-- purpose: Busy intervals of each GPU: the union of all its kernels, memcpys and memsets (overlapping ops merged), the basis of busy time, idle share and gaps.
-- requires: gpu_op, macros.union_islands
-- params: none
-- built: on first use (derived from gpu_op; read by gaps, utilization and the busy figures of summarize)
-- columns:
--   device_id | BIGINT | id
--   start_ns | BIGINT | ns
--   end_ns | BIGINT | ns
--   ops | BIGINT | count (ops merged into the interval)
CREATE TABLE gpu_busy AS
WITH op AS (SELECT device_id AS grp, start_ns AS s, end_ns AS e FROM gpu_op)
SELECT grp AS device_id, s AS start_ns, e AS end_ns, n AS ops
FROM union_islands(op)  -- queries/macros/union_islands.sql
ORDER BY device_id, start_ns;
