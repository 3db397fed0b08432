-- nsysql: macros.gap_context v1
-- purpose: What a thread was inside during each GPU idle gap: `gap_context(pair, runtime, osrt_call, nvtx_range, nvtx_ancestor, with_calls)` reads the table or CTE named `pair` (columns device_id, gap_start_ns, gap_end_ns, global_tid: a gap and a thread) and `osrt_call` (the OS runtime calls with their osrt_int rowid as call_id) and returns one row per pair where the thread had a call overlapping the gap or a user range open at its start, with the thread's CUDA API call and OS runtime call overlapping the gap the longest (with the overlap), the CUDA calls it started in the gap, and its innermost user NVTX range open at the gap's start with that range's path.
-- requires: macros.calls_in, macros.innermost_range_at
-- params: none
-- notes: The normalized tables are passed by name (`gap_context(pair, runtime, osrt_call, nvtx_range, nvtx_ancestor,
--   $with_calls)`), so it reads the caller's schema's; osrt has no id column and a macro cannot read a rowid, so the
--   caller passes `osrt_call` (osrt_int with its rowid as call_id). with_calls false: the call columns are
--   NULL and no call is read. User ranges are the ranges that are not op markers and end on their own thread;
--   range_path is the path of user range texts from the top down joined by '/'. has_call: a call overlapped the
--   gap (either source).
--   analysis.gaps (the thread that launched the op ending each gap) and analysis.gaps_threads (every thread of the
--   processes using the gap's GPU) read it.
-- columns:
--   device_id | BIGINT | id
--   gap_start_ns | BIGINT | ns timestamp
--   global_tid | BIGINT | id
--   cuda_call | VARCHAR | text (the CUDA API call overlapping the gap longest)
--   cuda_call_ns | BIGINT | ns (its overlap with the gap)
--   cuda_calls_started | BIGINT | count (CUDA calls started during the gap; NULL for none)
--   os_call | VARCHAR | text (the OS runtime call overlapping the gap longest)
--   os_call_ns | BIGINT | ns (its overlap with the gap)
--   has_call | BOOLEAN | flag
--   range_id | BIGINT | id (innermost user range open at the gap's start)
--   range_path | VARCHAR | text (its path)
CREATE OR REPLACE TEMP MACRO gap_context(pair, runtime, osrt_call, nvtx_range, nvtx_ancestor, with_calls) AS TABLE
WITH
probe AS MATERIALIZED (
    SELECT ROW_NUMBER() OVER () AS id, device_id, gap_start_ns,  -- any numbering: id only joins
           global_tid AS tid, gap_start_ns AS s, gap_end_ns AS e
    FROM query_table(pair)
),
call AS (  -- CUDA API (source 0) and OS runtime (1) calls of the threads in question, by id
    SELECT global_tid AS tid, start_ns, end_ns, runtime_id AS call_id, 0 AS source
    FROM query_table(runtime) WHERE with_calls AND global_tid IN (SELECT tid FROM probe)
    UNION ALL
    SELECT global_tid, start_ns, end_ns, call_id, 1
    FROM query_table(osrt_call) WHERE with_calls AND global_tid IN (SELECT tid FROM probe)
),
found AS (  -- per probe: its CUDA API (source 0) and OS runtime (1) call (queries/macros/calls_in.sql)
    SELECT id, MAX(call_id) FILTER (WHERE source = 0) AS cuda_id, MAX(overlap_ns) FILTER (WHERE source = 0) AS cuda_ns,
           MAX(started) FILTER (WHERE source = 0) AS cuda_started, MAX(call_id) FILTER (WHERE source = 1) AS os_id,
           MAX(overlap_ns) FILTER (WHERE source = 1) AS os_ns
    FROM calls_in(probe, call)
    GROUP BY id
),
user_ranges AS (
    SELECT range_id, global_tid AS tid, start_ns, end_ns
    FROM query_table(nvtx_range)
    WHERE NOT is_op_marker AND end_global_tid IS NULL AND global_tid IN (SELECT tid FROM probe)
),
point AS (SELECT id, tid, s AS t FROM probe),
range_at AS (SELECT * FROM innermost_range_at(point, user_ranges)),  -- queries/macros/innermost_range_at.sql
path AS (
    SELECT a.range_id, string_agg(r.text, '/' ORDER BY a.distance DESC) AS range_path
    FROM query_table(nvtx_ancestor) AS a
    JOIN query_table(nvtx_range) AS r ON r.range_id = a.ancestor_id
    WHERE NOT r.is_op_marker AND a.range_id IN (SELECT range_id FROM range_at)
    GROUP BY a.range_id
)
SELECT p.device_id, p.gap_start_ns, p.tid AS global_tid, rt.api_short_name AS cuda_call, c.cuda_ns AS cuda_call_ns,
       c.cuda_started AS cuda_calls_started, os.api_name AS os_call, c.os_ns AS os_call_ns,
       c.id IS NOT NULL AS has_call, a.range_id, pa.range_path
FROM found AS c
FULL JOIN range_at AS a ON a.id = c.id
JOIN probe AS p ON p.id = COALESCE(c.id, a.id)
LEFT JOIN (SELECT runtime_id, api_short_name FROM query_table(runtime)  -- only the calls found: a small build side
           WHERE runtime_id IN (SELECT cuda_id FROM found)) AS rt ON rt.runtime_id = c.cuda_id
LEFT JOIN (SELECT call_id, api_name FROM query_table(osrt_call) WHERE call_id IN (SELECT os_id FROM found)) AS os
       ON os.call_id = c.os_id
LEFT JOIN path AS pa ON pa.range_id = a.range_id;
