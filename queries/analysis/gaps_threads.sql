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
call AS (  -- CUDA API (source 0) and OS runtime (1) calls of the threads in question, by id
    SELECT global_tid, start_ns, end_ns, runtime_id AS call_id, 0 AS source
    FROM runtime WHERE global_tid IN (SELECT global_tid FROM pair)
    UNION ALL
    SELECT global_tid, start_ns, end_ns, rowid, 1
    FROM osrt WHERE global_tid IN (SELECT global_tid FROM pair)
),
width AS (  -- per thread and device: time buckets as wide as its gaps' span / their count, so its gaps touch at most
            -- about 2 buckets each and each call meets only the gaps of its buckets (hash joins, no sort of the calls)
    SELECT global_tid, device_id, MIN(gap_start_ns) AS origin_ns,
           (MAX(gap_start_ns) - MIN(gap_start_ns)) // GREATEST((MAX(gap_end_ns) - MIN(gap_start_ns)) // COUNT(*), 1) AS last_bucket,
           GREATEST((MAX(gap_end_ns) - MIN(gap_start_ns)) // COUNT(*), 1) AS width_ns
    FROM pair
    GROUP BY global_tid, device_id
),
call_at AS MATERIALIZED (  -- each call per device of its thread, with the bucket of its start and of its last ns
    SELECT c.global_tid, c.source, w.device_id, c.start_ns, c.end_ns, c.call_id, w.last_bucket,
           (c.start_ns - w.origin_ns) // w.width_ns AS first_bucket, (c.end_ns - 1 - w.origin_ns) // w.width_ns AS end_bucket
    FROM call AS c JOIN width AS w USING (global_tid)
),
call_bucket AS (  -- a call under every bucket it covers within the thread's gap starts (most calls: one)
    SELECT global_tid, source, device_id, start_ns, end_ns, call_id, first_bucket AS bucket
    FROM call_at WHERE end_ns > start_ns
    UNION ALL
    SELECT global_tid, source, device_id, start_ns, end_ns, call_id,
           unnest(range(GREATEST(first_bucket + 1, 0), LEAST(end_bucket, last_bucket) + 1))
    FROM call_at WHERE end_bucket > first_bucket
),
in_progress AS (  -- the call open at the gap's start (start <= gap start < end) that runs furthest into it
    SELECT device_id, gap_start_ns, global_tid, source, call_id, overlap_ns, 0 AS calls
    FROM (SELECT p.device_id, p.gap_start_ns, p.global_tid, c.source, arg_max(c.call_id, (c.end_ns, c.call_id)) AS call_id,
                 LEAST(MAX(c.end_ns), p.gap_end_ns) - p.gap_start_ns AS overlap_ns
          FROM (SELECT p.*, (p.gap_start_ns - w.origin_ns) // w.width_ns AS bucket
                FROM pair AS p JOIN width AS w USING (global_tid, device_id)) AS p
          JOIN call_bucket AS c ON c.global_tid = p.global_tid AND c.device_id = p.device_id AND c.bucket = p.bucket
          WHERE c.start_ns <= p.gap_start_ns AND c.end_ns > p.gap_start_ns
          GROUP BY p.device_id, p.gap_start_ns, p.gap_end_ns, p.global_tid, c.source)
    WHERE overlap_ns > 0
),
gap_bucket AS (  -- a gap under every bucket it touches
    SELECT p.global_tid, p.device_id, p.gap_start_ns, p.gap_end_ns,
           unnest(range((p.gap_start_ns - w.origin_ns) // w.width_ns, (p.gap_end_ns - w.origin_ns) // w.width_ns + 1)) AS bucket
    FROM pair AS p JOIN width AS w USING (global_tid, device_id)
),
started AS (  -- per gap, thread and call source: the calls starting inside the gap (after its start, before its
              -- end) and the one overlapping it longest (equal overlaps: the higher id), as overlap * 2^64 + call id
              -- so that a plain maximum finds it (a product, not a shift: an edited export's overlap can be negative)
    SELECT device_id, gap_start_ns, global_tid, source, (longest & ((1::HUGEINT << 64) - 1))::BIGINT AS call_id,
           (longest >> 64)::BIGINT AS overlap_ns, calls
    FROM (SELECT g.device_id, g.gap_start_ns, c.global_tid, c.source, COUNT(*) AS calls,
                 MAX((LEAST(c.end_ns, g.gap_end_ns) - c.start_ns)::HUGEINT * 18446744073709551616 + c.call_id) AS longest
          FROM call_at AS c
          JOIN gap_bucket AS g ON g.global_tid = c.global_tid AND g.device_id = c.device_id AND g.bucket = c.first_bucket
          WHERE c.start_ns > g.gap_start_ns AND c.start_ns < g.gap_end_ns
          GROUP BY g.device_id, g.gap_start_ns, c.global_tid, c.source)
),
best AS (
    SELECT device_id, gap_start_ns, global_tid,
           arg_max(call_id, (overlap_ns, call_id)) FILTER (WHERE source = 0) AS cuda_id,
           MAX(overlap_ns) FILTER (WHERE source = 0) AS cuda_call_ns,
           COALESCE(SUM(calls) FILTER (WHERE source = 0), 0)::BIGINT AS cuda_calls_started,
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
