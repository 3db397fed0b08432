-- nsysql: normalize.nsys3.osrt_int v2
-- purpose: OS runtime library calls (OSRT_API) as stored: the API name as an nsys_string ENUM (see name), the thread as recorded; the view osrt gives the name as text and unpacks pid and tid.
-- requires: raw.OSRT_API, name
-- params: none
-- storage-of: osrt (a copy of the Parquet dataset leaves this table out: those hold its rows)
-- notes: The zero-length OSRT start/finish markers (event classes 31, 32) are not calls and are left out, as nsys
--   stats does. A capture traced with osrt holds millions of these rows (8.0M at the 1.7M-kernel benchmark):
--   writing each row's name as text cost about 2 of the statement's 5-9 CPU s there (docs/performance.md,
--   2026-11-25, fifth session), an ENUM a small integer.
-- columns:
--   start_ns | BIGINT | ns
--   end_ns | BIGINT | ns
--   global_tid | BIGINT | id
--   api_name | ENUM | text
--   nesting_level | BIGINT | count
--   name_id | BIGINT | id (the StringIds id of the name: one name may have several, and NVIDIA's osrt_sum keeps a row per id)
CREATE TABLE osrt_int AS
SELECT o.start AS start_ns,
       o."end" AS end_ns,
       o.globalTid AS global_tid,
       s.name AS api_name,
       o.nestingLevel AS nesting_level,
       o.nameId AS name_id
FROM raw.OSRT_API AS o
LEFT JOIN name AS s ON s.name_id = o.nameId
WHERE o.eventClass NOT IN (31, 32);  -- no ORDER BY: readers order what they show (a sort of every row saved)
