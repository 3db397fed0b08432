-- nsysql: normalize.nsys3.nvtx_context v6
-- purpose: For every NVTX range, what encloses it on its thread (itself included): the innermost user range, the innermost PyTorch op marker, the innermost autograd backward evaluation, the innermost `... [backward]` range of nsysql.annotate, and whether an optimizer, backward or NCCL range is open. Kernel attribution reads it through the launching call's innermost range.
-- requires: nvtx_node, nvtx_name
-- params: none
-- built: on first use (derived from nvtx_node and nvtx_name; read by attribution, steps and findings)
-- notes: Propagated top-down over the nesting tree, one recursive step per depth level. Each step joins
--   on depth as well as parent, so DuckDB filters nvtx_range to that level while scanning (a dynamic join
--   filter) instead of hashing every range at every level: the cost is linear in ranges, never a self-join.
--   What each range's text says (op marker, user range, optimizer, ...) is decided once per name (nvtx_name).
--   No ORDER BY: readers join by range_id.
--   User range = a range that is neither a PyTorch emit_nvtx op marker (nvtx_range.is_op_marker) nor a
--   library's internal range: domains CCCL (CUB/Thrust, e.g. `cub::DeviceRadixSort` inside an embedding
--   backward), NCCL (and `com.nvidia.nccl...`), cuBLAS, cuBLASLt, cuDNN, cuFFT, cuSPARSE, cuSOLVER, NVSHMEM,
--   CUTLASS, nvFuser, TensorRT's API ranges (`ExecutionContext::enqueueV3`), and nvFuser's ranges in the default
--   domain: one named like its entry points (nvtx_name.opens_internals) and every default-domain range inside one.
--   Library ranges are transparent: they are no layer and take their context from what encloses them.
--   TensorRT's layer ranges are user ranges (layers) and library ranges at once (is_library: never a step).
--   Optimizer: a user range whose text names an optimizer step (nvtx_name.is_optim, macros.is_optimizer_name: in
--   any case, containing `optim`, or the whole text `opt`, `sgd` or `adam...` with `step`/`zero_grad` around it) or
--   an `Optimizer.step#...` / `Optimizer.zero_grad#...` marker. Backward: an
--   `autograd::engine::evaluate_function: ...` marker, or a user range whose text contains `backward`.
--   Annotated backward range: a user range whose text ends with ` [backward]` (nsysql.annotate names a
--   module's backward `model/layers.3/attn [backward]`, see docs/annotate.md).
--   NCCL: a range of NCCL's own NVTX domain `NCCL` (ncclAllReduce, ncclGroupEnd, ...), as macros.comm_kernels
--   reads it: a CUDA call whose innermost range is in_nccl launches communication (gpu_op_attribution).
--   Ranges that end on another thread have no nesting (see nvtx_range) and get only their own attributes.
-- columns:
--   range_id | BIGINT | id
--   is_user | BOOLEAN | flag (the range itself is a user range)
--   is_library | BOOLEAN | flag (a library's own range, TensorRT's layer ranges included: never a step)
--   user_range_id | BIGINT | id (innermost user range, itself if it is one)
--   op_range_id | BIGINT | id (innermost op marker other than the evaluate_function wrapper, itself if it is one)
--   eval_range_id | BIGINT | id (innermost `autograd::engine::evaluate_function: ...` marker)
--   annotated_range_id | BIGINT | id (innermost user range named `... [backward]`, itself if it is one)
--   in_optim | BOOLEAN | flag
--   in_backward | BOOLEAN | flag
--   in_nccl | BOOLEAN | flag (the range or one enclosing it is of NCCL's domain `NCCL`)
CREATE TABLE nvtx_context AS
WITH RECURSIVE
kinds AS NOT MATERIALIZED (  -- inlined, so that each level's depth filter reaches the nvtx_node scan
    SELECT r.range_id, r.parent_id, r.depth, n.is_user, n.is_op_marker AND NOT n.is_eval AS is_op, n.is_eval,
           n.is_optim AS optim, n.is_backward AS backward, n.is_annotated, n.is_library, n.opens_internals,
           n.domain = '' AS default_domain, n.domain = 'NCCL' AS nccl
    FROM nvtx_node AS r JOIN nvtx_name AS n USING (name_id)
),
ctx(range_id, depth, is_user, is_library, in_internals, user_range_id, op_range_id, eval_range_id,
    annotated_range_id, in_optim, in_backward, in_nccl) AS (
    SELECT range_id, depth, is_user, is_library, opens_internals, CASE WHEN is_user THEN range_id END,
           CASE WHEN is_op THEN range_id END,
           CASE WHEN is_eval THEN range_id END, CASE WHEN is_annotated THEN range_id END, optim, backward, nccl
    FROM kinds WHERE parent_id IS NULL
    UNION ALL
    SELECT c.range_id, c.depth,
           c.is_user AND NOT (p.in_internals AND c.default_domain),  -- inside nvFuser's: nvFuser's, no user range
           c.is_library OR (p.in_internals AND c.default_domain),
           c.opens_internals OR p.in_internals,
           CASE WHEN c.is_user AND NOT (p.in_internals AND c.default_domain) THEN c.range_id ELSE p.user_range_id END,
           CASE WHEN c.is_op THEN c.range_id ELSE p.op_range_id END,
           CASE WHEN c.is_eval THEN c.range_id ELSE p.eval_range_id END,
           CASE WHEN c.is_annotated THEN c.range_id ELSE p.annotated_range_id END,
           c.optim OR p.in_optim, c.backward OR p.in_backward, c.nccl OR p.in_nccl
    FROM kinds AS c JOIN ctx AS p ON c.parent_id = p.range_id AND c.depth = p.depth + 1
)
SELECT range_id, is_user, is_library, user_range_id, op_range_id, eval_range_id, annotated_range_id, in_optim,
       in_backward, in_nccl
FROM ctx;
