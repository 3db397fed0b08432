-- nsysql: normalize.nsys3.runtime v2
-- purpose: CUDA runtime and driver API calls (CUPTI_ACTIVITY_KIND_RUNTIME) with names resolved and pid/tid unpacked.
-- requires: raw.CUPTI_ACTIVITY_KIND_RUNTIME, raw.StringIds
-- params: none
-- columns:
--   runtime_id | BIGINT | id (row order of the export)
--   start_ns | BIGINT | ns
--   end_ns | BIGINT | ns
--   global_tid | BIGINT | id
--   pid | BIGINT | id
--   tid | BIGINT | id
--   correlation_id | BIGINT | id (unique per process only)
--   api_name | VARCHAR | text (as recorded, e.g. cudaLaunchKernel_v7000)
--   api_short_name | VARCHAR | text (as nsys stats prints it: a 4-digit `_vNNNN` suffix dropped, e.g. cudaLaunchKernel; longer ones such as cudaLaunchKernelExC_v11060 kept)
--   return_value | BIGINT | code
CREATE TABLE runtime AS
SELECT r.rowid AS runtime_id,
       r.start AS start_ns,
       r."end" AS end_ns,
       r.globalTid AS global_tid,
       (r.globalTid >> 24) & 16777215 AS pid,
       r.globalTid & 16777215 AS tid,
       r.correlationId AS correlation_id,
       s.value AS api_name,
       s.short_value AS api_short_name,
       r.returnValue AS return_value
FROM raw.CUPTI_ACTIVITY_KIND_RUNTIME AS r
LEFT JOIN (  -- the suffix dropped once per name, not once per call
    SELECT id, value, regexp_replace(value, '_v[0-9]{4}$', '') AS short_value FROM raw.StringIds
) AS s ON s.id = r.nameId;  -- no ORDER BY: readers order what they show (a sort of every row saved)
