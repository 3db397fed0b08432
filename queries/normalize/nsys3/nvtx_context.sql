-- nsysql: normalize.nsys3.nvtx_context v1
-- purpose: For every NVTX range, what encloses it on its thread (itself included): the innermost user range, the innermost PyTorch op marker, the innermost autograd backward evaluation, and whether an optimizer or backward range is open. Kernel attribution reads it through the launching call's innermost range.
-- requires: nvtx_range
-- params: none
-- notes: Propagated top-down over the nesting tree (one recursive step per depth level, each a hash join),
--   so the cost is linear in ranges times depth, never a range self-join.
--   User range = a range that is neither a PyTorch emit_nvtx op marker (nvtx_range.is_op_marker) nor a
--   library's own range: domains CCCL (CUB/Thrust, e.g. `cub::DeviceRadixSort` inside an embedding
--   backward), NCCL, cuBLAS, cuBLASLt, cuDNN, cuFFT, cuSPARSE, cuSOLVER, NVSHMEM, TensorRT, CUTLASS.
--   Library ranges are transparent: they are no layer and take their context from what encloses them.
--   Optimizer: a user range whose text contains `optim` (optimizer_step, optimizer.step, ...) or an
--   `Optimizer.step#...` / `Optimizer.zero_grad#...` marker. Backward: an
--   `autograd::engine::evaluate_function: ...` marker, or a user range whose text contains `backward`.
--   Ranges that end on another thread have no nesting (see nvtx_range) and get only their own attributes.
-- columns:
--   range_id | BIGINT | id
--   is_user | BOOLEAN | flag (the range itself is a user range)
--   user_range_id | BIGINT | id (innermost user range, itself if it is one)
--   op_range_id | BIGINT | id (innermost op marker other than the evaluate_function wrapper, itself if it is one)
--   eval_range_id | BIGINT | id (innermost `autograd::engine::evaluate_function: ...` marker)
--   in_optim | BOOLEAN | flag
--   in_backward | BOOLEAN | flag
CREATE TABLE nvtx_context AS
WITH RECURSIVE
kinds AS (
    SELECT *, NOT is_op_marker AND domain NOT IN ('CCCL', 'NCCL', 'cuBLAS', 'cuBLASLt', 'cuDNN', 'cuFFT',
                                                  'cuSPARSE', 'cuSOLVER', 'NVSHMEM', 'TensorRT', 'CUTLASS') AS is_user
    FROM nvtx_range
),
own AS MATERIALIZED (
    SELECT range_id, parent_id, end_global_tid, is_user,
           CASE WHEN is_user THEN range_id END AS user_id,
           CASE WHEN is_op_marker AND NOT starts_with(text, 'autograd::engine::evaluate_function: ')
                THEN range_id END AS op_id,
           CASE WHEN starts_with(text, 'autograd::engine::evaluate_function: ') THEN range_id END AS eval_id,
           (is_user AND contains(lower(text), 'optim'))
             OR starts_with(text, 'Optimizer.step#') OR starts_with(text, 'Optimizer.zero_grad#') AS optim,
           (is_user AND contains(lower(text), 'backward'))
             OR starts_with(text, 'autograd::engine::evaluate_function: ') AS backward
    FROM kinds
),
ctx(range_id, is_user, user_range_id, op_range_id, eval_range_id, in_optim, in_backward) AS (
    SELECT range_id, is_user, user_id, op_id, eval_id, optim, backward
    FROM own WHERE parent_id IS NULL
    UNION ALL
    SELECT c.range_id, c.is_user, COALESCE(c.user_id, p.user_range_id), COALESCE(c.op_id, p.op_range_id),
           COALESCE(c.eval_id, p.eval_range_id), c.optim OR p.in_optim, c.backward OR p.in_backward
    FROM own AS c JOIN ctx AS p ON c.parent_id = p.range_id
)
SELECT * FROM ctx ORDER BY range_id;
