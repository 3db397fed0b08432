-- nsysql: analysis.gaps_threads v2
-- purpose: For each GPU idle gap (as analysis.gaps), what every CPU thread of the processes using that GPU was inside: its innermost user NVTX range, longest overlapping CUDA API call and longest overlapping OS runtime call.
-- requires: kernel|memcpy|memset
-- params: $min_gap_ns BIGINT default 100000 (shortest gap reported, ns; the CLI takes --min-gap-us)
-- notes: Gaps as in analysis.gaps (between consecutive gpu_busy intervals of a device, at least $min_gap_ns).
--   Threads: those with CUDA API, OS runtime or NVTX activity in a process that ran ops on the gap's device;
--   a thread appears for a gap only when it had a range open at the gap's start or a call overlapping the gap.
--   launched_next: the thread's CUDA call launched the op that ended the gap (correlationId AND process).
--   range_path: the innermost user NVTX range (not an op marker) open at the gap's start, as the path of user
--   range texts from the top down joined by '/'. cuda_call / os_call: the CUDA API call / OS runtime call (osrt)
--   overlapping the gap the longest, with the overlap in ns; cuda_calls_started: CUDA calls started in the gap.
--   Linear in calls + gaps x threads: one sweep per thread over its calls and the gaps in time order (a running
--   maximum of call ends gives the call open at each gap's start; the last gap start before a call tells whether
--   it started inside a gap), and one sweep per thread over its user ranges; no call-by-gap or range-by-gap join.
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
busy AS (
    SELECT device_id, start_ns, end_ns, LAG(end_ns) OVER (PARTITION BY device_id ORDER BY start_ns) AS prev_end_ns
    FROM gpu_busy
),
gap AS MATERIALIZED (
    SELECT device_id, prev_end_ns AS gap_start_ns, start_ns AS gap_end_ns, start_ns - prev_end_ns AS gap_ns
    FROM busy
    WHERE prev_end_ns IS NOT NULL AND start_ns - prev_end_ns >= $min_gap_ns
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
call AS MATERIALIZED (  -- CUDA API (source 0) and OS runtime (1) calls of the threads in question, by id
    SELECT global_tid, start_ns, end_ns, runtime_id AS call_id, 0 AS source
    FROM runtime WHERE global_tid IN (SELECT global_tid FROM pair)
    UNION ALL
    SELECT global_tid, start_ns, end_ns, rowid, 1
    FROM osrt WHERE global_tid IN (SELECT global_tid FROM pair)
),
thread_device AS (
    SELECT DISTINCT global_tid, device_id FROM pair
),
call_sweep AS (  -- per thread, call source and device: the calls and the thread's gaps, in time order
    SELECT c.global_tid, c.source, d.device_id, c.start_ns AS ts, 0 AS kind, c.end_ns, c.call_id,
           NULL::BIGINT AS gap_end_ns
    FROM call AS c JOIN thread_device AS d USING (global_tid)
    UNION ALL
    SELECT p.global_tid, s.source, p.device_id, p.gap_start_ns, 1, NULL, NULL, p.gap_end_ns
    FROM pair AS p CROSS JOIN (VALUES (0), (1)) AS s(source)
),
call_swept AS (
    -- at a gap row: the call reaching furthest among those started so far, as (end * 2^64 | call id) so that one
    -- running maximum gives both (equal ends: the higher id; a product, not a shift: DuckDB refuses to shift the
    -- negative times of an edited export); at a call row: the end of the last gap started before it (gaps of one
    -- device never overlap, so their ends grow with their starts)
    SELECT *, MAX((end_ns::HUGEINT * 18446744073709551616) | call_id) OVER w AS reach, MAX(gap_end_ns) OVER w AS last_gap_end_ns
    FROM call_sweep
    WINDOW w AS (PARTITION BY global_tid, source, device_id ORDER BY ts, kind
                 ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
),
in_progress AS (  -- the call open at the gap's start that runs furthest into it
    SELECT device_id, ts AS gap_start_ns, global_tid, source, call_id, overlap_ns, false AS started_inside
    FROM (SELECT device_id, ts, global_tid, source, gap_end_ns, (reach & ((1::HUGEINT << 64) - 1))::BIGINT AS call_id,
                 LEAST((reach >> 64)::BIGINT, gap_end_ns) - ts AS overlap_ns
          FROM call_swept WHERE kind = 1 AND reach IS NOT NULL)
    WHERE overlap_ns > 0
),
started AS (  -- calls starting inside a gap (after its start, before its end), keyed by the gap's start
    SELECT s.device_id, p.gap_start_ns, s.global_tid, s.source, s.call_id, s.overlap_ns, true AS started_inside
    FROM (SELECT device_id, global_tid, source, call_id, last_gap_end_ns, LEAST(end_ns, last_gap_end_ns) - ts AS overlap_ns
          FROM call_swept WHERE kind = 0 AND ts < last_gap_end_ns) AS s
    JOIN pair AS p ON p.device_id = s.device_id AND p.global_tid = s.global_tid AND p.gap_end_ns = s.last_gap_end_ns
),
best AS (
    SELECT device_id, gap_start_ns, global_tid,
           arg_max(call_id, (overlap_ns, call_id)) FILTER (WHERE source = 0) AS cuda_id,
           MAX(overlap_ns) FILTER (WHERE source = 0) AS cuda_call_ns,
           COUNT(*) FILTER (WHERE source = 0 AND started_inside) AS cuda_calls_started,
           arg_max(call_id, (overlap_ns, call_id)) FILTER (WHERE source = 1) AS os_id,
           MAX(overlap_ns) FILTER (WHERE source = 1) AS os_call_ns
    FROM (SELECT * FROM in_progress UNION ALL SELECT * FROM started)
    GROUP BY device_id, gap_start_ns, global_tid
),
call_context AS (
    SELECT b.device_id, b.gap_start_ns, b.global_tid, rt.api_short_name AS cuda_call, b.cuda_call_ns,
           b.cuda_calls_started, os.api_name AS os_call, b.os_call_ns
    FROM best AS b
    LEFT JOIN runtime AS rt ON rt.runtime_id = b.cuda_id
    LEFT JOIN (SELECT rowid AS call_id, api_name FROM osrt) AS os ON os.call_id = b.os_id
),
user_ranges AS (
    SELECT range_id, global_tid, start_ns, end_ns
    FROM nvtx_range
    WHERE NOT is_op_marker AND end_global_tid IS NULL AND global_tid IN (SELECT global_tid FROM pair)
),
sweep AS (  -- +1 at user range starts, -1 at ends, and the gap starts as queries (ends first at equal times)
    SELECT global_tid, start_ns AS ts, 1 AS kind, -end_ns AS tiebreak, range_id, NULL AS device_id, 1 AS delta
    FROM user_ranges
    UNION ALL
    SELECT global_tid, end_ns, CASE WHEN end_ns = start_ns THEN 2 ELSE 0 END, -start_ns, range_id, NULL, -1
    FROM user_ranges
    UNION ALL
    SELECT global_tid, gap_start_ns, 3, device_id, NULL, device_id, 0 FROM pair
),
ordered AS (
    SELECT *, ROW_NUMBER() OVER w AS seq,
           SUM(delta) OVER (w ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS open_after
    FROM sweep
    WINDOW w AS (PARTITION BY global_tid ORDER BY ts, kind, tiebreak, range_id)
),
range_start AS (
    SELECT range_id, global_tid, seq, open_after - 1 AS depth FROM ordered WHERE delta = 1
),
range_at_gap AS (  -- innermost open user range: the latest start at depth (open ranges - 1)
    SELECT q.device_id, q.ts AS gap_start_ns, q.global_tid, s.range_id
    FROM (SELECT * FROM ordered WHERE kind = 3 AND open_after > 0) AS q
    ASOF JOIN range_start AS s ON s.global_tid = q.global_tid AND s.depth = q.open_after - 1 AND s.seq < q.seq
),
path AS (
    SELECT a.range_id, string_agg(r.text, '/' ORDER BY a.distance DESC) AS range_path
    FROM nvtx_ancestor AS a
    JOIN nvtx_range AS r ON r.range_id = a.ancestor_id
    WHERE NOT r.is_op_marker AND a.range_id IN (SELECT range_id FROM range_at_gap)
    GROUP BY a.range_id
),
final AS (
    SELECT g.device_id, g.gap_start_ns, g.gap_end_ns, g.gap_ns, (p.global_tid >> 24) & 16777215 AS pid,
           p.global_tid & 16777215 AS tid, t.thread_name, n.global_tid IS NOT NULL AS launched_next,
           pa.range_path, c.cuda_call, c.cuda_call_ns, COALESCE(c.cuda_calls_started, 0) AS cuda_calls_started,
           c.os_call, c.os_call_ns
    FROM pair AS p
    JOIN gap AS g ON g.device_id = p.device_id AND g.gap_start_ns = p.gap_start_ns
    LEFT JOIN thread AS t ON t.global_tid = p.global_tid
    LEFT JOIN next_launcher AS n
           ON n.device_id = p.device_id AND n.gap_start_ns = p.gap_start_ns AND n.global_tid = p.global_tid
    LEFT JOIN call_context AS c
           ON c.device_id = p.device_id AND c.gap_start_ns = p.gap_start_ns AND c.global_tid = p.global_tid
    LEFT JOIN range_at_gap AS r
           ON r.device_id = p.device_id AND r.gap_start_ns = p.gap_start_ns AND r.global_tid = p.global_tid
    LEFT JOIN path AS pa ON pa.range_id = r.range_id
    WHERE c.global_tid IS NOT NULL OR r.range_id IS NOT NULL
)
SELECT device_id, gap_start_ns, gap_end_ns, gap_ns, pid, tid, thread_name, launched_next, range_path, cuda_call,
       CAST(cuda_call_ns AS BIGINT) AS cuda_call_ns, cuda_calls_started, os_call, CAST(os_call_ns AS BIGINT) AS os_call_ns
FROM final
ORDER BY gap_ns DESC, device_id, gap_start_ns, pid, tid;
