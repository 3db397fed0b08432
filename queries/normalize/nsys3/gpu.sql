-- nsysql: normalize.nsys3.gpu v1
-- purpose: One row per GPU seen by the capture.
-- requires: raw.TARGET_INFO_GPU
-- params: none
-- columns:
--   device_id | BIGINT | id
--   gpu_name | VARCHAR | text
--   chip | VARCHAR | text
--   sm_count | BIGINT | count
--   memory_bytes | BIGINT | bytes
--   bus_location | VARCHAR | text
CREATE TABLE gpu AS
SELECT DISTINCT id AS device_id, name AS gpu_name, chipName AS chip, smCount AS sm_count,
       totalMemory AS memory_bytes, busLocation AS bus_location
FROM raw.TARGET_INFO_GPU
ORDER BY device_id;
