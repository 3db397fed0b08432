-- nsysql: analysis._cp_threads v1
-- purpose: Thread names for the critical-path graph (docs/critical-path.md): CPU work outside every range is named by its thread.
-- requires: analysis.steady_steps, thread
-- params: none
-- columns:
--   global_tid | BIGINT | id
--   thread_name | VARCHAR | text
SELECT global_tid, thread_name FROM thread
WHERE pid IN (SELECT DISTINCT pid FROM steady_steps) AND thread_name IS NOT NULL
ORDER BY global_tid;
