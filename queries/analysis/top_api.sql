-- nsysql: analysis.top_api v1
-- purpose: CUDA runtime and driver API calls of the analysed steps by total time, synchronizing calls marked.
-- requires: analysis.steady_steps, analysis._steady_windows, runtime
-- params: none
-- notes: A call counts when it starts inside an analysed step on any thread of the step's process.
--   synchronizing: the call blocks the CPU until GPU work ends - by name (cudaDeviceSynchronize,
--   cudaStreamSynchronize, cudaEventSynchronize, cuCtxSynchronize, cuStreamSynchronize, cuEventSynchronize, and
--   the synchronous copies and sets cudaMemcpy, cudaMemcpy2D/3D, cudaMemset, cudaMemset2D/3D, cuMemcpy*,
--   cuMemset* without Async) or because CUPTI recorded an event, stream or context synchronization for one of
--   its calls (the sync table; a `Stream wait sync` record is a GPU-side wait, cudaStreamWaitEvent, which does
--   not block the CPU). pct = share of the summed time of all those calls.
-- columns:
--   api_name | VARCHAR | text (nsys stats' short form, e.g. cudaLaunchKernel)
--   calls | BIGINT | count
--   total_ns | BIGINT | ns
--   avg_ns | DOUBLE | ns | 1
--   max_ns | BIGINT | ns
--   pct | DOUBLE | pct of API time in the analysed steps | 1
--   synchronizing | BOOLEAN | flag
WITH
bucket AS (SELECT MIN(bucket_ns) AS ns FROM _steady_windows),
blocking AS (  -- calls CUPTI recorded a CPU-blocking synchronization for
    SELECT DISTINCT pid, correlation_id FROM sync WHERE sync_type IN ('Event sync', 'Stream sync', 'Context sync')
),
calls AS (  -- calls starting in an analysed step (a hash join on the step's time buckets)
    SELECT r.api_short_name AS api_name, r.end_ns - r.start_ns AS dur, b.pid IS NOT NULL AS recorded
    FROM (SELECT *, start_ns // (SELECT ns FROM bucket) AS bucket FROM runtime) AS r
    JOIN _steady_windows AS w ON w.pid = r.pid AND w.bucket = r.bucket
    LEFT JOIN blocking AS b ON b.pid = r.pid AND b.correlation_id = r.correlation_id
    WHERE r.start_ns >= w.start_ns AND r.start_ns < w.end_ns
)
SELECT api_name, COUNT(*) AS calls, CAST(SUM(dur) AS BIGINT) AS total_ns, AVG(dur) AS avg_ns,
       CAST(MAX(dur) AS BIGINT) AS max_ns, 100.0 * SUM(dur) / NULLIF(SUM(SUM(dur)) OVER (), 0) AS pct,
       COALESCE(BOOL_OR(recorded), false) OR COALESCE(regexp_matches(api_name,
           '^(cudaDeviceSynchronize|cudaStreamSynchronize|cudaEventSynchronize|cuCtxSynchronize|cuStreamSynchronize|cuEventSynchronize|cudaMemcpy|cudaMemcpy[23]D|cudaMemset|cudaMemset[23]D|cuMemcpy[A-Za-z0-9]*|cuMemsetD[0-9A-Za-z]*)$')
         AND NOT contains(api_name, 'Async'), false) AS synchronizing
FROM calls GROUP BY api_name
ORDER BY total_ns DESC, api_name;
