-- nsysql: macros.copy_is_sync v1
-- purpose: Whether a copy or set blocked its launching thread: `copy_is_sync(api_name, api_end_ns, op_end_ns)` is true for a synchronous copy/set API (cudaMemcpy*, cudaMemset*, cuMemcpy*, cuMemset* without Async in the name) or when the call returned only after the op ended, false otherwise (also without a launching call).
-- requires: none
-- params: none
-- notes: A scalar macro (inlined where it is called): analysis.memcpy, memcpy_by_stream, memcpy_by_range and
--   findings.sync_in_step read it.
-- columns:
--   copy_is_sync | BOOLEAN | flag
CREATE OR REPLACE TEMP MACRO copy_is_sync(api_name, api_end_ns, op_end_ns) AS
    COALESCE((regexp_matches(api_name, '^(cudaMemcpy|cudaMemset|cuMemcpy|cuMemset)')
              AND NOT contains(api_name, 'Async')) OR api_end_ns >= op_end_ns, false);
