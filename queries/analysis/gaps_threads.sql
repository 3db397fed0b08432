-- nsysql: analysis.gaps_threads v3
-- purpose: For each GPU idle gap (as analysis.gaps), what every CPU thread of the processes using that GPU was inside: its innermost user NVTX range, longest overlapping CUDA API call and longest overlapping OS runtime call.
-- requires: kernel|memcpy|memset, macros.idle_gaps, macros.gap_context, analysis.steady_steps
-- params: $min_gap_ns BIGINT default 100000 (shortest gap reported, ns; the CLI takes --min-gap-us), $every BOOLEAN default false (true: every gap of the capture; false: only the gaps that start inside an analysed step, as analysis.gaps)
-- notes: Gaps as in analysis.gaps (between consecutive gpu_busy intervals of a device, at least $min_gap_ns).
--   Threads: those with CUDA API, OS runtime or NVTX activity in a process that ran ops on the gap's device;
--   a thread appears for a gap only when it had a range open at the gap's start or a call overlapping the gap.
--   launched_next: the thread's CUDA call launched the op that ended the gap (correlationId AND process).
--   range_path: the innermost user NVTX range (not an op marker) open at the gap's start, as the path of user
--   range texts from the top down joined by '/'. cuda_call / os_call: the CUDA API call / OS runtime call (osrt)
--   overlapping the gap the longest, with the overlap in ns; cuda_calls_started: CUDA calls started in the gap.
--   Linear: calls meet gaps through hash joins on time buckets (per thread, as wide as its gaps' span / their
--   count): a call open at a gap's start is looked up in the bucket of that start, a call starting inside a gap
--   in the buckets the gap touches; no sort of the calls, no call-by-gap join; one sweep per thread over its
--   user ranges.
-- columns:
--   device_id | BIGINT | id
--   gap_start_ns | BIGINT | ns timestamp
--   gap_end_ns | BIGINT | ns timestamp
--   gap_ns | BIGINT | ns
--   pid | BIGINT | id
--   tid | BIGINT | id
--   thread_name | VARCHAR | text
--   launched_next | BOOLEAN | flag (this thread launched the op that ended the gap)
--   range_path | VARCHAR | text (innermost user NVTX range at the gap's start)
--   cuda_call | VARCHAR | text (CUDA API call overlapping the gap longest)
--   cuda_call_ns | BIGINT | ns (its overlap with the gap)
--   cuda_calls_started | BIGINT | count (CUDA calls started during the gap)
--   os_call | VARCHAR | text (OS runtime call overlapping the gap longest)
--   os_call_ns | BIGINT | ns (its overlap with the gap)
WITH
step_window AS MATERIALIZED (SELECT start_ns, end_ns FROM steady_steps WHERE analysed AND step > 0),
gap AS MATERIALIZED (  -- queries/macros/idle_gaps.sql; in the analysed steps unless $every, as analysis.gaps
    SELECT * FROM idle_gaps(gpu_busy, $min_gap_ns) AS g
    WHERE $every OR NOT EXISTS (SELECT 1 FROM step_window)
       OR EXISTS (SELECT 1 FROM step_window AS w WHERE g.gap_start_ns >= w.start_ns AND g.gap_start_ns < w.end_ns)
),
next_launcher AS (  -- the thread whose call launched the op ending the gap (it starts exactly at the gap's end)
    SELECT n.device_id, n.gap_start_ns, rt.global_tid
    FROM (SELECT g.device_id, g.gap_start_ns, first(a.runtime_id ORDER BY a.runtime_id IS NULL, a.op_kind, a.op_id) AS runtime_id
          FROM gap AS g
          JOIN gpu_op AS a ON a.device_id = g.device_id AND a.start_ns = g.gap_end_ns
          GROUP BY g.device_id, g.gap_start_ns) AS n
    JOIN runtime AS rt ON rt.runtime_id = n.runtime_id
),
active_thread AS (
    SELECT DISTINCT global_tid, pid
    FROM (SELECT global_tid, pid FROM runtime UNION ALL SELECT global_tid, pid FROM osrt
          UNION ALL SELECT global_tid, pid FROM nvtx_range)
),
pair AS MATERIALIZED (  -- (gap, thread of a process that used the gap's device)
    SELECT g.device_id, g.gap_start_ns, g.gap_end_ns, t.global_tid
    FROM gap AS g
    JOIN (SELECT DISTINCT device_id, pid FROM gpu_op) AS d ON d.device_id = g.device_id
    JOIN active_thread AS t ON t.pid = d.pid
),
osrt_call AS (  -- the calls with their row id (the view osrt has none): ties go to the later call
    SELECT rowid AS call_id, global_tid, start_ns, end_ns, CAST(api_name AS VARCHAR) AS api_name FROM osrt_int),
context AS (  -- each pair's calls and innermost user range (queries/macros/gap_context.sql)
    SELECT * FROM gap_context(pair, runtime, osrt_call, nvtx_range, nvtx_ancestor, true)
),
final AS (
    SELECT g.device_id, g.gap_start_ns, g.gap_end_ns, g.gap_ns, (c.global_tid >> 24) & 16777215 AS pid,
           c.global_tid & 16777215 AS tid, t.thread_name, n.global_tid IS NOT NULL AS launched_next,
           c.range_path, c.cuda_call, c.cuda_call_ns, COALESCE(c.cuda_calls_started, 0) AS cuda_calls_started,
           c.os_call, c.os_call_ns
    FROM context AS c  -- one row per pair
    JOIN gap AS g ON g.device_id = c.device_id AND g.gap_start_ns = c.gap_start_ns
    LEFT JOIN thread AS t ON t.global_tid = c.global_tid
    LEFT JOIN next_launcher AS n
           ON n.device_id = c.device_id AND n.gap_start_ns = c.gap_start_ns AND n.global_tid = c.global_tid
    WHERE c.has_call OR c.range_id IS NOT NULL
)
SELECT device_id, gap_start_ns, gap_end_ns, gap_ns, pid, tid, thread_name, launched_next, range_path, cuda_call,
       CAST(cuda_call_ns AS BIGINT) AS cuda_call_ns, cuda_calls_started, os_call, CAST(os_call_ns AS BIGINT) AS os_call_ns
FROM final
ORDER BY gap_ns DESC, device_id, gap_start_ns, pid, tid;
