-- nsysql: macros.thread_label v1
-- purpose: A thread as a finding's `where` names it: `thread_label(thread_name, tid)` is `name (tid)`, `? (tid)` when the export names no thread.
-- requires: none
-- params: none
-- notes: A scalar macro (inlined where it is called), with macros.thread_names for the name: findings
--   dataloader_wait, gpu_idle_in_step, launch_bound, outlier_step, pageable_copy and sync_in_step read it.
-- columns:
--   thread_label | VARCHAR | text
CREATE OR REPLACE TEMP MACRO thread_label(thread_name, tid) AS COALESCE(thread_name, '?') || ' (' || tid || ')';
