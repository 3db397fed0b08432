-- nsysql: analysis._cp_calls v4
-- purpose: The CUDA calls of the critical-path graph (docs/critical-path.md): every runtime and driver call of a process with steps, whether it waited for the GPU, and the op it waited for.
-- requires: analysis.steady_steps, runtime, gpu_op, macros.copy_is_sync, macros.is_sync_call
-- params: $lo_ns BIGINT default NULL, $hi_ns BIGINT default NULL (the window: only the rows overlapping [lo_ns, hi_ns], exactly the rows of the whole answer that overlap it; NULL: no bound on that side), $queue_min_ns BIGINT default 50000 (a kernel launch at least this long, inside which an op of its process ended, blocked on a full launch queue, ns)
-- notes: A call waits (wait_kind) when it is a synchronize call (cu(da)?(Device|Stream|Event|Ctx|Thread)Synchronize:
--   sync, macros.is_sync_call), a copy or set that blocked until its op ended (macros.copy_is_sync: blocking_copy), or a kernel launch
--   lasting at least $queue_min_ns (queue); and when the op of its process that ended last at or before the call's
--   end (the waited op; of several ending at that instant, the one that started last) ended after the call began.
--   Otherwise wait_kind is NULL: an ordinary call.
-- columns:
--   runtime_id | BIGINT | id
--   pid | BIGINT | id
--   global_tid | BIGINT | id
--   start_ns | BIGINT | ns timestamp
--   end_ns | BIGINT | ns timestamp
--   api | VARCHAR | text (api_short_name)
--   wait_kind | VARCHAR | text (sync, blocking_copy, queue; NULL: the call did not wait)
--   waited_kind | VARCHAR | text (op_kind of the waited op)
--   waited_id | BIGINT | id (op_id of the waited op)
--   waited_end_ns | BIGINT | ns timestamp
WITH
procs AS (SELECT DISTINCT pid FROM steady_steps),
calls AS (
    SELECT runtime_id, pid, global_tid, start_ns, end_ns, api_short_name AS api
    FROM runtime WHERE pid IN (SELECT pid FROM procs)
      AND ($lo_ns IS NULL OR end_ns >= $lo_ns) AND ($hi_ns IS NULL OR start_ns <= $hi_ns)
),
bounds AS (SELECT MIN(start_ns) AS lo, MAX(end_ns) AS hi FROM calls),  -- a waited op ends inside its call
own AS (  -- the op a call launched (the one ending last, for a call that launched several; ties by kind)
    SELECT runtime_id, arg_max(op_kind, (end_ns, op_kind)) AS op_kind, MAX(end_ns) AS op_end_ns
    FROM gpu_op WHERE runtime_id IS NOT NULL AND pid IN (SELECT pid FROM procs)
      AND (($lo_ns IS NULL AND $hi_ns IS NULL) OR runtime_id IN (SELECT runtime_id FROM calls))
    GROUP BY runtime_id
),
classed AS (
    SELECT c.*,
           CASE WHEN is_sync_call(c.api) THEN 'sync'
                WHEN o.op_kind IN ('memcpy', 'memset') AND copy_is_sync(c.api, c.end_ns, o.op_end_ns) THEN 'blocking_copy'
                WHEN o.op_kind IN ('kernel', 'graph') AND c.end_ns - c.start_ns >= $queue_min_ns THEN 'queue'
           END AS candidate
    FROM calls AS c LEFT JOIN own AS o USING (runtime_id)
),
ends AS (  -- one op per end time (the one that started last, then by kind and id): the same answer whatever the row order
    SELECT DISTINCT ON (pid, end_ns) pid, end_ns, op_kind, op_id
    FROM gpu_op WHERE pid IN (SELECT pid FROM procs) AND end_ns BETWEEN (SELECT lo FROM bounds) AND (SELECT hi FROM bounds)
    ORDER BY pid, end_ns, start_ns DESC, op_kind, op_id
),
waited AS (  -- the op of the process that ended last at or before the call's end, if it ended inside the call
    SELECT w.runtime_id, e.op_kind AS waited_kind, e.op_id AS waited_id, e.end_ns AS waited_end_ns
    FROM (SELECT runtime_id, pid, start_ns, end_ns FROM classed WHERE candidate IS NOT NULL) AS w
    ASOF JOIN ends AS e ON w.pid = e.pid AND w.end_ns >= e.end_ns
    WHERE e.end_ns > w.start_ns
)
SELECT c.runtime_id, c.pid, c.global_tid, c.start_ns, c.end_ns, c.api,
       CASE WHEN w.runtime_id IS NOT NULL THEN c.candidate END AS wait_kind,
       w.waited_kind, w.waited_id, w.waited_end_ns
FROM classed AS c LEFT JOIN waited AS w USING (runtime_id)
ORDER BY c.global_tid, c.start_ns, c.runtime_id;
