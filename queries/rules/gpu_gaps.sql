-- nsysql: rules.gpu_gaps v1
-- purpose: GPU idle gaps longer than a threshold, longest first, identical to `nsys analyze -r gpu_gaps` (Nsight Systems 2025.3).
-- requires: kernel|memcpy|memset
-- params: $gap BIGINT default 500 (report gaps longer than this many milliseconds), $rows BIGINT default 50 (rows shown, longest first; -1 for all)
-- notes: As NVIDIA: GPU operations are the kernels, memcpys and memsets with a start above 0, per (process, device); the k-th end in end order is paired with the (k+1)-th start in start order, and a gap is kept where the end is before that start and the difference is above the threshold (strictly, though NVIDIA's help says "equal to or greater"). The Context ID is the one of the operation that ends the gap's start. NVIDIA also folds in PROFILER_OVERHEAD rows named 'CUDA profiling overhead', 'CUDA profiling data flush overhead' or 'CUDA profiling stop overhead'; no Nsight Systems export we have holds rows of those names (2025.3 writes 'CUDA profiling data flush on ...'), so they are left out. NVIDIA's inner gap query also stops at `rows` gaps before ranking them, in SQLite's join order; with more gaps than `rows` it may therefore list other than the longest ones, while this lists the longest `rows` gaps (all fixtures have fewer).
-- optional: "Context ID", "Device ID", "PID"
-- columns:
--   Row# | BIGINT | rank
--   Duration (ns) | BIGINT | ns
--   Start (ns) | BIGINT | ns timestamp
--   PID | BIGINT | id
--   Device ID | BIGINT | id
--   Context ID | BIGINT | id
WITH ops AS (
    SELECT start_ns, end_ns, pid, device_id, context_id, 0 AS kind, kernel_id AS id FROM kernel WHERE start_ns > 0
    UNION ALL
    SELECT start_ns, end_ns, pid, device_id, context_id, 1, memcpy_id FROM memcpy WHERE start_ns > 0
    UNION ALL
    SELECT start_ns, end_ns, pid, device_id, context_id, 2, memset_id FROM memset WHERE start_ns > 0
),
starts AS (
    SELECT ROW_NUMBER() OVER (ORDER BY pid, device_id, start_ns, kind, id) AS k, start_ns, pid, device_id
    FROM ops
),
ends AS (
    SELECT ROW_NUMBER() OVER (ORDER BY pid, device_id, end_ns, kind, id) AS k, end_ns, pid, device_id, context_id
    FROM ops
),
gaps AS (
    SELECT s.start_ns - e.end_ns AS duration, e.end_ns AS gap_start, e.pid, e.device_id, e.context_id
    FROM starts AS s
    JOIN ends AS e ON s.k - 1 = e.k AND s.device_id = e.device_id AND s.pid = e.pid
    WHERE s.start_ns - e.end_ns > $gap * 1000000 AND e.end_ns < s.start_ns
)
SELECT ROW_NUMBER() OVER (ORDER BY duration DESC, gap_start) AS "Row#",
       duration AS "Duration (ns)",
       gap_start AS "Start (ns)",
       pid AS "PID",
       device_id AS "Device ID",
       context_id AS "Context ID"
FROM gaps
ORDER BY "Row#"
LIMIT (CASE WHEN $rows < 0 THEN NULL ELSE $rows END);
