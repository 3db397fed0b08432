-- nsysql: normalize.nsys3.runtime_int v2
-- purpose: CUDA runtime and driver API calls (CUPTI_ACTIVITY_KIND_RUNTIME) as stored: names as nsys_string ENUMs (see name); the view runtime gives them as text and unpacks pid and tid.
-- requires: raw.CUPTI_ACTIVITY_KIND_RUNTIME, name
-- params: none
-- storage-of: runtime (a copy of the Parquet dataset leaves this table out: those hold its rows)
-- columns:
--   runtime_id | BIGINT | id (row order of the export)
--   start_ns | BIGINT | ns
--   end_ns | BIGINT | ns
--   global_tid | BIGINT | id
--   correlation_id | BIGINT | id (unique per process only)
--   api_name | ENUM | text (as recorded, e.g. cudaLaunchKernel_v7000)
--   api_short_name | ENUM | text (a 4-digit `_vNNNN` suffix dropped)
--   return_value | BIGINT | code
--   name_id | BIGINT | id (the StringIds id of the name: an export may hold one name under several ids, and NVIDIA's cuda_api_sum keeps a row per id)
CREATE TABLE runtime_int AS
SELECT r.rowid AS runtime_id,
       r.start AS start_ns,
       r."end" AS end_ns,
       r.globalTid AS global_tid,
       r.correlationId AS correlation_id,
       s.name AS api_name,
       s.short_name AS api_short_name,
       r.returnValue AS return_value,
       r.nameId AS name_id
FROM raw.CUPTI_ACTIVITY_KIND_RUNTIME AS r
LEFT JOIN name AS s ON s.name_id = r.nameId;  -- no ORDER BY: readers order what they show (a sort of every row saved)
