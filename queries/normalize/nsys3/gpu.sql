-- nsysql: normalize.nsys3.gpu v2
-- purpose: One row per GPU seen by the capture, with the per-SM limits that occupancy estimates need.
-- requires: raw.TARGET_INFO_GPU
-- params: none
-- columns:
--   device_id | BIGINT | id
--   gpu_name | VARCHAR | text
--   chip | VARCHAR | text
--   sm_count | BIGINT | count
--   memory_bytes | BIGINT | bytes
--   bus_location | VARCHAR | text
--   compute_major | BIGINT | count (compute capability, major)
--   compute_minor | BIGINT | count (compute capability, minor)
--   max_warps_per_sm | BIGINT | count
--   max_blocks_per_sm | BIGINT | count
--   max_registers_per_sm | BIGINT | count
--   max_shmem_per_sm | BIGINT | bytes
--   threads_per_warp | BIGINT | count
CREATE TABLE gpu AS
SELECT DISTINCT id AS device_id, name AS gpu_name, chipName AS chip, smCount AS sm_count,
       totalMemory AS memory_bytes, busLocation AS bus_location,
       computeMajor AS compute_major, computeMinor AS compute_minor,
       maxWarpsPerSm AS max_warps_per_sm, maxBlocksPerSm AS max_blocks_per_sm,
       maxRegistersPerSm AS max_registers_per_sm, maxShmemPerSm AS max_shmem_per_sm,
       threadsPerWarp AS threads_per_warp
FROM raw.TARGET_INFO_GPU
ORDER BY device_id;
