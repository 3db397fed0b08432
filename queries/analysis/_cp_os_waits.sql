-- nsysql: analysis._cp_os_waits v3
-- purpose: Blocking OS-runtime waits of the critical-path graph (docs/critical-path.md), each with its waker: the other thread of the process whose CUDA or OS-runtime call ended last inside the wait.
-- requires: analysis.steady_steps, osrt, runtime
-- params: $lo_ns BIGINT default NULL, $hi_ns BIGINT default NULL (the window: only the rows overlapping [lo_ns, hi_ns], exactly the rows of the whole answer that overlap it; NULL: no bound on that side)
-- notes: Waits: pthread_cond_wait, pthread_cond_timedwait, pthread_join, pthread_mutex_lock,
--   pthread_mutex_timedlock, sem_wait, sem_timedwait, futex, outermost (nesting level 0), of a process with steps.
--   The waker event is the call of the same process ending last strictly before the wait's end; it counts when it
--   ended after the wait began on another thread, else waker_global_tid is NULL (the wait is then CPU time).
-- columns:
--   pid | BIGINT | id
--   global_tid | BIGINT | id
--   start_ns | BIGINT | ns timestamp
--   end_ns | BIGINT | ns timestamp
--   api | VARCHAR | text
--   waker_global_tid | BIGINT | id
--   waker_end_ns | BIGINT | ns timestamp
WITH
procs AS (SELECT DISTINCT pid FROM steady_steps),
waits AS (
    SELECT pid, global_tid, start_ns, end_ns, CAST(api_name AS VARCHAR) AS api
    FROM osrt
    WHERE pid IN (SELECT pid FROM procs) AND nesting_level = 0
      AND regexp_matches(api_name, '^(pthread_cond_(timed)?wait|pthread_join|pthread_mutex_(timed)?lock|sem_(timed)?wait|futex)$')
      AND ($lo_ns IS NULL OR end_ns >= $lo_ns) AND ($hi_ns IS NULL OR start_ns <= $hi_ns)
),
bounds AS (SELECT MIN(start_ns) AS lo, MAX(end_ns) AS hi FROM waits),  -- a waker ends inside its wait
events AS (  -- one event per end time (the lowest thread id): the same answer whatever the row order
    SELECT DISTINCT ON (pid, end_ns) pid, global_tid, end_ns FROM (
        SELECT pid, global_tid, end_ns FROM runtime WHERE pid IN (SELECT pid FROM procs)
        UNION ALL
        SELECT pid, global_tid, end_ns FROM osrt WHERE pid IN (SELECT pid FROM procs) AND nesting_level = 0)
    WHERE end_ns BETWEEN (SELECT lo FROM bounds) AND (SELECT hi FROM bounds)
    ORDER BY pid, end_ns, global_tid
)
SELECT w.pid, w.global_tid, w.start_ns, w.end_ns, w.api,
       CASE WHEN e.end_ns > w.start_ns AND e.global_tid <> w.global_tid THEN e.global_tid END AS waker_global_tid,
       CASE WHEN e.end_ns > w.start_ns AND e.global_tid <> w.global_tid THEN e.end_ns END AS waker_end_ns
FROM waits AS w ASOF LEFT JOIN events AS e ON e.pid = w.pid AND w.end_ns > e.end_ns
ORDER BY w.global_tid, w.start_ns;
