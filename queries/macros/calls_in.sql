-- nsysql: macros.calls_in v1
-- purpose: For each of a set of probe intervals on a thread, per call source: the thread's call overlapping it the longest and the calls starting inside it. `calls_in(probe, call)` reads the table or CTE named `probe` (columns id, tid, s, e: an interval from s to e on thread tid) and the one named `call` (columns tid, start_ns, end_ns, call_id, source) and returns one row per probe id and source that has any such call.
-- requires: none
-- params: none
-- notes: The longest overlap is LEAST(call end, e) - call start for a call starting inside (s < start < e), and
--   LEAST(call end, e) - s for one open at s (start <= s < end, only when positive); equal overlaps: the higher
--   call_id. started counts the calls with s < start < e.
--   Linear: calls meet probes through hash joins on time buckets per thread, as wide as its probes' span / their
--   count: a call open at a probe's start is looked up in the bucket of that start (a call under every bucket it
--   covers within the thread's probe starts), a call starting inside a probe in the buckets the probe touches; no
--   sort of the calls, no call-by-probe join. analysis.gaps and analysis.gaps_threads read it (through
--   macros.gap_context).
-- columns:
--   id | BIGINT | id (the probe's)
--   source | INTEGER | id (the call's source)
--   call_id | BIGINT | id (the call overlapping the probe longest)
--   overlap_ns | BIGINT | ns (its overlap with the probe)
--   started | BIGINT | count (calls of this source starting inside the probe)
CREATE OR REPLACE TEMP MACRO calls_in(probe, call) AS TABLE
WITH
width AS (  -- per thread: buckets as wide as its probes' span / their count (most probes touch 1-2 buckets)
    SELECT tid, MIN(s) AS origin_ns, GREATEST((MAX(e) - MIN(s)) // COUNT(*), 1) AS width_ns,
           (MAX(s) - MIN(s)) // GREATEST((MAX(e) - MIN(s)) // COUNT(*), 1) AS last_bucket
    FROM query_table(probe)
    GROUP BY tid
),
call_at AS MATERIALIZED (  -- each call of a probed thread, with the bucket of its start and of its last ns
    SELECT c.tid, c.source, c.start_ns, c.end_ns, c.call_id, w.last_bucket,
           (c.start_ns - w.origin_ns) // w.width_ns AS first_bucket,
           (c.end_ns - 1 - w.origin_ns) // w.width_ns AS end_bucket
    FROM query_table(call) AS c JOIN width AS w USING (tid)
),
call_bucket AS (  -- a call under every bucket it covers within the thread's probe starts (most calls: one)
    SELECT tid, source, start_ns, end_ns, call_id, first_bucket AS bucket
    FROM call_at WHERE end_ns > start_ns
    UNION ALL
    SELECT tid, source, start_ns, end_ns, call_id,
           unnest(range(GREATEST(first_bucket + 1, 0), LEAST(end_bucket, last_bucket) + 1))
    FROM call_at WHERE end_bucket > first_bucket
),
probe_at AS (
    SELECT p.id, p.tid, p.s, p.e, w.origin_ns, w.width_ns FROM query_table(probe) AS p JOIN width AS w USING (tid)
),
in_progress AS (  -- the call open at the probe's start (start <= s < end) that runs furthest into it
    SELECT id, source, call_id, overlap_ns, 0 AS calls
    FROM (SELECT p.id, c.source, arg_max(c.call_id, (c.end_ns, c.call_id)) AS call_id,
                 LEAST(MAX(c.end_ns), p.e) - p.s AS overlap_ns
          FROM (SELECT *, (s - origin_ns) // width_ns AS bucket FROM probe_at) AS p
          JOIN call_bucket AS c ON c.tid = p.tid AND c.bucket = p.bucket
          WHERE c.start_ns <= p.s AND c.end_ns > p.s
          GROUP BY p.id, p.s, p.e, c.source)
    WHERE overlap_ns > 0
),
probe_bucket AS (  -- a probe under every bucket it touches
    SELECT id, tid, s, e, unnest(range((s - origin_ns) // width_ns, (e - origin_ns) // width_ns + 1)) AS bucket
    FROM probe_at
),
started AS (  -- per probe and source: the calls starting inside it and the one overlapping it longest (equal
              -- overlaps: the higher id), as overlap * 2^64 + call id so that a plain maximum finds it (a product,
              -- not a shift: an edited export's overlap can be negative)
    SELECT id, source, (longest & ((1::HUGEINT << 64) - 1))::BIGINT AS call_id, (longest >> 64)::BIGINT AS overlap_ns,
           calls
    FROM (SELECT g.id, c.source, COUNT(*) AS calls,
                 MAX((LEAST(c.end_ns, g.e) - c.start_ns)::HUGEINT * 18446744073709551616 + c.call_id) AS longest
          FROM call_at AS c
          JOIN probe_bucket AS g ON g.tid = c.tid AND g.bucket = c.first_bucket
          WHERE c.start_ns > g.s AND c.start_ns < g.e
          GROUP BY g.id, c.source)
)
SELECT id, source, arg_max(call_id, (overlap_ns, call_id)) AS call_id, MAX(overlap_ns)::BIGINT AS overlap_ns,
       SUM(calls)::BIGINT AS started
FROM (SELECT * FROM in_progress UNION ALL SELECT * FROM started)
GROUP BY id, source;
