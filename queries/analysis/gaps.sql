-- nsysql: analysis.gaps v2
-- purpose: GPU idle gaps per device (no kernel, copy or set running), longest first, each with the op before and after it, the thread that launched the op ending it, and what that thread was inside during the gap: its innermost user NVTX range, longest CUDA API call and longest OS runtime call.
-- requires: kernel|memcpy|memset, macros.idle_gaps, macros.gap_context
-- params: $min_gap_ns BIGINT default 100000 (shortest gap reported, ns), $with_calls BOOLEAN default true (false: the cuda_call, cuda_call_ns, cuda_calls_started, os_call and os_call_ns columns are NULL, and the costly read of every call of the threads is skipped)
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
WITH
gap AS MATERIALIZED (SELECT * FROM idle_gaps(gpu_busy, $min_gap_ns)),  -- queries/macros/idle_gaps.sql
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
)
SELECT device_id, gap_start_ns, gap_end_ns, gap_ns, before_op, after_op, pid, tid, thread_name, launch_api,
       launch_offset_ns, range_path, cuda_call, CAST(cuda_call_ns AS BIGINT) AS cuda_call_ns, cuda_calls_started,
       os_call, CAST(os_call_ns AS BIGINT) AS os_call_ns
FROM final
ORDER BY gap_ns DESC, device_id, gap_start_ns;
