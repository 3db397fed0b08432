-- nsysql: normalize.nsys3.osrt v4
-- purpose: OS runtime library calls (OSRT_API: poll, read, ioctl, pthread_* ...); the zero-length OSRT start/finish markers (event classes 31, 32) are not calls and are left out, as nsys stats does. A view over osrt_int, whose API names are ENUMs.
-- requires: osrt_int
-- params: none
-- columns:
--   start_ns | BIGINT | ns
--   end_ns | BIGINT | ns
--   global_tid | BIGINT | id
--   pid | BIGINT | id
--   tid | BIGINT | id
--   api_name | VARCHAR | text
--   nesting_level | BIGINT | count
--   name_id | BIGINT | id (StringIds id of the name; one name may have several)
CREATE VIEW osrt AS
SELECT start_ns, end_ns, global_tid,
       (global_tid >> 24) & 16777215 AS pid,
       global_tid & 16777215 AS tid,
       CAST(api_name AS VARCHAR) AS api_name,
       nesting_level,
       name_id
FROM osrt_int;
