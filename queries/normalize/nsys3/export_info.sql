-- nsysql: normalize.nsys3.export_info v1
-- purpose: Key/value facts about the export (META_DATA_EXPORT rows), e.g. EXPORT_SCHEMA_VERSION, EXPORT_PRODUCT_VERSION.
-- requires: raw.META_DATA_EXPORT
-- params: none
-- columns:
--   key | VARCHAR | text
--   value | VARCHAR | text
CREATE TABLE export_info AS
SELECT name AS key, value
FROM raw.META_DATA_EXPORT
ORDER BY key;
