-- nsysql: macros.thread_names v1
-- purpose: One name per thread: `thread_names(thread)` returns one row per (pid, tid) of the table named `thread` (the normalized thread table) with its name (the least, when nsys recorded several).
-- requires: none
-- params: none
-- notes: The findings join it by (pid, tid) to name the threads they point at (macros.thread_label).
-- columns:
--   pid | BIGINT | id
--   tid | BIGINT | id
--   thread_name | VARCHAR | text
CREATE OR REPLACE TEMP MACRO thread_names(thread) AS TABLE
SELECT pid, tid, MIN(thread_name) AS thread_name FROM query_table(thread) GROUP BY pid, tid;
