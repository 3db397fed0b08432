-- nsysql: normalize.nsys3.openmp_event v1
-- purpose: OpenMP events traced by `nsys profile --trace=openmp` (through OMPT), one row per event, from the OPENMP_EVENT_KIND_<KIND> table of each kind.
-- requires: raw.OPENMP_EVENT_KIND_THREAD, raw.OPENMP_EVENT_KIND_PARALLEL, raw.OPENMP_EVENT_KIND_SYNC_REGION_WAIT,
--   raw.OPENMP_EVENT_KIND_SYNC_REGION, raw.OPENMP_EVENT_KIND_TASK, raw.OPENMP_EVENT_KIND_MASTER,
--   raw.OPENMP_EVENT_KIND_REDUCTION, raw.OPENMP_EVENT_KIND_TASK_CREATE, raw.OPENMP_EVENT_KIND_TASK_SCHEDULE,
--   raw.OPENMP_EVENT_KIND_CANCEL, raw.OPENMP_EVENT_KIND_MUTEX_WAIT, raw.OPENMP_EVENT_KIND_CRITICAL_SECTION,
--   raw.OPENMP_EVENT_KIND_MUTEX_RELEASED, raw.OPENMP_EVENT_KIND_LOCK_INIT,
--   raw.OPENMP_EVENT_KIND_LOCK_DESTROY, raw.OPENMP_EVENT_KIND_WORKSHARE, raw.OPENMP_EVENT_KIND_DISPATCH,
--   raw.OPENMP_EVENT_KIND_FLUSH, raw.StringIds
-- params: none
-- notes: The 18 tables of export schema 3.20.3 (Nsight Systems 2025.3), which NVIDIA's openmp_sum reads as every
--   table named OPENMP_EVENT_KIND_*. `kind` keeps the table a row came from: NVIDIA sums each table on its own,
--   so one name in two tables is two rows of openmp_sum.
-- columns:
--   kind | VARCHAR | text (the table's suffix: PARALLEL, WORKSHARE, SYNC_REGION, TASK ...)
--   source_row | BIGINT | id (the row's rowid in its table)
--   start_ns | BIGINT | ns
--   end_ns | BIGINT | ns
--   global_tid | BIGINT | id
--   pid | BIGINT | id
--   tid | BIGINT | id
--   name_id | BIGINT | id (StringIds id of the name)
--   name | VARCHAR | text
CREATE TABLE openmp_event AS
WITH events AS (
    SELECT 'THREAD' AS kind, rowid AS source_row, start, "end", globalTid, nameId FROM raw.OPENMP_EVENT_KIND_THREAD
    UNION ALL
    SELECT 'PARALLEL', rowid, start, "end", globalTid, nameId FROM raw.OPENMP_EVENT_KIND_PARALLEL
    UNION ALL
    SELECT 'SYNC_REGION_WAIT', rowid, start, "end", globalTid, nameId FROM raw.OPENMP_EVENT_KIND_SYNC_REGION_WAIT
    UNION ALL
    SELECT 'SYNC_REGION', rowid, start, "end", globalTid, nameId FROM raw.OPENMP_EVENT_KIND_SYNC_REGION
    UNION ALL
    SELECT 'TASK', rowid, start, "end", globalTid, nameId FROM raw.OPENMP_EVENT_KIND_TASK
    UNION ALL
    SELECT 'MASTER', rowid, start, "end", globalTid, nameId FROM raw.OPENMP_EVENT_KIND_MASTER
    UNION ALL
    SELECT 'REDUCTION', rowid, start, "end", globalTid, nameId FROM raw.OPENMP_EVENT_KIND_REDUCTION
    UNION ALL
    SELECT 'TASK_CREATE', rowid, start, "end", globalTid, nameId FROM raw.OPENMP_EVENT_KIND_TASK_CREATE
    UNION ALL
    SELECT 'TASK_SCHEDULE', rowid, start, "end", globalTid, nameId FROM raw.OPENMP_EVENT_KIND_TASK_SCHEDULE
    UNION ALL
    SELECT 'CANCEL', rowid, start, "end", globalTid, nameId FROM raw.OPENMP_EVENT_KIND_CANCEL
    UNION ALL
    SELECT 'MUTEX_WAIT', rowid, start, "end", globalTid, nameId FROM raw.OPENMP_EVENT_KIND_MUTEX_WAIT
    UNION ALL
    SELECT 'CRITICAL_SECTION', rowid, start, "end", globalTid, nameId FROM raw.OPENMP_EVENT_KIND_CRITICAL_SECTION
    UNION ALL
    SELECT 'MUTEX_RELEASED', rowid, start, "end", globalTid, nameId FROM raw.OPENMP_EVENT_KIND_MUTEX_RELEASED
    UNION ALL
    SELECT 'LOCK_INIT', rowid, start, "end", globalTid, nameId FROM raw.OPENMP_EVENT_KIND_LOCK_INIT
    UNION ALL
    SELECT 'LOCK_DESTROY', rowid, start, "end", globalTid, nameId FROM raw.OPENMP_EVENT_KIND_LOCK_DESTROY
    UNION ALL
    SELECT 'WORKSHARE', rowid, start, "end", globalTid, nameId FROM raw.OPENMP_EVENT_KIND_WORKSHARE
    UNION ALL
    SELECT 'DISPATCH', rowid, start, "end", globalTid, nameId FROM raw.OPENMP_EVENT_KIND_DISPATCH
    UNION ALL
    SELECT 'FLUSH', rowid, start, "end", globalTid, nameId FROM raw.OPENMP_EVENT_KIND_FLUSH
)
SELECT e.kind,
       e.source_row,
       e.start AS start_ns,
       e."end" AS end_ns,
       e.globalTid AS global_tid,
       (e.globalTid >> 24) & 16777215 AS pid,
       e.globalTid & 16777215 AS tid,
       e.nameId AS name_id,
       s.value AS name
FROM events AS e
LEFT JOIN raw.StringIds AS s ON s.id = e.nameId;  -- no ORDER BY: readers order what they show
