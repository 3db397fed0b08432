-- nsysql: normalize.shims.v2_0_to_v3_15.meta_data_export v2
-- purpose: raw.META_DATA_EXPORT for exports that name the table EXPORT_META_DATA (export schema 2.x, e.g. Nsight Systems 2022.1's 2.9.1, and 3.0.0, Nsight Systems 2022.4), its export-parameter keys renamed as schema 3.20 names them (EXPORT_INPUT_FILE -> EXPORT_PARAM_INPUT_FILE, EXPORT_OUTUPT_PATH -> EXPORT_PARAM_OUTPUT_PATH ...); product and schema keys are the same in both.
-- requires: nsys.EXPORT_META_DATA
-- provides: raw.META_DATA_EXPORT
-- params: none
-- notes: A shim runs only for an export whose schema version lies in its folder's range (v2_0_to_v3_15: 2.0 to 3.15)
--   that has every table it reads and lacks the table it provides. The upper bound is a guess with margin: 2022.1 (2.9.1) and
--   2022.4 (3.0.0) are the versions tested; public scripts for 2024.6 exports (3.16.1) already read META_DATA_EXPORT.
-- columns:
--   rowid | BIGINT | id
--   name | VARCHAR | text
--   value | VARCHAR | text
CREATE VIEW raw.META_DATA_EXPORT AS
SELECT rowid AS rowid,
       CASE WHEN name IN ('EXPORT_INPUT_FILE', 'EXPORT_INPUT_PATH', 'EXPORT_INPUT_PATH_ABS', 'EXPORT_LAZY', 'EXPORT_OVERWRITE')
                THEN 'EXPORT_PARAM_' || substr(name, 8)
            WHEN starts_with(name, 'EXPORT_OUTUPT_')  -- sic: 2022.4 spells OUTPUT this way
                THEN 'EXPORT_PARAM_OUTPUT_' || substr(name, 15)
            ELSE name END AS name,
       value
FROM nsys.EXPORT_META_DATA;
