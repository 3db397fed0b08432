-- nsysql: normalize.nsys3.thread v2
-- purpose: Threads with their process and names. pid/tid are unpacked from nsys's serialized globalTid: pid = (globalTid >> 24) & 0xFFFFFF, tid = globalTid & 0xFFFFFF.
-- requires: raw.ThreadNames, raw.PROCESSES, raw.StringIds
-- params: none
-- columns:
--   global_tid | BIGINT | id
--   pid | BIGINT | id
--   tid | BIGINT | id
--   thread_name | VARCHAR | text
--   process_name | VARCHAR | text
--   priority | BIGINT | number (the thread's scheduling priority as ThreadNames records it)
CREATE TABLE thread AS
WITH named AS (
    SELECT t.globalTid AS global_tid, MIN(s.value) AS thread_name, MIN(t.priority) AS priority
    FROM raw.ThreadNames AS t
    LEFT JOIN raw.StringIds AS s ON s.id = t.nameId
    GROUP BY t.globalTid
)
SELECT n.global_tid,
       (n.global_tid >> 24) & 16777215 AS pid,
       n.global_tid & 16777215 AS tid,
       n.thread_name,
       p.name AS process_name,
       n.priority
FROM named AS n
LEFT JOIN (SELECT pid, MIN(name) AS name FROM raw.PROCESSES GROUP BY pid) AS p
       ON p.pid = (n.global_tid >> 24) & 16777215
ORDER BY n.global_tid;
