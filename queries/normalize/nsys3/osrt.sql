-- nsysql: normalize.nsys3.osrt v2
-- purpose: OS runtime library calls (OSRT_API: poll, read, ioctl, pthread_* ...); the zero-length OSRT start/finish markers (event classes 31, 32) are not calls and are left out, as nsys stats does.
-- requires: raw.OSRT_API, raw.StringIds
-- params: none
-- columns:
--   start_ns | BIGINT | ns
--   end_ns | BIGINT | ns
--   global_tid | BIGINT | id
--   pid | BIGINT | id
--   tid | BIGINT | id
--   api_name | VARCHAR | text
--   nesting_level | BIGINT | count
CREATE TABLE osrt AS
SELECT o.start AS start_ns,
       o."end" AS end_ns,
       o.globalTid AS global_tid,
       (o.globalTid >> 24) & 16777215 AS pid,
       o.globalTid & 16777215 AS tid,
       s.value AS api_name,
       o.nestingLevel AS nesting_level
FROM raw.OSRT_API AS o
LEFT JOIN raw.StringIds AS s ON s.id = o.nameId
WHERE o.eventClass NOT IN (31, 32);  -- no ORDER BY: readers order what they show (a sort of every row saved)
