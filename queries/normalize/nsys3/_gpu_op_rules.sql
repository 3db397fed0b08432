-- nsysql: normalize.nsys3._gpu_op_rules v3
-- purpose: Rules 1-6 of gpu_op_attribution for every GPU op (what its own thread's ranges and PyTorch's markers say, and the range it borrows), with what rule 7 orders and compares them by; gpu_op_attribution adds rule 7 and is what readers read.
-- requires: gpu_op_int, runtime_nvtx, nvtx_range, nvtx_context, user_range, thread, macros.is_nccl_name
-- params: none
-- built: on first use (attribution's rules 1-6: the costliest part of a first open, which the NVIDIA reports never read)
-- storage-of: gpu_op_attribution (a copy of the Parquet dataset leaves this table out: that holds its rows)
-- notes: A statement of its own so that its working memory (every op's launch context, the rules' joins) is
--   freed before rule 7 numbers the ops: as one statement the two peaked at 1.56 GB on the 1.7M-kernel export,
--   as two at about 0.75 GB each (docs/performance.md). The rules are gpu_op_attribution's header's.
-- columns:
--   op_kind | ENUM | kernel, memcpy, memset or graph
--   kind_no | UTINYINT | id (op_kind's code)
--   op_id | BIGINT | id
--   global_tid | BIGINT | id (thread of the launching call)
--   call_start_ns | BIGINT | ns timestamp (start of the launching call)
--   what | UBIGINT | id (hash of kernel name and label: what ran)
--   direction | ENUM | fprop, bprop, optim, comm, other or recompute
--   layer_range_id | BIGINT | id (user range giving the layer; NULL = unknown)
--   op_range_id | BIGINT | id
--   eval_range_id | BIGINT | id
--   shapes_range_id | BIGINT | id
--   seq | BIGINT | id
--   link | ENUM | seq, annotated, rerun, own, borrowed or none
CREATE TABLE _gpu_op_rules AS
WITH
nccl_name AS (  -- kernel names like NCCL's, tested once per distinct name (OFFSET 0: not pushed into the scan)
    SELECT n FROM (SELECT DISTINCT kernel_name AS n FROM gpu_op_int WHERE op_kind = 'kernel' OFFSET 0)
    WHERE is_nccl_name(CAST(n AS VARCHAR))  -- queries/macros/is_nccl_name.sql
),
launch AS MATERIALIZED (  -- every GPU op with its launching call and that call's innermost range context
    SELECT o.op_kind, enum_code(o.op_kind) AS kind_no, o.op_id, o.runtime_id, o.call_global_tid AS global_tid,
           o.call_start_ns AS start_ns, o.call_end_ns AS end_ns,  -- the call, as gpu_op_int found it
           hash(o.kernel_name, o.label) AS what,  -- what ran, as one integer: rule 7 compares passes by it
           cx.user_range_id, cx.op_range_id, cx.eval_range_id, cx.annotated_range_id,
           COALESCE(cx.in_optim, false) AS in_optim, COALESCE(cx.in_backward, false) AS in_backward,
           o.op_kind = 'kernel' AND (COALESCE(cx.in_nccl, false) OR o.kernel_name IN (SELECT n FROM nccl_name))
             AS is_comm  -- macros.comm_kernels' rule: named like NCCL's, or launched inside an NCCL range
    FROM gpu_op_int AS o
    LEFT JOIN runtime_nvtx AS rn USING (runtime_id)
    LEFT JOIN nvtx_context AS cx ON cx.range_id = rn.range_id
),
marker AS MATERIALIZED (
    -- op markers that carry an autograd sequence number (string functions: regexes cost 5x here)
    SELECT r.range_id, r.pid, r.start_ns, r.parent_id, cx.user_range_id, cx.eval_range_id,
           TRY_CAST(split_part(split_part(r.text, ', seq = ', 2), ',', 1) AS BIGINT) AS seq
    FROM nvtx_range AS r JOIN nvtx_context AS cx USING (range_id)
    WHERE r.is_op_marker AND contains(r.text, ', seq = ')
),
eval_node AS (
    -- one backward node per evaluate_function marker, with the seq of its own marker (a direct child)
    SELECT e.range_id AS eval_range_id, e.pid, e.start_ns, n.seq
    FROM nvtx_range AS e
    LEFT JOIN (SELECT parent_id, MIN(seq) AS seq FROM marker WHERE parent_id = eval_range_id GROUP BY parent_id) AS n
      ON n.parent_id = e.range_id
    WHERE e.range_id IN (SELECT eval_range_id FROM launch)
),
linked AS (
    SELECT n.eval_range_id, n.seq, f.user_range_id AS fwd_user_range_id, f.range_id AS fwd_marker_id
    FROM eval_node AS n
    ASOF LEFT JOIN (SELECT pid, seq, start_ns, user_range_id, range_id FROM marker WHERE eval_range_id IS NULL) AS f
      ON f.pid = n.pid AND f.seq = n.seq AND f.start_ns <= n.start_ns
),
-- rule 3: an annotated backward range takes the layer of its module's latest forward range
annotated_backward AS MATERIALIZED (
    SELECT range_id, pid, start_ns, left(text, length(text) - 11) AS module  -- ' [backward]' cut
    FROM nvtx_range WHERE range_id IN (SELECT annotated_range_id FROM launch)
),
annotated AS (
    SELECT a.range_id AS annotated_range_id, f.range_id AS fwd_range_id
    FROM annotated_backward AS a
    ASOF LEFT JOIN (
        SELECT r.range_id, r.pid, r.start_ns, r.text AS module
        FROM nvtx_range AS r JOIN nvtx_context AS cx USING (range_id)
        WHERE cx.is_user AND NOT cx.in_backward  -- not a forward recomputed in backward (checkpointing)
          AND r.text IN (SELECT module FROM annotated_backward)
    ) AS f ON f.pid = a.pid AND f.module = a.module AND f.start_ns <= a.start_ns
),
-- activation checkpointing: a block's forward re-run in the backward, under its own ranges (rule 0)
fwd_named AS MATERIALIZED (  -- user ranges of the forward: not in a backward, not on an autograd thread
    SELECT u.range_id, u.pid, u.global_tid, u.start_ns, u.end_ns, u.layer, r.text
    FROM user_range AS u JOIN nvtx_range AS r USING (range_id) JOIN nvtx_context AS cx USING (range_id)
    LEFT JOIN thread AS th ON th.global_tid = u.global_tid
    WHERE NOT u.in_annotated AND NOT COALESCE(cx.in_backward, false)
      AND NOT COALESCE(th.thread_name LIKE 'pt_autograd_%', false)
),
recompute_range AS MATERIALIZED (  -- user ranges of the backward named like a forward range of the process on
    -- another thread: on an autograd thread or inside a backward range, neither annotated nor named backward
    SELECT u.range_id, u.user_parent_id, u.pid, u.global_tid, u.start_ns, u.end_ns, u.layer, r.text
    FROM user_range AS u JOIN nvtx_range AS r USING (range_id) JOIN nvtx_context AS cx USING (range_id)
    LEFT JOIN thread AS th ON th.global_tid = u.global_tid
    WHERE NOT u.in_annotated AND NOT u.is_step AND NOT contains(lower(r.text), 'backward')
      AND (COALESCE(th.thread_name LIKE 'pt_autograd_%', false) OR COALESCE(cx.in_backward, false))
      AND EXISTS (SELECT 1 FROM fwd_named AS f WHERE f.pid = u.pid AND f.text = r.text AND f.global_tid <> u.global_tid)
),
recompute_root AS (  -- a re-run block: a recompute range not inside another; numbered in its pass of re-runs
    -- (the re-runs of a name that follow the same number of forward ranges of that name: f)
    SELECT *, ROW_NUMBER() OVER (PARTITION BY pid, text, f ORDER BY start_ns, range_id) - 1 AS k,
           COUNT(*) OVER (PARTITION BY pid, text, f) AS g
    FROM (SELECT r.*, (SELECT COUNT(*) FROM fwd_named AS f
                       WHERE f.pid = r.pid AND f.text = r.text AND f.start_ns < r.start_ns) AS f
          FROM recompute_range AS r
          WHERE r.user_parent_id IS NULL OR r.user_parent_id NOT IN (SELECT range_id FROM recompute_range))
),
recompute_pass AS (  -- per pass: how many forward ranges of the name ran since the pass before (f_prev)
    SELECT pid, text, f, COALESCE(LAG(f) OVER (PARTITION BY pid, text ORDER BY f), 0) AS f_prev
    FROM (SELECT DISTINCT pid, text, f FROM recompute_root)
),
fwd_numbered AS (
    SELECT *, ROW_NUMBER() OVER (PARTITION BY pid, text ORDER BY start_ns, range_id) AS nth
    FROM fwd_named WHERE text IN (SELECT text FROM recompute_root)
),
recompute_match AS (  -- autograd re-runs blocks last first: the k-th re-run of a pass repeats forward range f - k,
    -- when the pass re-runs as many blocks as its forward ran (else unknown: no guess)
    SELECT r.range_id AS root_id, r.global_tid, r.start_ns, r.end_ns, r.layer AS root_layer,
           fw.range_id AS fwd_id, fw.start_ns AS fwd_start_ns, fw.end_ns AS fwd_end_ns, fw.layer AS fwd_layer
    FROM recompute_root AS r
    JOIN recompute_pass AS p USING (pid, text, f)
    LEFT JOIN fwd_numbered AS fw ON fw.pid = r.pid AND fw.text = r.text AND fw.nth = r.f - r.k
    WHERE r.g = r.f - p.f_prev
),
recompute_layer AS (  -- every recompute range: the forward range of the same sub-path in the block it repeats
    SELECT rr.range_id, COALESCE(
             (SELECT MIN(f.range_id) FROM fwd_named AS f
              WHERE f.pid = rr.pid AND f.start_ns >= m.fwd_start_ns AND f.start_ns <= m.fwd_end_ns
                AND f.layer = m.fwd_layer || substr(rr.layer, length(m.root_layer) + 1)),
             m.fwd_id) AS fwd_range_id
    FROM recompute_range AS rr
    JOIN recompute_match AS m
      ON m.global_tid = rr.global_tid AND rr.start_ns >= m.start_ns AND rr.end_ns <= m.end_ns
),
-- user ranges that count as a thread's own: not annotated backward ranges nor what they enclose, nor re-runs
own_user_range AS (
    SELECT * FROM user_range WHERE NOT in_annotated AND range_id NOT IN (SELECT range_id FROM recompute_range)
),
-- rule 5: calls outside every user range of their thread, on a thread without user ranges of its own or with
-- only re-runs (checkpointing's autograd thread), borrow the waiting thread's innermost open one
lone AS MATERIALIZED (
    SELECT runtime_id, (global_tid >> 24) & 16777215 AS pid, start_ns, end_ns
    FROM launch  -- a graph launch repeats its call: see borrowed
    WHERE user_range_id IS NULL AND global_tid NOT IN (SELECT DISTINCT global_tid FROM own_user_range)
),
user_event AS (
    -- per thread, the innermost open user range after each start/end (ends sort before starts at equal times)
    SELECT u.global_tid, u.pid, u.start_ns * 4 + 1 AS key, u.user_depth AS depth, u.range_id AS innermost
    FROM own_user_range AS u JOIN nvtx_range AS r USING (range_id)
    WHERE r.end_global_tid IS NULL AND u.pid IN (SELECT DISTINCT pid FROM lone)
    UNION ALL
    SELECT u.global_tid, u.pid, u.end_ns * 4, -u.user_depth, u.user_parent_id
    FROM own_user_range AS u JOIN nvtx_range AS r USING (range_id)
    WHERE r.end_global_tid IS NULL AND u.pid IN (SELECT DISTINCT pid FROM lone)
),
segment AS (
    -- several events at one instant: the deepest start, or the parent of the shallowest end
    SELECT global_tid, ANY_VALUE(pid) AS pid, key, arg_max(innermost, depth) AS innermost
    FROM user_event GROUP BY global_tid, key
),
probe_hit AS (
    SELECT l.runtime_id, l.end_ns AS call_end_ns, s.innermost AS range_id
    FROM lone AS l
    JOIN (SELECT DISTINCT pid, global_tid FROM segment) AS t USING (pid)
    ASOF JOIN segment AS s ON s.global_tid = t.global_tid AND s.key <= l.start_ns * 4 + 3
    WHERE s.innermost IS NOT NULL
),
borrowed AS (
    SELECT h.runtime_id, MIN(h.range_id) AS range_id
    FROM probe_hit AS h
    JOIN user_range AS u ON u.range_id = h.range_id  -- equality only: with a third table the planner
    WHERE u.end_ns >= h.call_end_ns                  -- chose a range join calls x ranges (quadratic)
    GROUP BY h.runtime_id
    HAVING MIN(h.range_id) = MAX(h.range_id)  -- one thread (ranges are per thread), however often the call repeats
),
borrowed_context AS (
    SELECT b.runtime_id, b.range_id, cx.in_optim, cx.in_backward
    FROM borrowed AS b JOIN nvtx_context AS cx ON cx.range_id = b.range_id
)
    SELECT c.op_kind, c.kind_no, c.op_id, c.global_tid, c.start_ns AS call_start_ns, c.what,
           CAST(CASE WHEN c.is_comm THEN 'comm'
                WHEN c.in_optim THEN 'optim'
                WHEN rc.range_id IS NOT NULL THEN 'recompute'
                WHEN c.eval_range_id IS NOT NULL OR c.in_backward
                     OR COALESCE(th.thread_name LIKE 'pt_autograd_%', false) THEN 'bprop'
                WHEN c.user_range_id IS NOT NULL OR c.op_range_id IS NOT NULL THEN 'fprop'  -- library ranges alone: other
                WHEN b.in_optim THEN 'optim'
                WHEN b.in_backward THEN 'bprop'
                WHEN b.range_id IS NOT NULL THEN 'fprop'
                ELSE 'other' END AS ENUM('fprop', 'bprop', 'optim', 'comm', 'other', 'recompute')) AS direction,
           COALESCE(rc.fwd_range_id, l.fwd_user_range_id, an.fwd_range_id, c.annotated_range_id, c.user_range_id,
                    b.range_id) AS layer_range_id,  -- a re-run's layer first: it runs inside a backward node
           c.op_range_id, c.eval_range_id,
           CASE WHEN c.eval_range_id IS NOT NULL THEN l.fwd_marker_id ELSE c.op_range_id END AS shapes_range_id,
           CASE WHEN c.eval_range_id IS NOT NULL THEN l.seq ELSE om.seq END AS seq,
           CAST(CASE WHEN rc.fwd_range_id IS NOT NULL THEN 'rerun'
                     WHEN l.fwd_user_range_id IS NOT NULL THEN 'seq'
                     WHEN c.annotated_range_id IS NOT NULL THEN 'annotated'
                     WHEN c.user_range_id IS NOT NULL THEN 'own'
                     WHEN b.range_id IS NOT NULL THEN 'borrowed' ELSE 'none' END
                AS ENUM('seq', 'annotated', 'own', 'borrowed', 'none', 'inferred', 'rerun')) AS link
    FROM launch AS c
    LEFT JOIN thread AS th ON th.global_tid = c.global_tid
    LEFT JOIN linked AS l USING (eval_range_id)
    LEFT JOIN annotated AS an USING (annotated_range_id)
    LEFT JOIN borrowed_context AS b USING (runtime_id)
    LEFT JOIN (SELECT rr.range_id, rl.fwd_range_id FROM recompute_range AS rr
               LEFT JOIN recompute_layer AS rl USING (range_id)) AS rc ON rc.range_id = c.user_range_id
    LEFT JOIN marker AS om ON om.range_id = c.op_range_id;
