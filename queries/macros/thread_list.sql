-- nsysql: macros.thread_list v1
-- purpose: The threads a process's calls ran on, in few words: `thread_list(calls, thread)` reads the table or CTE named `calls` (columns pid, tid) and returns one row per pid with `threads` (each thread once as macros.thread_label writes it, in name order, comma-separated) and `n`, how many.
-- requires: macros.thread_label, macros.thread_names
-- params: none
-- notes: findings.pageable_copy and findings.sync_in_step read it.
-- columns:
--   pid | BIGINT | id
--   threads | VARCHAR | text
--   n | BIGINT | count
CREATE OR REPLACE TEMP MACRO thread_list(calls, thread) AS TABLE
SELECT c.pid, string_agg(DISTINCT thread_label(t.thread_name, c.tid), ', '
                  ORDER BY thread_label(t.thread_name, c.tid)) AS threads,
       COUNT(DISTINCT c.tid) AS n
FROM query_table(calls) AS c
LEFT JOIN thread_names(thread) AS t ON t.pid = c.pid AND t.tid = c.tid
GROUP BY c.pid;
