-- nsysql: rules.gpu_time_util v1
-- purpose: Stretches of low GPU utilization, lowest first, identical to `nsys analyze -r gpu_time_util` (Nsight Systems 2025.3).
-- requires: kernel|memcpy|memset
-- params: $threshold BIGINT default 50 (report chunks whose GPU use is below this percentage), $chunks BIGINT default 30 (equal-duration chunks the span of each process and device is cut into, 1 to 1000), $rows BIGINT default 50 (rows shown, lowest use first; -1 for all)
-- notes: As NVIDIA: GPU operations are the kernels, memcpys and memsets with a start above 0; per (process, device) the span [first start, last end] is cut into chunks of ceil(span / chunks) ns (the last one shorter), a chunk's use is the summed overlap of every operation with it (concurrent streams add up, so it can pass 100%), chunks below the threshold that follow each other are merged, and In-Use is their duration-weighted average rounded to 1 decimal. Ranked by In-Use, then duration. The Context ID is the one of the span's last-ending operation. NVIDIA also folds in PROFILER_OVERHEAD rows named 'CUDA profiling overhead', 'CUDA profiling data flush overhead' or 'CUDA profiling stop overhead'; no export we have holds rows of those names, so they are left out.
-- optional: "Context ID", "Device ID", "PID"
-- columns:
--   Row# | BIGINT | rank
--   In-Use (%) | DOUBLE | pct of the stretch's time | 1
--   Duration (ns) | BIGINT | ns
--   Start (ns) | BIGINT | ns timestamp
--   PID | BIGINT | id
--   Device ID | BIGINT | id
--   Context ID | BIGINT | id
WITH ops AS (
    SELECT start_ns, end_ns, pid, device_id, context_id FROM kernel WHERE start_ns > 0
    UNION ALL
    SELECT start_ns, end_ns, pid, device_id, context_id FROM memcpy WHERE start_ns > 0
    UNION ALL
    SELECT start_ns, end_ns, pid, device_id, context_id FROM memset WHERE start_ns > 0
),
span AS (
    SELECT pid, device_id,
           MIN(start_ns)::DOUBLE AS span_start,
           MAX(end_ns)::DOUBLE AS span_end,
           CEIL((MAX(end_ns) - MIN(start_ns))::DOUBLE / $chunks) AS chunk_size,
           ARG_MAX(context_id, end_ns) AS context_id
    FROM ops
    GROUP BY pid, device_id
),
chunk AS (
    SELECT r.range AS chunk_id, s.pid, s.device_id, s.context_id,
           r.range * s.chunk_size + s.span_start AS cstart,
           LEAST(r.range * s.chunk_size + s.span_start + s.chunk_size, s.span_end) AS cend
    FROM span AS s, range(GREATEST(LEAST($chunks, 1000), 0)) AS r
    WHERE r.range * s.chunk_size + s.span_start
          < LEAST(r.range * s.chunk_size + s.span_start + s.chunk_size, s.span_end)
),
chunk_use AS (
    SELECT c.chunk_id, c.pid, c.device_id, ANY_VALUE(c.context_id) AS context_id,
           c.cstart, c.cend, c.cend - c.cstart AS size,
           SUM(CASE WHEN o.start_ns IS NULL OR o.end_ns IS NULL THEN 0.0  -- no operation: 0 (LEAST/GREATEST skip NULLs)
                    ELSE LEAST(o.end_ns, c.cend) - GREATEST(o.start_ns, c.cstart) END)
               / (c.cend - c.cstart) * 100 AS pct
    FROM chunk AS c
    LEFT JOIN ops AS o
      ON o.device_id = c.device_id AND o.pid = c.pid AND o.start_ns < c.cend AND o.end_ns > c.cstart
    GROUP BY c.chunk_id, c.pid, c.device_id, c.cstart, c.cend
    HAVING pct < $threshold
),
grouped AS (
    SELECT *, chunk_id - ROW_NUMBER() OVER (PARTITION BY pid, device_id ORDER BY chunk_id) AS run_id
    FROM chunk_use
),
stretch AS (
    SELECT MIN(cstart) AS start_ns,
           MAX(cend) - MIN(cstart) AS duration,
           ROUND(SUM(size * pct) / SUM(size), 1) AS average,
           pid, device_id, ANY_VALUE(context_id) AS context_id
    FROM grouped
    GROUP BY run_id, device_id, pid
)
SELECT ROW_NUMBER() OVER (ORDER BY average, duration, start_ns, pid, device_id) AS "Row#",
       average AS "In-Use (%)",
       duration::BIGINT AS "Duration (ns)",
       start_ns::BIGINT AS "Start (ns)",
       pid AS "PID",
       device_id AS "Device ID",
       context_id AS "Context ID"
FROM stretch
ORDER BY "Row#"
LIMIT (CASE WHEN $rows < 0 THEN NULL ELSE $rows END);
