-- nsysql: normalize.nsys3.syscall v1
-- purpose: System calls (SYSCALL, from the experimental `nsys profile --syscall=process-tree` of Nsight Systems 2025.3): one row per call, with its name.
-- requires: raw.SYSCALL, raw.StringIds
-- params: none
-- columns:
--   start_ns | BIGINT | ns
--   end_ns | BIGINT | ns
--   global_tid | BIGINT | id
--   pid | BIGINT | id
--   tid | BIGINT | id
--   syscall_name | VARCHAR | text (futex, ioctl, read ...)
--   event_class | BIGINT | id (107 for a system call, the only class 2025.3 writes and syscall_sum reads)
CREATE TABLE syscall AS
SELECT s.start AS start_ns,
       s."end" AS end_ns,
       s.globalTid AS global_tid,
       (s.globalTid >> 24) & 16777215 AS pid,
       s.globalTid & 16777215 AS tid,
       n.value AS syscall_name,
       s.eventClass AS event_class
FROM raw.SYSCALL AS s
LEFT JOIN raw.StringIds AS n ON n.id = s.nameId;  -- no ORDER BY: readers order what they show
