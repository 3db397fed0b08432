-- nsysql: reports.nvtx_kern_sum v2
-- purpose: Kernel time grouped by enclosing NVTX range, launching process/thread and kernel name, identical to `nsys stats -r nvtx_kern_sum` (Nsight Systems 2025.3).
-- requires: kernel, runtime, nvtx_range, gpu_op_int, runtime_nvtx, nvtx_ancestor, nvtx_node, nvtx_name
-- params: none
-- notes: A kernel belongs to every range on its launching thread's stack when its CUDA API call ran (not only the innermost),
--   so nested ranges each count it. Kernels outside every range form rows with an empty range name and NVTX Inst 0.
--   Grouped on integers (a number per printed range name and style, the kernel name's ENUM code) and the texts
--   joined to the groups: grouping 5.6M kernel-range pairs by their strings took 10 CPU s at x220.
-- columns:
--   NVTX Range | VARCHAR | text (`<domain>:<text>`; empty = no range)
--   Style | VARCHAR | PushPop or StartEnd
--   PID | BIGINT | id
--   TID | BIGINT | id
--   NVTX Inst | BIGINT | count (range instances containing these kernels)
--   Kern Inst | BIGINT | count
--   Total Time (ns) | BIGINT | ns
--   Avg (ns) | DOUBLE | ns | 1
--   Med (ns) | DOUBLE | ns | 1
--   Min (ns) | BIGINT | ns
--   Max (ns) | BIGINT | ns
--   StdDev (ns) | DOUBLE | ns (sample standard deviation) | 1
--   Kernel Name | VARCHAR | text (demangled)
WITH
label AS (  -- one number per printed (range name, style); several names (processes, domains) may share one
    SELECT name_id, range_name, style, DENSE_RANK() OVER (ORDER BY range_name, style) AS label_id FROM nvtx_name
),
launched AS (  -- each kernel with its launching call (correlationId AND process), as gpu_op_int matched them
    SELECT op_id AS kernel_id, end_ns - start_ns AS dur, kernel_name, runtime_id,
           CASE WHEN runtime_id IS NOT NULL THEN pid END AS pid,
           CASE WHEN runtime_id IS NOT NULL THEN call_global_tid & 16777215 END AS tid
    FROM gpu_op_int
    WHERE op_kind = 'kernel'
),
combo AS (
    SELECT l.kernel_id, l.dur, l.kernel_name, l.pid, l.tid, r.range_id, lb.label_id
    FROM launched AS l
    LEFT JOIN runtime_nvtx AS rn ON rn.runtime_id = l.runtime_id
    LEFT JOIN nvtx_ancestor AS a ON a.range_id = rn.range_id
    LEFT JOIN nvtx_node AS r ON r.range_id = a.ancestor_id
    LEFT JOIN label AS lb ON lb.name_id = r.name_id
),
grouped AS (
    SELECT label_id, pid, tid, kernel_name,
           COUNT(DISTINCT range_id) AS nvtx_inst,
           COUNT(DISTINCT kernel_id) AS kern_inst,
           SUM(dur) AS total,
           AVG(dur) AS mean,
           MEDIAN(dur) AS med,
           MIN(dur) AS lo,
           MAX(dur) AS hi,
           COALESCE(STDDEV_SAMP(dur), 0.0) AS sd
    FROM combo
    GROUP BY label_id, pid, tid, kernel_name
)
SELECT t.range_name AS "NVTX Range",
       t.style AS "Style",
       g.pid AS "PID",
       g.tid AS "TID",
       g.nvtx_inst AS "NVTX Inst",
       g.kern_inst AS "Kern Inst",
       g.total AS "Total Time (ns)",
       g.mean AS "Avg (ns)",
       g.med AS "Med (ns)",
       g.lo AS "Min (ns)",
       g.hi AS "Max (ns)",
       g.sd AS "StdDev (ns)",
       CAST(g.kernel_name AS VARCHAR) AS "Kernel Name"
FROM grouped AS g
LEFT JOIN (SELECT DISTINCT label_id, range_name, style FROM label) AS t USING (label_id)
ORDER BY "NVTX Range" NULLS FIRST, "PID" NULLS FIRST, "TID" NULLS FIRST, "Total Time (ns)" DESC, "Style", "Kernel Name";
