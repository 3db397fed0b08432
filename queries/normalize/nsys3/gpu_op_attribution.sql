-- nsysql: normalize.nsys3.gpu_op_attribution v5
-- purpose: Every GPU op (kernel, memcpy, memset, graph-level CUDA graph) charged to a direction (fprop, bprop, optim, other), a layer (user NVTX path), the PyTorch op or autograd node that launched it, its recorded input shapes and autograd sequence number.
-- requires: gpu_op_int, runtime_nvtx, nvtx_range, nvtx_context, user_range, thread
-- params: none
-- notes: Resolution, per launching CUDA API call (found by correlationId AND process, see gpu_op):
--   1. The call's innermost NVTX range on its own thread (runtime_nvtx) gives, through nvtx_context,
--      its user range, innermost op marker and any enclosing autograd evaluation / optimizer / backward range.
--   2. A call inside `autograd::engine::evaluate_function: XBackward0` runs backward node XBackward0; the
--      node's own marker (`XBackward0, seq = N, ...`) carries the autograd sequence number. The forward
--      op marker with the same seq in the same process (outside any backward evaluation; the latest one
--      starting before the node, since ops that create no node show the next number) gives the layer
--      and input shapes: a backward GEMM of layer_3/ffn_sublayer says so.
--   3. A call inside a module's backward range of nsysql.annotate (`model/layers.3/attn [backward]`, see
--      docs/annotate.md; the innermost one) takes the layer of the same module's forward range: the latest
--      user range named `model/layers.3/attn` in the same process starting before it, outside any backward
--      range; without one, the backward range's own path (the module path).
--   4. Otherwise the layer is the call's own innermost user range.
--   5. A call outside every user range on a thread whose only user ranges are annotated backward ranges
--      and what they enclose (PyTorch's autograd thread when op markers are off) borrows the innermost
--      user range open across the whole call on the one other thread of its process that has one open
--      (the thread waiting in backward()), annotated backward ranges not counted; with none, or with
--      several such threads, nothing is borrowed.
--   6. Otherwise the layer is '?': unknown, never guessed.
--   Direction: optim inside an optimizer range or marker; bprop inside a backward evaluation or a user
--   range named like backward (an annotated `... [backward]` range is one), or on a thread named pt_autograd_*; fprop for any other call inside a
--   user range or op marker (own or borrowed); other outside every user range and op marker (library ranges
--   such as NCCL's or cuBLAS's alone do not count) or with no launching call in the export.
--   CUDA graph replays: every replayed kernel carries the graph launch's correlationId, so it takes
--   the ranges enclosing cudaGraphLaunch.
--   Ids only: the layer is user_range.layer of layer_range_id ('?' when NULL); the op is the autograd node
--   named by eval_range_id's marker (`autograd::engine::evaluate_function: XBackward0`) for backward
--   kernels, else the first field of op_range_id's marker text (`aten::addmm`); the shapes are the
--   `sizes = ...` field of shapes_range_id's marker. The view gpu_op_label resolves these texts for the
--   readers that print them; writing 1.7M rows of strings here cost more than the rest of attribution.
--   direction and link are ENUMs (compare them with strings as usual): a 4-value VARCHAR column costs
--   3x as much to write.
-- columns:
--   op_kind | VARCHAR | kernel, memcpy, memset or graph
--   op_id | BIGINT | id
--   direction | ENUM | fprop, bprop, optim or other
--   layer_range_id | BIGINT | id (user range giving the layer; NULL = unknown, '?')
--   op_range_id | BIGINT | id (innermost op marker around the launch)
--   eval_range_id | BIGINT | id (autograd::engine::evaluate_function marker around the launch: a backward node)
--   shapes_range_id | BIGINT | id (op marker whose recorded sizes are the input shapes: the forward op for bprop)
--   seq | BIGINT | id (autograd sequence number)
--   link | ENUM | how the layer was found: seq, annotated, own, borrowed or none
CREATE TABLE gpu_op_attribution AS
WITH
launch AS MATERIALIZED (  -- every GPU op with its launching call and that call's innermost range context
    SELECT CAST(o.op_kind AS VARCHAR) AS op_kind, o.op_id, o.runtime_id,
           (o.call_global_tid >> 24) & 16777215 AS pid, o.call_global_tid AS global_tid,
           o.call_start_ns AS start_ns, o.call_end_ns AS end_ns, rn.range_id,  -- the call, as gpu_op_int found it
           cx.user_range_id, cx.op_range_id, cx.eval_range_id, cx.annotated_range_id,
           COALESCE(cx.in_optim, false) AS in_optim, COALESCE(cx.in_backward, false) AS in_backward
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
-- user ranges that count as a thread's own: not annotated backward ranges nor what they enclose
own_user_range AS (
    SELECT * FROM user_range WHERE NOT in_annotated
),
-- rule 5: calls on threads without user ranges of their own borrow the waiting thread's innermost open one
lone AS MATERIALIZED (
    SELECT runtime_id, pid, start_ns, end_ns FROM launch  -- a graph launch repeats its call: see borrowed
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
SELECT c.op_kind, c.op_id,
       CAST(CASE WHEN c.in_optim THEN 'optim'
            WHEN c.eval_range_id IS NOT NULL OR c.in_backward
                 OR COALESCE(th.thread_name LIKE 'pt_autograd_%', false) THEN 'bprop'
            WHEN c.user_range_id IS NOT NULL OR c.op_range_id IS NOT NULL THEN 'fprop'  -- library ranges alone: other
            WHEN b.in_optim THEN 'optim'
            WHEN b.in_backward THEN 'bprop'
            WHEN b.range_id IS NOT NULL THEN 'fprop'
            ELSE 'other' END AS ENUM('fprop', 'bprop', 'optim', 'other')) AS direction,
       COALESCE(l.fwd_user_range_id, an.fwd_range_id, c.annotated_range_id, c.user_range_id, b.range_id)
         AS layer_range_id,
       c.op_range_id, c.eval_range_id,
       CASE WHEN c.eval_range_id IS NOT NULL THEN l.fwd_marker_id ELSE c.op_range_id END AS shapes_range_id,
       CASE WHEN c.eval_range_id IS NOT NULL THEN l.seq ELSE om.seq END AS seq,
       CAST(CASE WHEN l.fwd_user_range_id IS NOT NULL THEN 'seq'
                 WHEN c.annotated_range_id IS NOT NULL THEN 'annotated'
                 WHEN c.user_range_id IS NOT NULL THEN 'own'
                 WHEN b.range_id IS NOT NULL THEN 'borrowed' ELSE 'none' END
            AS ENUM('seq', 'annotated', 'own', 'borrowed', 'none')) AS link
FROM launch AS c
LEFT JOIN thread AS th ON th.global_tid = c.global_tid
LEFT JOIN linked AS l USING (eval_range_id)
LEFT JOIN annotated AS an USING (annotated_range_id)
LEFT JOIN borrowed_context AS b USING (runtime_id)
LEFT JOIN marker AS om ON om.range_id = c.op_range_id;  -- no ORDER BY: readers order (saves a 1.7M-row sort)
