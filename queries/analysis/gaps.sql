-- nsysql: analysis.gaps v3
-- purpose: GPU idle gaps per device (no kernel, copy or set running), longest first, each with the op before and after it, the thread that launched the op ending it, and what that thread was inside during the gap: its innermost user NVTX range, longest CUDA API call and longest OS runtime call.
-- requires: kernel|memcpy|memset, macros.idle_gaps, macros.gap_context, macros.innermost_range_at, analysis.steady_steps, user_range, thread
-- params: $min_gap_ns BIGINT default 100000 (shortest gap reported, ns), $with_calls BOOLEAN default true (false: the cuda_call, cuda_call_ns, cuda_calls_started, os_call and os_call_ns columns are NULL, and the costly read of every call of the threads is skipped), $every BOOLEAN default false (true: every gap of the capture; false: only the gaps that start inside an analysed step, when the export has analysed steps)
-- notes: A gap lies between two consecutive busy intervals of a device (gpu_busy: the union of its kernels,
--   copies and sets), so the idle time before the first op and after the last one is not a gap.
--   The thread shown is the one whose CUDA call launched the op that ended the gap (correlationId AND process):
--   the GPU was waiting for its next piece of work from that thread. launch_offset_ns = that call's start -
--   gap start: positive when the work was only issued during the gap (the CPU was late: launch- or CPU-bound),
--   zero or negative when it was issued before the GPU went idle (the GPU waited on something else: a
--   dependency, an event, or the launch latency itself). analysis.gaps_threads shows every thread.
--   range_path: the thread's innermost user NVTX range (not an op marker) open at the gap's start, as the path of
--   user range texts from the top down joined by '/'. cuda_call / os_call: the thread's CUDA API call / OS runtime
--   call (osrt) overlapping the gap the longest, with the overlap in ns; cuda_calls_started: CUDA calls the thread
--   started during the gap. NULL where the export has no such data (e.g. captured without --trace=osrt).
--   step: the analysed step (analysis.steady_steps, its window on its clock) in which the gap starts, of the process
--   that launched the op ending it (or of any process, when that op has no launching call); NULL outside every
--   analysed step. step_thread_range: what that step's own thread (the thread whose ranges make the step) was
--   inside at the gap's middle - its innermost user range, as analysis.layers' path (the step range's own name
--   when no range inside it was open): what the CPU did while the GPU waited (`get_batch`, `dataloader`), where
--   range_path says what was open on the launching thread when the gap began.
--   The op ending a gap starts exactly at its end; of several, one with a launching call first, then by kind and id.
--   Linear: calls meet gaps through hash joins on time buckets (per thread, as wide as its gaps' span / their
--   count): a call open at a gap's start is looked up in the bucket of that start, a call starting inside a gap
--   in the buckets the gap touches; no sort of the calls, no call-by-gap join; one sweep per thread over its
--   user ranges.
-- columns:
--   device_id | BIGINT | id
--   gap_start_ns | BIGINT | ns timestamp
--   gap_end_ns | BIGINT | ns timestamp
--   gap_ns | BIGINT | ns
--   before_op | VARCHAR | text (the op that ended last before the gap)
--   after_op | VARCHAR | text (the op that ended the gap)
--   pid | BIGINT | id (thread that launched after_op)
--   tid | BIGINT | id
--   thread_name | VARCHAR | text
--   launch_api | VARCHAR | text (the call that launched after_op)
--   launch_offset_ns | BIGINT | ns (launch call start - gap start)
--   range_path | VARCHAR | text (innermost user NVTX range of the thread at the gap's start)
--   cuda_call | VARCHAR | text (the thread's CUDA API call overlapping the gap longest)
--   cuda_call_ns | BIGINT | ns (its overlap with the gap)
--   cuda_calls_started | BIGINT | count (CUDA calls the thread started during the gap)
--   os_call | VARCHAR | text (the thread's OS runtime call overlapping the gap longest)
--   os_call_ns | BIGINT | ns (its overlap with the gap)
--   step | BIGINT | index (the analysed step the gap starts in; NULL outside)
--   step_thread_range | VARCHAR | text (the step thread's innermost user range at the gap's middle)
WITH
step_window AS MATERIALIZED (  -- the analysed steps' windows, with the global id of each step's own thread
    SELECT w.step, w.pid, w.start_ns, w.end_ns, t.global_tid AS step_tid
    FROM steady_steps AS w LEFT JOIN thread AS t ON t.pid = w.pid AND t.tid = w.tid
    WHERE w.analysed AND w.step > 0
),
every_gap AS MATERIALIZED (SELECT * FROM idle_gaps(gpu_busy, $min_gap_ns)),  -- queries/macros/idle_gaps.sql
gap AS MATERIALIZED (
    SELECT * FROM every_gap AS g
    WHERE $every OR NOT EXISTS (SELECT 1 FROM step_window)
       OR EXISTS (SELECT 1 FROM step_window AS w WHERE g.gap_start_ns >= w.start_ns AND g.gap_start_ns < w.end_ns)
),
op_after AS MATERIALIZED (  -- the op ending the gap starts exactly at its end (of several: a launched one, by kind, id)
    SELECT g.device_id, g.gap_start_ns,
           first(a.op_name ORDER BY a.runtime_id IS NULL, a.op_kind, a.op_id) AS after_op,
           first(a.runtime_id ORDER BY a.runtime_id IS NULL, a.op_kind, a.op_id) AS after_runtime_id
    FROM gap AS g
    JOIN gpu_op AS a ON a.device_id = g.device_id AND a.start_ns = g.gap_end_ns
    GROUP BY g.device_id, g.gap_start_ns
),
op_before AS (  -- the op before it ends exactly at its start
    SELECT g.device_id, g.gap_start_ns, first(b.op_name ORDER BY b.op_kind, b.op_id) AS before_op
    FROM gap AS g
    JOIN gpu_op AS b ON b.device_id = g.device_id AND b.end_ns = g.gap_start_ns
    GROUP BY g.device_id, g.gap_start_ns
),
pair AS MATERIALIZED (  -- (gap, thread that launched the op ending it)
    SELECT g.device_id, g.gap_start_ns, g.gap_end_ns, rt.global_tid
    FROM gap AS g
    JOIN op_after AS o USING (device_id, gap_start_ns)
    JOIN runtime AS rt ON rt.runtime_id = o.after_runtime_id
),
osrt_call AS (  -- the calls with their row id (the view osrt has none): ties go to the later call
    SELECT rowid AS call_id, global_tid, start_ns, end_ns, CAST(api_name AS VARCHAR) AS api_name FROM osrt_int),
context AS (  -- each pair's calls and innermost user range (queries/macros/gap_context.sql)
    SELECT * FROM gap_context(pair, runtime, osrt_call, nvtx_range, nvtx_ancestor, $with_calls)
),
final AS (
    SELECT g.device_id, g.gap_start_ns, g.gap_end_ns, g.gap_ns, b.before_op, o.after_op, rt.pid, rt.tid,
           t.thread_name, rt.api_short_name AS launch_api, rt.start_ns - g.gap_start_ns AS launch_offset_ns,
           c.range_path, c.cuda_call, c.cuda_call_ns,
           CASE WHEN $with_calls THEN COALESCE(c.cuda_calls_started, 0) END AS cuda_calls_started, c.os_call, c.os_call_ns
    FROM gap AS g
    LEFT JOIN op_before AS b USING (device_id, gap_start_ns)
    LEFT JOIN op_after AS o USING (device_id, gap_start_ns)
    LEFT JOIN runtime AS rt ON rt.runtime_id = o.after_runtime_id
    LEFT JOIN thread AS t ON t.global_tid = rt.global_tid
    LEFT JOIN context AS c
           ON c.device_id = g.device_id AND c.gap_start_ns = g.gap_start_ns AND c.global_tid = rt.global_tid
),
in_step AS MATERIALIZED (  -- per gap: the analysed step it starts in (of the launching process, where known)
    SELECT f.device_id, f.gap_start_ns, arg_min(w.step, (w.pid IS DISTINCT FROM f.pid, w.pid)) AS step,
           arg_min(w.step_tid, (w.pid IS DISTINCT FROM f.pid, w.pid)) AS step_tid,
           (f.gap_start_ns + f.gap_end_ns) // 2 AS mid_ns
    FROM final AS f JOIN step_window AS w ON f.gap_start_ns >= w.start_ns AND f.gap_start_ns < w.end_ns
                                     AND (f.pid IS NULL OR w.pid = f.pid)
    GROUP BY f.device_id, f.gap_start_ns, f.gap_end_ns
),
point AS (SELECT ROW_NUMBER() OVER () AS id, device_id, gap_start_ns, step_tid AS tid, mid_ns AS t
          FROM in_step WHERE step_tid IS NOT NULL),
step_ranges AS (SELECT range_id, global_tid AS tid, start_ns, end_ns FROM user_range
                WHERE global_tid IN (SELECT tid FROM point)),
at_mid AS (  -- the step thread's innermost user range at the gap's middle (queries/macros/innermost_range_at.sql)
    SELECT p.device_id, p.gap_start_ns, u.layer AS step_thread_range
    FROM innermost_range_at(point, step_ranges) AS a
    JOIN point AS p ON p.id = a.id
    JOIN user_range AS u ON u.range_id = a.range_id
)
SELECT f.device_id, f.gap_start_ns, f.gap_end_ns, f.gap_ns, f.before_op, f.after_op, f.pid, f.tid, f.thread_name,
       f.launch_api, f.launch_offset_ns, f.range_path, f.cuda_call, CAST(f.cuda_call_ns AS BIGINT) AS cuda_call_ns,
       f.cuda_calls_started, f.os_call, CAST(f.os_call_ns AS BIGINT) AS os_call_ns, s.step, m.step_thread_range
FROM final AS f
LEFT JOIN in_step AS s USING (device_id, gap_start_ns)
LEFT JOIN at_mid AS m USING (device_id, gap_start_ns)
ORDER BY f.gap_ns DESC, f.device_id, f.gap_start_ns;
