-- nsysql: normalize.nsys3.gpu_op_attribution v8
-- purpose: Every GPU op (kernel, memcpy, memset, graph-level CUDA graph) charged to a direction (fprop, bprop, optim, comm, other), a layer (user NVTX path), the PyTorch op or autograd node that launched it, its recorded input shapes and autograd sequence number.
-- requires: _gpu_op_rules, gpu_op_int, kernel_int, user_range
-- params: none
-- built: on first use (attribution: read by layers, steps, summarize and the kernel tables, never by the NVIDIA reports)
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
--   7. Inference (link inferred), for the ops of a backward pass that all borrow one range (rule 5; a pass:
--      the backward ops between two forward ops of the process). Its forward: the lender thread's forward
--      ops (own range) since the previous pass, in ranges opened since then or around the lender. PyTorch
--      runs a stack of layers' backward in reverse order, and blocks alike in their forward are alike in
--      their backward. The stack: the longest run of adjacent sibling ranges whose forward ran the same
--      kernels (name, grid, block) in the same order under the same sub-paths (layer_0 ... layer_N-1, N >=
--      2; then the longest block; then the first). Its backward: the longest period l (at least half the
--      block's forward ops) at which the pass has N equal runs of l ops in a row; every start p where that
--      holds is a possible phase, except one that puts an op where nothing points to (an op whose kernel
--      evidence, below, names forward ops only elsewhere: in the stack, before it or after it; unless every
--      p does). An op is charged to block N-1-k when it falls in the k-th run at every phase left, and to
--      the stack's parent when it falls in the runs at every phase but in different ones, if that parent is
--      a layer (neither a step, nor around the lender, nor directly in a step or at the top: `stage_1`,
--      not `forward_pass`). Ops before the runs belong to the blocks after the stack (in reverse order), ops
--      after them to the blocks before it; a block there is the outermost range of a forward op not around the
--      stack's parent (or the op's own range); ops directly in a step range or around the lender stay
--      borrowed. There an op's candidate blocks are, strongest evidence first: for a matrix-product or
--      convolution kernel, the blocks whose forward ran one (a convolution's kernels only those with a
--      convolution); for another compute kernel the blocks whose forward ran the same kernel and launch
--      shape, or its forward twin (`..._backward_...` of `..._forward_...`), or the same short name and
--      shape; copies, casts, fills, layout changes and accumulations are no evidence (their shape is a
--      tensor's, not a layer's). Walking the backward in order, an op is charged when one candidate is
--      left between its neighbours' (the latest lowest and the next highest); a side where some op has
--      none left is charged nothing. Owed products: autograd runs nodes in reverse forward order, so a
--      block owes a matrix-product or convolution kernel after an op charged to it whose evidence names
--      only forward ops after the block's first compute op (not a copy, cast or layout change), if that
--      is a product or convolution; and, if its forward ran one, after the last op that must be an
--      earlier block's. The first such kernel after that point whose candidates admit the block is the
--      block's when no earlier block is left to it, and so is every op between that has no earlier block
--      left either; only where an op after it is charged to a block earlier in the forward (so the chain
--      had a gradient to compute). Host-to-device copies and memsets have no backward. Passes alike in
--      every op (what ran, in order, and the forward's paths) are solved once; confidence = the share of
--      the pass's ops charged; borrowed_range_id keeps the range it borrowed. Never over a seq link or an
--      annotation (those passes have no borrowed ops). Communication kernels (direction comm) are no part of a
--      pass, forward or backward: DDP's all-reduces run between a backward's layers as its buckets fill, and
--      keep the range they borrowed.
--   Direction: comm for a communication kernel, the rule of macros.comm_kernels (analysis.comm reads the
--   same): a kernel named like NCCL's (macros.is_nccl_name: `nccl` in any case, NCCL's `::oneRankReduce<`), or
--   launched by a call inside a range of NCCL's NVTX domain `NCCL` (nvtx_context.in_nccl), wherever it runs;
--   optim inside an optimizer range or marker (a user range named like an optimizer step, in any case:
--   containing `optim`, or the whole name `opt`, `sgd` or `adam...` with `step`/`zero_grad` around it, see
--   macros.is_optimizer_name; PyTorch's `Optimizer.step#...` / `Optimizer.zero_grad#...` markers); bprop inside
--   a backward evaluation or a user range named like backward (an annotated `... [backward]` range is one), or
--   on a thread named pt_autograd_*; fprop for any other call inside a user range or op marker (own or
--   borrowed); other outside every user range and op marker (library ranges such as NCCL's or cuBLAS's alone
--   do not count) or with no launching call in the export. Copies, sets and graph-level CUDA graphs are never
--   comm. A comm kernel keeps the layer of rules 1-6 (rule 7 passes it by).
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
--   direction | ENUM | fprop, bprop, optim, comm, other or recompute
--   layer_range_id | BIGINT | id (user range giving the layer; NULL = unknown, '?')
--   op_range_id | BIGINT | id (innermost op marker around the launch)
--   eval_range_id | BIGINT | id (autograd::engine::evaluate_function marker around the launch: a backward node)
--   shapes_range_id | BIGINT | id (op marker whose recorded sizes are the input shapes: the forward op for bprop)
--   seq | BIGINT | id (autograd sequence number)
--   link | ENUM | how the layer was found: seq, annotated, own, borrowed, none, inferred (rule 7) or rerun (rule 0)
--   confidence | DOUBLE | ratio (inferred rows: share of the backward pass's ops that rule 7 charged; else NULL)
--   borrowed_range_id | BIGINT | id (inferred rows: the range rule 5 lent, where the op ran; else NULL)
CREATE TABLE gpu_op_attribution AS
WITH RECURSIVE
attributed AS NOT MATERIALIZED (SELECT * FROM _gpu_op_rules),  -- rules 1-6: read where used, not copied

-- rule 7: a backward pass whose ops only borrow a range, charged to the forward layers by the capture's structure.
-- Everything over all ops is integers in one narrow sort; only one pass of each kind is looked at closely.
pass_op AS (  -- per process with such ops: forward ops on their own range, backward ops on none of their own
    SELECT kind_no, op_id, (global_tid >> 24) & 16777215 AS pid, global_tid, call_start_ns, what, is_b,
           CASE WHEN NOT is_b
                  OR link = CAST('borrowed' AS ENUM('seq', 'annotated', 'own', 'borrowed', 'none', 'inferred', 'rerun'))
                THEN layer_range_id END AS range_id  -- a backward op's: the lender, if it borrowed one
    FROM (SELECT *, direction = CAST('bprop' AS ENUM('fprop', 'bprop', 'optim', 'comm', 'other', 'recompute')) AS is_b,
                 link = CAST('own' AS ENUM('seq', 'annotated', 'own', 'borrowed', 'none', 'inferred', 'rerun')) AS is_own
          FROM attributed)
    WHERE (global_tid >> 24) & 16777215 IN (
              SELECT DISTINCT (global_tid >> 24) & 16777215 FROM attributed
              WHERE link = CAST('borrowed' AS ENUM('seq', 'annotated', 'own', 'borrowed', 'none', 'inferred', 'rerun')))
      AND (is_b <> is_own) AND (is_b OR direction = CAST('fprop' AS ENUM('fprop', 'bprop', 'optim', 'comm', 'other', 'recompute')))
),
numbered AS MATERIALIZED (  -- ops so far (seen) and backward ops so far (b_seen): a backward run shares one f_seen.
    -- Counted as the sorted rows stream by (a running count over a partitioned window cost 25 % more); the counts
    -- run on from one process to the next, and only their differences within a process are compared
    SELECT kind_no, op_id, global_tid, call_start_ns, what, is_b, range_id, b_seen, seen - b_seen AS f_seen
    FROM (SELECT *, ROW_NUMBER() OVER () AS seen,
                 CAST(SUM(is_b::INTEGER) OVER (ROWS UNBOUNDED PRECEDING) AS BIGINT) AS b_seen
          FROM (SELECT * FROM pass_op ORDER BY pid, call_start_ns, op_id, kind_no))
),
run AS (  -- a backward run (the ops between two forward ops); inferable when all borrow one range (the lender)
    SELECT (global_tid >> 24) & 16777215 AS pid, f_seen AS run_no, MIN(b_seen) AS first_b, MAX(b_seen) AS last_b,
           MIN(call_start_ns) AS start_ns, MAX(call_start_ns) AS last_ns, COUNT(*) AS ops,
           MIN(range_id) AS lender_id,
           COUNT(range_id) = COUNT(*) AND MIN(range_id) = MAX(range_id) AS inferable
    FROM numbered WHERE is_b GROUP BY ALL
),
lender AS MATERIALIZED (
    SELECT range_id, user_parent_id, user_depth, start_ns, global_tid, layer FROM user_range
    WHERE range_id IN (SELECT lender_id FROM run WHERE inferable)
),
lender_pool AS MATERIALIZED (  -- where a lender's ancestors are: ranges no deeper than it (one scan)
    SELECT range_id, user_parent_id, start_ns FROM user_range WHERE user_depth < (SELECT MAX(user_depth) FROM lender)
),
lender_anc(lender_id, anc_id, parent_id, start_ns) AS (  -- each lender's user ranges from itself up
    SELECT range_id, range_id, user_parent_id, start_ns FROM lender
    UNION ALL
    SELECT a.lender_id, p.range_id, p.user_parent_id, p.start_ns
    FROM lender_anc AS a JOIN lender_pool AS p ON p.range_id = a.parent_id
),
pass AS MATERIALIZED (  -- an inferable run with where its forward starts: after the previous run, in its top-level range
    SELECT r.pid, r.run_no, r.first_b, r.start_ns, r.ops, r.lender_id, lu.global_tid AS lender_tid,
           lu.layer AS lender_layer,
           GREATEST(COALESCE(prev.last_ns, -1),
                    (SELECT MIN(start_ns) FROM lender_anc AS a WHERE a.lender_id = r.lender_id)) AS cutoff_ns
    FROM run AS r
    JOIN lender AS lu ON lu.range_id = r.lender_id
    LEFT JOIN run AS prev ON prev.pid = r.pid AND prev.last_b = r.first_b - 1
    WHERE r.inferable
),
fwd_range AS (  -- the user ranges of the lender threads, their paths as integers
    SELECT range_id, start_ns, hash(layer) AS layer_no
    FROM user_range WHERE global_tid IN (SELECT DISTINCT lender_tid FROM pass)
),
fwd_pos AS (  -- a pass's forward: the lender thread's ops since the previous run, in ranges opened
    -- since or around the lender; pos counts back from the pass (gaps where another thread's ops were left out)
    SELECT pa.pid, pa.run_no, e.kind_no, e.op_id, e.call_start_ns, e.what, e.range_id, u.layer_no,
           pa.run_no - e.f_seen AS pos
    FROM pass AS pa
    JOIN numbered AS e ON e.global_tid = pa.lender_tid AND e.b_seen = pa.first_b - 1 AND NOT e.is_b
    JOIN fwd_range AS u ON u.range_id = e.range_id
    LEFT JOIN lender_anc AS la ON la.lender_id = pa.lender_id AND la.anc_id = e.range_id
    WHERE u.start_ns >= pa.cutoff_ns OR la.anc_id IS NOT NULL
),
bwd_pos AS NOT MATERIALIZED (  -- a pass's backward ops, pos from 0
    SELECT pa.pid, pa.run_no, e.kind_no, e.op_id, e.what, e.b_seen - pa.first_b AS pos
    FROM numbered AS e JOIN pass AS pa ON pa.run_no = e.f_seen AND pa.pid = (e.global_tid >> 24) & 16777215
    WHERE e.is_b
),
shape AS MATERIALIZED (  -- passes alike in every op (what ran, in order, and the forward's layer paths) are solved once
    SELECT pa.pid, pa.run_no, hash(f.h, f.n, b.h, b.n, pa.lender_layer) AS shape_id
    FROM pass AS pa
    JOIN (SELECT pid, run_no, bit_xor(hash(pos, what, layer_no)) AS h, COUNT(*) AS n
          FROM fwd_pos GROUP BY pid, run_no) AS f USING (pid, run_no)
    JOIN (SELECT pid, run_no, bit_xor(hash(pos, what)) AS h, COUNT(*) AS n
          FROM bwd_pos GROUP BY pid, run_no) AS b USING (pid, run_no)
),
rep AS MATERIALIZED (  -- one pass of each shape
    SELECT s.shape_id, pa.*, pa.ops AS nb
    FROM (SELECT shape_id, arg_min(pid, (pid, run_no)) AS pid, arg_min(run_no, (pid, run_no)) AS run_no
          FROM shape GROUP BY shape_id) AS s
    JOIN pass AS pa USING (pid, run_no)
),
rep_fwd AS MATERIALIZED (  -- its forward ops, chosen as in fwd_pos
    SELECT r.shape_id, e.kind_no, e.op_id, e.call_start_ns, e.range_id, r.run_no - e.f_seen AS pos
    FROM rep AS r
    JOIN numbered AS e ON e.global_tid = r.lender_tid AND e.b_seen = r.first_b - 1 AND NOT e.is_b
    JOIN user_range AS u ON u.range_id = e.range_id
    LEFT JOIN lender_anc AS la ON la.lender_id = r.lender_id AND la.anc_id = e.range_id
    WHERE u.start_ns >= r.cutoff_ns OR la.anc_id IS NOT NULL
),
rep_seq AS MATERIALIZED (  -- its forward (f, pos from 0 in order) and backward (b) ops
    SELECT 'f' AS side, shape_id, ROW_NUMBER() OVER (PARTITION BY shape_id ORDER BY pos DESC) - 1 AS pos,
           kind_no, op_id, range_id
    FROM rep_fwd
    UNION ALL
    SELECT 'b', r.shape_id, b.pos, b.kind_no, b.op_id, NULL
    FROM rep AS r JOIN bwd_pos AS b USING (pid, run_no)
),
rep_kernel AS (  -- their names and launch shapes: semi joins, so that the hash tables hold these few ops only;
    -- kernel ids are row numbers and these ops run close together: the range lets the scan skip the rest
    SELECT kernel_id, kernel_name, short_name, grid_x, grid_y, grid_z, block_x, block_y, block_z FROM kernel_int
    WHERE kernel_id IN (SELECT op_id FROM rep_seq WHERE kind_no = 0)  -- 0: kernel
      AND kernel_id BETWEEN (SELECT MIN(op_id) FROM rep_seq WHERE kind_no = 0)
                        AND (SELECT MAX(op_id) FROM rep_seq WHERE kind_no = 0)
),
rep_other AS (
    SELECT enum_code(op_kind) AS kind_no, op_id, label FROM gpu_op_int
    WHERE op_kind <> 'kernel' AND op_id IN (SELECT op_id FROM rep_seq WHERE kind_no <> 0)
),
rep_op AS MATERIALIZED (  -- with what a comparison needs
    SELECT o.shape_id, o.side, o.pos, o.range_id, o.layer,
           hash(o.kernel_name, o.label, o.grid_x, o.grid_y, o.grid_z, o.block_x, o.block_y, o.block_z) AS sig,
           COALESCE(CAST(o.short_name AS VARCHAR), o.label) AS short,
           hash(COALESCE(CAST(o.short_name AS VARCHAR), o.label), o.grid_x, o.grid_y, o.grid_z, o.block_x, o.block_y,
                o.block_z) AS short_sig,
           COALESCE(regexp_matches(CAST(o.kernel_name AS VARCHAR),
                                   'gemm|gemv|cutlass|cublas|splitKreduce|xmma|nvjet|conv|dgrad|wgrad|winograd|fft', 'i'),
                    false) AS is_mm,  -- a matrix product or a convolution
           COALESCE(regexp_matches(CAST(o.kernel_name AS VARCHAR), 'conv|dgrad|wgrad|fprop|implicit|winograd|fft', 'i'),
                    false) AS is_conv,
           o.kind_no <> 0  -- moves, casts, fills or accumulates a tensor: its shape says which tensor, not which layer
             OR regexp_matches(CAST(o.kernel_name AS VARCHAR),
                               'copy|nchwto|nhwcto|transpose|fill|functor_add|addfunctor|add_kernel|workspace', 'i')
             AS is_util,
           COALESCE(o.label IN ('[CUDA memset]', '[CUDA memcpy Host-to-Device]'), false) AS no_grad,
           replace(replace(replace(COALESCE(CAST(o.short_name AS VARCHAR), o.label), 'backward', 'forward'),
                           'Backward', 'Forward'), 'bwd', 'fwd') AS mirror  -- a backward kernel's forward twin
    FROM (SELECT q.shape_id, q.side, q.pos, q.kind_no, q.range_id, u.layer, k.kernel_name, x.label, k.short_name,
                 k.grid_x, k.grid_y, k.grid_z, k.block_x, k.block_y, k.block_z
          FROM rep_seq AS q
          LEFT JOIN rep_kernel AS k ON k.kernel_id = q.op_id AND q.kind_no = 0
          LEFT JOIN rep_other AS x ON x.kind_no = q.kind_no AND x.op_id = q.op_id
          LEFT JOIN user_range AS u ON u.range_id = q.range_id) AS o
),
rep_range AS MATERIALIZED (  -- the user ranges open during a representative pass's forward (ancestors included)
    SELECT r.shape_id, u.range_id, u.user_parent_id, u.user_depth, u.layer, u.is_step
    FROM rep AS r JOIN (SELECT shape_id, MIN(call_start_ns) AS first_call_ns FROM rep_fwd GROUP BY shape_id) AS f
      USING (shape_id)
    JOIN user_range AS u ON u.global_tid = r.lender_tid AND u.start_ns <= r.start_ns AND u.end_ns >= f.first_call_ns
),
range_anc(shape_id, range_id, anc_id) AS (  -- the user ranges of each representative forward op, from its own up
    SELECT DISTINCT shape_id, range_id, range_id FROM rep_op WHERE side = 'f'
    UNION ALL
    SELECT a.shape_id, a.range_id, u.user_parent_id
    FROM range_anc AS a JOIN rep_range AS u ON u.shape_id = a.shape_id AND u.range_id = a.anc_id
    WHERE u.user_parent_id IS NOT NULL
),
subtree AS (  -- each such range: its forward ops' span and what ran inside, in order, with the paths below it
    SELECT f.shape_id, a.anc_id, ANY_VALUE(au.user_parent_id) AS parent_id, ANY_VALUE(au.user_depth) AS depth,
           MIN(f.pos) AS first_pos, MAX(f.pos) AS last_pos, COUNT(*) AS n,
           hash(string_agg(f.sig || substr(f.layer, length(au.layer) + 1), ',' ORDER BY f.pos)) AS h
    FROM rep_op AS f
    JOIN range_anc AS a ON a.shape_id = f.shape_id AND a.range_id = f.range_id
    JOIN rep_range AS au ON au.shape_id = f.shape_id AND au.range_id = a.anc_id
    WHERE f.side = 'f'
    GROUP BY f.shape_id, a.anc_id
),
sibling_run AS (  -- runs of adjacent siblings alike in everything they ran: repeated blocks (layer_0, layer_1, ...)
    SELECT *, SUM(CASE WHEN alike THEN 0 ELSE 1 END)
                  OVER (PARTITION BY shape_id, parent_id ORDER BY first_pos ROWS UNBOUNDED PRECEDING) AS grp
    FROM (SELECT *, COALESCE(LAG(h) OVER w = h AND LAG(n) OVER w = n AND LAG(last_pos) OVER w = first_pos - 1, false)
                      AS alike
          FROM subtree WINDOW w AS (PARTITION BY shape_id, parent_id ORDER BY first_pos))
),
stack AS (  -- per shape the stack of most blocks (then the longest, then the first): N blocks of n forward ops
    SELECT * FROM (
        SELECT shape_id, parent_id, grp, COUNT(*) AS blocks, ANY_VALUE(n) AS n, MIN(first_pos) AS first_pos,
               MAX(last_pos) AS last_pos,
               ROW_NUMBER() OVER (PARTITION BY shape_id ORDER BY COUNT(*) DESC, ANY_VALUE(n) DESC, MIN(first_pos)) AS pick
        FROM sibling_run GROUP BY shape_id, parent_id, grp HAVING COUNT(*) >= 2
    ) WHERE pick = 1
),
member AS (  -- the stack's blocks, k = 0 first in the forward
    SELECT s.shape_id, r.anc_id AS range_id, ROW_NUMBER() OVER (PARTITION BY s.shape_id ORDER BY r.first_pos) - 1 AS k
    FROM stack AS s JOIN sibling_run AS r USING (shape_id, grp)
    WHERE r.parent_id IS NOT DISTINCT FROM s.parent_id
),
period AS (  -- candidate lengths l of one block's backward: N blocks' worth must fit the pass
    SELECT s.shape_id, s.blocks, r.nb, s.n, unnest(range(GREATEST(1, (s.n + 1) // 2), r.nb // s.blocks + 1)) AS l
    FROM stack AS s JOIN rep AS r USING (shape_id)
    WHERE (r.nb // s.blocks - (s.n + 1) // 2) * r.nb <= 20000000  -- the comparisons below: bounded, or no inference
),
repeat_run AS (  -- per l, runs of backward ops equal to the op l later
    SELECT shape_id, l, ANY_VALUE(blocks) AS blocks, ANY_VALUE(nb) AS nb, MIN(pos) AS a, MAX(pos) AS b
    FROM (SELECT c.shape_id, c.l, c.blocks, c.nb, x.pos,
                 x.pos - ROW_NUMBER() OVER (ORDER BY c.shape_id, c.l, x.pos) AS grp  -- one sort: partitions cost more
          FROM period AS c
          JOIN rep_op AS x ON x.shape_id = c.shape_id AND x.side = 'b'
          JOIN rep_op AS y ON y.shape_id = c.shape_id AND y.side = 'b' AND y.pos = x.pos + c.l
          WHERE x.sig = y.sig)
    GROUP BY shape_id, l, grp
),
phase_all AS (  -- the longest l with N repeats in a row, and every start p where the last block's backward may begin
    SELECT shape_id, l, blocks, unnest(range(a, LEAST(b - (blocks - 1) * l + 1, nb - blocks * l) + 1)) AS p
    FROM (SELECT *, MAX(l) OVER (PARTITION BY shape_id) AS best_l
          FROM repeat_run WHERE a <= LEAST(b - (blocks - 1) * l + 1, nb - blocks * l))
    WHERE l = best_l
),
phase_span AS (  -- the first and the last of those starts
    SELECT shape_id, ANY_VALUE(l) AS l, ANY_VALUE(blocks) AS blocks, MIN(p) AS p_lo, MAX(p) AS p_hi
    FROM phase_all GROUP BY shape_id
),
points_to AS (  -- backward ops outside the runs at some start, and the forward ops their kernel evidence names:
    -- level 1 a matrix-product or convolution kernel (a convolution's only convolutions), 2 the same kernel and
    -- launch shape, 3 its forward twin, 4 the same short name and shape. Copies, casts, fills, layout changes and
    -- accumulations name none: their shape is a tensor's, not a layer's
    SELECT b.shape_id, b.pos, f.pos AS fwd_pos,
           CASE WHEN b.is_mm THEN 1 WHEN f.sig = b.sig THEN 2 WHEN f.short = b.mirror THEN 3 ELSE 4 END AS level
    FROM rep_op AS b JOIN phase_span AS ph USING (shape_id)
    JOIN rep_op AS f ON f.shape_id = b.shape_id AND f.side = 'f' AND NOT f.no_grad
    WHERE b.side = 'b' AND (b.pos < ph.p_hi OR b.pos >= ph.p_lo + ph.blocks * ph.l)
      AND ((b.is_mm AND f.is_mm AND (f.is_conv OR NOT b.is_conv))
           OR (NOT b.is_mm AND NOT b.is_util AND (f.sig = b.sig OR (f.short = b.mirror AND b.mirror <> b.short)
                                                  OR f.short_sig = b.short_sig)))
),
zone_evidence AS (  -- backward ops the starts disagree on: does what they point to run after the stack, in it, before?
    SELECT t.shape_id, t.pos, bool_or(t.fwd_pos > s.last_pos) AS in_after,
           bool_or(t.fwd_pos BETWEEN s.first_pos AND s.last_pos) AS in_stack,
           bool_or(t.fwd_pos < s.first_pos) AS in_before
    FROM points_to AS t JOIN phase_span AS ph USING (shape_id) JOIN stack AS s USING (shape_id)
    WHERE t.pos BETWEEN ph.p_lo AND ph.p_hi - 1
       OR t.pos BETWEEN ph.p_lo + ph.blocks * ph.l AND ph.p_hi + ph.blocks * ph.l - 1
    GROUP BY t.shape_id, t.pos
),
contradicted AS (  -- starts that put an op where nothing in the forward points to, while something elsewhere does
    SELECT DISTINCT a.shape_id, a.p
    FROM phase_all AS a JOIN zone_evidence AS z USING (shape_id)
    WHERE CASE WHEN z.pos < a.p THEN NOT z.in_after
               WHEN z.pos >= a.p + a.blocks * a.l THEN NOT z.in_before
               ELSE NOT z.in_stack END
),
phase AS (  -- the starts left (all of them when every one is contradicted): p_lo .. p_hi
    SELECT shape_id, ANY_VALUE(l) AS l, ANY_VALUE(blocks) AS blocks, MIN(p) AS p_lo, MAX(p) AS p_hi
    FROM (SELECT *, COUNT(*) FILTER (WHERE NOT is_contradicted) OVER (PARTITION BY shape_id) AS starts_left
          FROM (SELECT a.*, c.p IS NOT NULL AS is_contradicted
                FROM phase_all AS a LEFT JOIN contradicted AS c USING (shape_id, p)))
    WHERE starts_left = 0 OR NOT is_contradicted
    GROUP BY shape_id
),
in_stack AS (  -- backward ops in the same block at every possible start
    SELECT b.shape_id, b.pos, m.range_id
    FROM rep_op AS b JOIN phase AS ph USING (shape_id)
    JOIN member AS m ON m.shape_id = b.shape_id AND m.k = ph.blocks - 1 - (b.pos - ph.p_lo) // ph.l
    WHERE b.side = 'b' AND b.pos >= ph.p_hi AND b.pos < ph.p_lo + ph.blocks * ph.l
      AND (b.pos - ph.p_lo) // ph.l = (b.pos - ph.p_hi) // ph.l
),
stack_anc AS (  -- the stack's parent and its ancestors: those of a forward op below it, up from the parent's depth
    SELECT DISTINCT a2.shape_id, a2.anc_id
    FROM stack AS s
    JOIN range_anc AS a ON a.shape_id = s.shape_id AND a.anc_id = s.parent_id
    JOIN range_anc AS a2 ON a2.shape_id = a.shape_id AND a2.range_id = a.range_id
    JOIN rep_range AS u2 ON u2.shape_id = s.shape_id AND u2.range_id = a2.anc_id
    JOIN rep_range AS up ON up.shape_id = s.shape_id AND up.range_id = s.parent_id
    WHERE u2.user_depth <= up.user_depth
),
fwd_block AS (  -- a forward op's block: its outermost range not around the stack's parent (or its own range)
    SELECT f.shape_id, f.pos,
           COALESCE(arg_min(a.anc_id, au.user_depth) FILTER (WHERE sa.anc_id IS NULL), ANY_VALUE(f.range_id))
             AS block_id,
           bool_or(f.is_mm) AS is_mm, bool_or(f.is_conv) AS is_conv, bool_or(f.is_util) AS is_util,
           ANY_VALUE(f.sig) AS sig, ANY_VALUE(f.short) AS short,
           ANY_VALUE(f.short_sig) AS short_sig
    FROM rep_op AS f
    JOIN phase AS ph USING (shape_id)
    JOIN range_anc AS a ON a.shape_id = f.shape_id AND a.range_id = f.range_id
    JOIN rep_range AS au ON au.shape_id = f.shape_id AND au.range_id = a.anc_id
    LEFT JOIN stack_anc AS sa ON sa.shape_id = f.shape_id AND sa.anc_id = a.anc_id
    WHERE f.side = 'f' AND NOT f.no_grad
    GROUP BY f.shape_id, f.pos
),
fwd_block_run AS (  -- grp: the runs of adjacent forward ops in one block
    SELECT *, SUM(CASE WHEN block_id IS DISTINCT FROM prev THEN 1 ELSE 0 END)
                  OVER (PARTITION BY shape_id ORDER BY pos ROWS UNBOUNDED PRECEDING) AS grp
    FROM (SELECT *, LAG(block_id) OVER (PARTITION BY shape_id ORDER BY pos) AS prev FROM fwd_block)
),
block_run AS (  -- runs of forward ops in one block, before or after the stack, j = 0 the first one's backward reaches
    SELECT *, ROW_NUMBER() OVER (PARTITION BY shape_id, side ORDER BY first_pos DESC) - 1 AS j,
           COUNT(*) OVER (PARTITION BY shape_id, side) AS m
    FROM (SELECT f.shape_id, f.grp, ANY_VALUE(f.block_id) AS block_id, MIN(f.pos) AS first_pos,
                 CASE WHEN MIN(f.pos) > ANY_VALUE(s.last_pos) THEN 'after' ELSE 'before' END AS side
          FROM fwd_block_run AS f JOIN stack AS s USING (shape_id)
          WHERE f.pos < s.first_pos OR f.pos > s.last_pos
          GROUP BY f.shape_id, f.grp)
),
outside AS (  -- backward ops before the stack's in every phase (after-blocks) or after it (before-blocks)
    SELECT b.shape_id, b.pos, CASE WHEN b.pos < ph.p_lo THEN 'after' ELSE 'before' END AS side, b.is_mm
    FROM rep_op AS b JOIN phase AS ph USING (shape_id)
    WHERE b.side = 'b' AND (b.pos < ph.p_lo OR b.pos >= ph.p_hi + ph.blocks * ph.l)
),
evidence AS (  -- blocks an op can belong to, by level of evidence (points_to)
    SELECT o.shape_id, o.side, o.pos, f.j, t.level, t.fwd_pos
    FROM outside AS o
    JOIN points_to AS t ON t.shape_id = o.shape_id AND t.pos = o.pos
    JOIN (SELECT fb.shape_id, fb.pos, br.side, br.j FROM fwd_block_run AS fb JOIN block_run AS br USING (shape_id, grp))
      AS f ON f.shape_id = o.shape_id AND f.pos = t.fwd_pos AND f.side = o.side
),
candidates AS (  -- per op: the blocks of its strongest evidence, or all blocks of its side (cmin..cmax)
    SELECT o.shape_id, o.side, o.pos, o.is_mm, COALESCE(e.cmin, 0) AS cmin, COALESCE(e.cmax, r.m - 1) AS cmax, e.js,
           e.first_fwd
    FROM outside AS o
    JOIN (SELECT DISTINCT shape_id, side, m FROM block_run) AS r USING (shape_id, side)
    LEFT JOIN (SELECT shape_id, side, pos, MIN(j) AS cmin, MAX(j) AS cmax, list(DISTINCT j) AS js,
                      MIN(fwd_pos) AS first_fwd
               FROM (SELECT *, MIN(level) OVER (PARTITION BY shape_id, side, pos) AS best FROM evidence)
               WHERE level = best GROUP BY shape_id, side, pos) AS e USING (shape_id, side, pos)
),
feasible AS (  -- backward runs through the blocks in order: the blocks left to each op by its neighbours' evidence
    SELECT *, CASE WHEN js IS NULL THEN hi - lo + 1 ELSE len(list_filter(js, x -> x BETWEEN lo AND hi)) END AS count,
           CASE WHEN js IS NULL THEN lo ELSE list_min(list_filter(js, x -> x BETWEEN lo AND hi)) END AS j
    FROM (SELECT *, MAX(cmin) OVER (PARTITION BY shape_id, side ORDER BY pos ROWS UNBOUNDED PRECEDING) AS lo,
                 MIN(cmax) OVER (PARTITION BY shape_id, side ORDER BY pos ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING)
                   AS hi
          FROM candidates)
),
block_mm AS (  -- per block: its first compute op (no copy, cast or layout change), and whether it ran a matrix product
    SELECT br.shape_id, br.side, br.j, MIN(fb.pos) FILTER (WHERE NOT fb.is_util) AS first_pos,
           arg_min(fb.is_mm, fb.pos) FILTER (WHERE NOT fb.is_util) AS first_is_mm, bool_or(fb.is_mm) AS any_mm
    FROM fwd_block_run AS fb JOIN block_run AS br USING (shape_id, grp)
    GROUP BY br.shape_id, br.side, br.j
),
owing AS (  -- points t after which block j's backward still owes a matrix product or convolution kernel:
    -- after an op placed in j whose evidence names only forward ops after j's first compute op, if that is one
    SELECT f.shape_id, f.side, f.j, f.pos AS t
    FROM feasible AS f JOIN block_mm AS b USING (shape_id, side, j)
    WHERE f.count = 1 AND f.cmin = f.j AND f.cmax = f.j AND f.js IS NOT NULL AND b.first_is_mm
      AND b.first_pos < f.first_fwd
    UNION ALL  -- after the last op that must be in an earlier block, for a block that ran one at all
    SELECT f.shape_id, f.side, b.j, COALESCE(MAX(f.pos) FILTER (WHERE f.hi < b.j), -1)
    FROM feasible AS f JOIN block_mm AS b USING (shape_id, side)
    WHERE b.any_mm
    GROUP BY f.shape_id, f.side, b.j
),
owed_mm AS (  -- the first matrix-product or convolution kernel after t whose evidence and order admit j
    SELECT o.shape_id, o.side, o.j, o.t, MIN(f.pos) AS x
    FROM owing AS o JOIN feasible AS f ON f.shape_id = o.shape_id AND f.side = o.side AND f.pos > o.t
    WHERE f.is_mm AND f.lo <= o.j AND o.j <= f.hi AND (f.js IS NULL OR list_contains(f.js, o.j))
    GROUP BY o.shape_id, o.side, o.j, o.t
),
owed AS (  -- it is j's when it cannot be an earlier block's (lo = j), and so is every op from t to it that
    -- cannot either; only where a block earlier in the forward ran its backward after it (so j's input had a
    -- gradient to compute) and every such op admits j
    SELECT DISTINCT f.shape_id, f.side, f.pos, o.j
    FROM owed_mm AS o
    JOIN feasible AS f ON f.shape_id = o.shape_id AND f.side = o.side AND f.pos > o.t AND f.pos <= o.x AND f.lo = o.j
    WHERE (SELECT bool_and(z.hi >= o.j AND (z.js IS NULL OR list_contains(z.js, o.j))) FROM feasible AS z
           WHERE z.shape_id = o.shape_id AND z.side = o.side AND z.pos > o.t AND z.pos <= o.x AND z.lo = o.j)
      AND EXISTS (SELECT 1 FROM feasible AS z WHERE z.shape_id = o.shape_id AND z.side = o.side AND z.pos = o.x
                  AND z.lo = o.j)
      AND EXISTS (SELECT 1 FROM feasible AS z WHERE z.shape_id = o.shape_id AND z.side = o.side AND z.pos > o.x
                  AND z.count = 1 AND z.j > o.j)
),
outside_block AS (  -- one block left, on a side where every op has one at least, and a block that is a layer
    SELECT f.shape_id, f.pos, r.block_id AS range_id
    FROM (SELECT f.shape_id, f.side, f.pos, CASE WHEN f.count = 1 THEN f.j ELSE w.j END AS j
          FROM feasible AS f LEFT JOIN owed AS w USING (shape_id, side, pos)
          WHERE f.count = 1 OR w.j IS NOT NULL) AS f
    JOIN block_run AS r ON r.shape_id = f.shape_id AND r.side = f.side AND r.j = f.j
    JOIN rep AS rp ON rp.shape_id = f.shape_id
    JOIN rep_range AS u ON u.shape_id = f.shape_id AND u.range_id = r.block_id
    LEFT JOIN lender_anc AS la ON la.lender_id = rp.lender_id AND la.anc_id = r.block_id
    WHERE la.anc_id IS NULL AND NOT u.is_step
      AND NOT EXISTS (SELECT 1 FROM feasible AS z WHERE z.shape_id = f.shape_id AND z.side = f.side AND z.count < 1)
),
between_blocks AS (  -- in the stack at every start but in other blocks at some: the stack's parent, if a layer
    -- (a range inside another that is neither a step nor around the lender: not `forward_pass` itself)
    SELECT b.shape_id, b.pos, s.parent_id AS range_id
    FROM rep_op AS b JOIN phase AS ph USING (shape_id) JOIN stack AS s USING (shape_id) JOIN rep AS rp USING (shape_id)
    JOIN rep_range AS u ON u.shape_id = s.shape_id AND u.range_id = s.parent_id
    JOIN rep_range AS up ON up.shape_id = s.shape_id AND up.range_id = u.user_parent_id
    LEFT JOIN lender_anc AS la ON la.lender_id = rp.lender_id AND la.anc_id = s.parent_id
    WHERE b.side = 'b' AND b.pos >= ph.p_hi AND b.pos < ph.p_lo + ph.blocks * ph.l
      AND (b.pos - ph.p_lo) // ph.l <> (b.pos - ph.p_hi) // ph.l
      AND la.anc_id IS NULL AND NOT u.is_step AND NOT up.is_step
),
placed AS (  -- per shape and backward position: the forward range, and the share of the pass placed
    SELECT p.shape_id, p.pos, u.layer, hash(u.layer) AS layer_no,
           COUNT(*) OVER (PARTITION BY p.shape_id) / ANY_VALUE(r.nb) OVER (PARTITION BY p.shape_id) AS confidence
    FROM (SELECT * FROM in_stack UNION ALL SELECT * FROM between_blocks UNION ALL SELECT * FROM outside_block) AS p
    JOIN rep_range AS u USING (shape_id, range_id) JOIN rep AS r USING (shape_id)
),
placed_op AS (  -- every pass of the shape: its backward op at that position
    SELECT b.kind_no, b.op_id, b.pid, b.run_no, p.layer_no, p.confidence, pa.lender_id
    FROM bwd_pos AS b JOIN shape AS s USING (pid, run_no)
    JOIN placed AS p ON p.shape_id = s.shape_id AND p.pos = b.pos
    JOIN pass AS pa USING (pid, run_no)
),
pass_layer AS (  -- in each pass, the forward range of that path: the pass a range of that path comes first before
    SELECT pa.pid, pa.run_no, hash(u.layer) AS layer_no, arg_max(u.range_id, u.start_ns) AS range_id
    FROM (SELECT * FROM user_range WHERE layer IN (SELECT DISTINCT layer FROM placed)
                                     AND global_tid IN (SELECT DISTINCT lender_tid FROM pass)) AS u
    ASOF JOIN pass AS pa ON pa.lender_tid = u.global_tid AND pa.start_ns >= u.start_ns
    GROUP BY pa.pid, pa.run_no, u.layer
),
inferred AS (
    SELECT o.kind_no, o.op_id, l.range_id, o.confidence, o.lender_id
    FROM placed_op AS o JOIN pass_layer AS l USING (pid, run_no, layer_no)
)
SELECT CAST(a.op_kind AS VARCHAR) AS op_kind, a.op_id, a.direction,
       COALESCE(i.range_id, a.layer_range_id) AS layer_range_id,
       a.op_range_id, a.eval_range_id, a.shapes_range_id, a.seq,
       CASE WHEN i.range_id IS NOT NULL
            THEN CAST('inferred' AS ENUM('seq', 'annotated', 'own', 'borrowed', 'none', 'inferred', 'rerun'))
            ELSE a.link END AS link,
       i.confidence, i.lender_id AS borrowed_range_id
FROM attributed AS a
LEFT JOIN inferred AS i ON i.kind_no = a.kind_no AND i.op_id = a.op_id;  -- no ORDER BY: readers order (a 1.7M-row sort)
