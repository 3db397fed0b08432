-- nsysql: macros.launch_busy v1
-- purpose: CPU time in the launching calls and GPU busy time of groups of kernel launches: `launch_busy(launch)` reads the table or CTE named `launch` (columns grp BIGINT, kernel_start_ns, kernel_end_ns, runtime_id, api_ns: one kernel launch of group grp, as macros.kernel_launches gives them) and returns one row per group (grp, cpu_ns, gpu_busy_ns).
-- requires: macros.union_ns
-- params: none
-- notes: cpu_ns sums the launching calls' durations counting each call once (a CUDA graph launch runs several
--   kernels); gpu_busy_ns is the length of the union of the group's kernel intervals (macros.union_ns), over all
--   GPUs. analysis.overhead_by_kernel (a group per kernel name) and overhead_by_thread (per launching thread) read it.
-- columns:
--   grp | BIGINT | id
--   cpu_ns | HUGEINT | ns
--   gpu_busy_ns | HUGEINT | ns
CREATE OR REPLACE TEMP MACRO launch_busy(launch) AS TABLE
WITH
kernel_interval AS (SELECT grp, kernel_start_ns AS s, kernel_end_ns AS e FROM query_table(launch)),
call_time AS (  -- each launching call once
    SELECT grp, SUM(api_ns) AS cpu_ns FROM (SELECT DISTINCT grp, runtime_id, api_ns FROM query_table(launch)) GROUP BY grp
)
SELECT c.grp, c.cpu_ns, u.busy_ns AS gpu_busy_ns
FROM call_time AS c JOIN union_ns(kernel_interval) AS u USING (grp);  -- queries/macros/union_ns.sql
