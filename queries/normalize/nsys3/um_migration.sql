-- nsysql: normalize.nsys3.um_migration v1
-- purpose: Unified-memory migrations: the CUPTI_ACTIVITY_KIND_MEMCPY rows of the unified kinds (copyKind 11, 12, 13), with the virtual address they moved.
-- requires: raw.CUPTI_ACTIVITY_KIND_MEMCPY, raw.ENUM_CUDA_UNIF_MEM_MIGRATION
-- params: none
-- notes: These rows are also in `memcpy` (copy kind `Unified Host-to-Device` ...); this table adds virtualAddress
--   and the migration cause, which only unified-memory copies have.
-- columns:
--   memcpy_id | BIGINT | id (the row's memcpy_id in memcpy)
--   start_ns | BIGINT | ns
--   end_ns | BIGINT | ns
--   device_id | BIGINT | id
--   pid | BIGINT | id
--   bytes | BIGINT | bytes
--   direction | VARCHAR | text (HtoD, DtoH or DtoD)
--   virtual_address | BIGINT | address (base virtual address of the pages moved)
--   migration_cause | VARCHAR | text (as ENUM_CUDA_UNIF_MEM_MIGRATION labels it; NULL when the export lacks the column)
CREATE TABLE um_migration AS
SELECT m.rowid AS memcpy_id,
       m.start AS start_ns,
       m."end" AS end_ns,
       m.deviceId AS device_id,
       (m.globalPid >> 24) & 16777215 AS pid,
       m.bytes,
       CASE m.copyKind WHEN 11 THEN 'HtoD' WHEN 12 THEN 'DtoH' ELSE 'DtoD' END AS direction,
       m.virtualAddress AS virtual_address,
       c.label AS migration_cause
FROM (SELECT * FROM raw.CUPTI_ACTIVITY_KIND_MEMCPY  -- virtualAddress, migrationCause: NULL in exports without them
      UNION ALL BY NAME SELECT CAST(NULL AS BIGINT) AS virtualAddress, CAST(NULL AS BIGINT) AS migrationCause
      WHERE false) AS m
LEFT JOIN raw.ENUM_CUDA_UNIF_MEM_MIGRATION AS c ON c.id = m.migrationCause
WHERE m.copyKind IN (11, 12, 13)
ORDER BY memcpy_id;
