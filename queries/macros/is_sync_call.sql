-- nsysql: macros.is_sync_call v1
-- purpose: Whether a CUDA call synchronizes the host with the GPU by its name: `is_sync_call(api_short_name)` is true for cudaDeviceSynchronize, cudaStreamSynchronize, cudaEventSynchronize, cudaCtxSynchronize, cudaThreadSynchronize and their driver forms (cuCtxSynchronize, ...).
-- requires: none
-- params: none
-- notes: A scalar macro: read by findings.sync_in_step and analysis._cp_calls. A cheap test first: the regex then
--   sees only the names that contain `Synchronize`.
-- columns:
--   is_sync_call | BOOLEAN | flag
CREATE OR REPLACE TEMP MACRO is_sync_call(api_short_name) AS
    contains(api_short_name, 'Synchronize')
    AND regexp_matches(api_short_name, '^cu(da)?(Device|Stream|Event|Ctx|Thread)Synchronize');
