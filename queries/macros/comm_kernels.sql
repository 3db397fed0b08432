-- nsysql: macros.comm_kernels v1
-- purpose: The communication kernels: `comm_kernels(kernel, runtime, runtime_nvtx, nvtx_ancestor, nvtx_range)` reads the table or CTE named `kernel` (columns kernel_id, kernel_name, pid, correlation_id) and returns the kernel_id of each kernel named like NCCL's (macros.is_nccl_name) or launched by a CUDA call made inside one of NCCL's own NVTX ranges.
-- requires: macros.is_nccl_name
-- params: none
-- notes: NCCL's ranges are those of the NVTX domain `NCCL` (ncclAllReduce, ncclGroupEnd, ...); a call is inside one when the range or
--   any of its ancestors (nvtx_ancestor) is NCCL's. A kernel's launching call is the runtime row of its process
--   with its correlation id. The normalized tables are passed by name, so it reads the caller's schema's.
--   analysis.comm and findings.exposed_comm read it; kernel attribution applies the same rule (direction comm in
--   normalize.nsys3._gpu_op_rules: the name test, and nvtx_context.in_nccl for the call's innermost range). The name test runs once per distinct name (OFFSET 0 keeps
--   DuckDB from pushing it into the scan, where it lower-cased every kernel's name: 0.9 of 1.0 CPU s of
--   exposed_comm at 1.7M kernels).
-- columns:
--   kernel_id | BIGINT | id
CREATE OR REPLACE TEMP MACRO comm_kernels(kernel, runtime, runtime_nvtx, nvtx_ancestor, nvtx_range) AS TABLE
WITH
nccl_call AS (  -- CUDA calls made inside one of NCCL's own NVTX ranges (by process and correlation id)
    SELECT c.pid, c.correlation_id
    FROM query_table(runtime) AS c
    WHERE c.runtime_id IN (SELECT rn.runtime_id FROM query_table(runtime_nvtx) AS rn
                           JOIN query_table(nvtx_ancestor) AS a ON a.range_id = rn.range_id
                           WHERE a.ancestor_id IN (SELECT range_id FROM query_table(nvtx_range) WHERE domain = 'NCCL'))
)
SELECT k.kernel_id FROM query_table(kernel) AS k
WHERE k.kernel_name IN (SELECT n FROM (SELECT DISTINCT kernel_name AS n FROM query_table(kernel) OFFSET 0)
                        WHERE is_nccl_name(n))
UNION
SELECT k.kernel_id
FROM query_table(kernel) AS k JOIN nccl_call AS n ON n.pid = k.pid AND n.correlation_id = k.correlation_id;
