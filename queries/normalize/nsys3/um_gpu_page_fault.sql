-- nsysql: normalize.nsys3.um_gpu_page_fault v1
-- purpose: GPU page-fault groups on CUDA unified memory (CUDA_UM_GPU_PAGE_FAULT_EVENTS, from `nsys profile --cuda-um-gpu-page-faults=true`), one row per group of faults on one address.
-- requires: raw.CUDA_UM_GPU_PAGE_FAULT_EVENTS, raw.ENUM_CUDA_UNIF_MEM_ACCESS_TYPE
-- params: none
-- columns:
--   start_ns | BIGINT | ns
--   end_ns | BIGINT | ns
--   pid | BIGINT | id
--   device_id | BIGINT | id
--   address | BIGINT | address (virtual address of the faulting page)
--   faults | BIGINT | count (page faults in the group: numberOfPageFaults)
--   access_type | VARCHAR | text (Read, Write, Atomic, Prefetch ... as ENUM_CUDA_UNIF_MEM_ACCESS_TYPE labels it)
CREATE TABLE um_gpu_page_fault AS
SELECT f.start AS start_ns,
       f."end" AS end_ns,
       (f.globalPid >> 24) & 16777215 AS pid,
       f.deviceId AS device_id,
       f.address,
       f.numberOfPageFaults AS faults,
       COALESCE(a.label, 'Unknown') AS access_type
FROM raw.CUDA_UM_GPU_PAGE_FAULT_EVENTS AS f
LEFT JOIN raw.ENUM_CUDA_UNIF_MEM_ACCESS_TYPE AS a ON a.id = f.faultAccessType;
