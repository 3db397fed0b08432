-- nsysql: normalize.nsys3.runtime v4
-- purpose: CUDA runtime and driver API calls (CUPTI_ACTIVITY_KIND_RUNTIME) with names resolved and pid/tid unpacked. A view over runtime_int, whose names are ENUMs: the texts are cast back here.
-- requires: runtime_int
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
--   name_id | BIGINT | id (StringIds id of the name; one name may have several)
CREATE VIEW runtime AS
SELECT runtime_id, start_ns, end_ns, global_tid,
       (global_tid >> 24) & 16777215 AS pid,
       global_tid & 16777215 AS tid,
       correlation_id,
       CAST(api_name AS VARCHAR) AS api_name,
       CAST(api_short_name AS VARCHAR) AS api_short_name,
       return_value,
       name_id
FROM runtime_int;
