-- nsysql: normalize.nsys3.gpu_op_label v3
-- purpose: gpu_op_attribution in words: per GPU op its direction, layer path, PyTorch op or autograd node, and recorded input shapes, resolved from the ids the table stores; a view, so the texts are read only by queries that print them.
-- requires: gpu_op_attribution, user_range, nvtx_range
-- params: none
-- built: on first use (a view over gpu_op_attribution)
-- notes: op = the autograd node named by the evaluate_function marker for backward kernels
--   (`autograd::engine::evaluate_function: AddmmBackward0` -> AddmmBackward0), else the first field of the
--   innermost op marker (`aten::addmm, seq = 3, ...` -> aten::addmm). params = the `sizes = ...` field of
--   the marker holding the shapes (for backward kernels the forward op's). Aggregates over layers should
--   join user_range directly: this view always joins the marker texts.
-- columns:
--   op_kind | VARCHAR | kernel, memcpy, memset or graph
--   op_id | BIGINT | id
--   direction | VARCHAR | fprop, bprop, optim, comm or other
--   layer | VARCHAR | text ('?' when unknown)
--   op | VARCHAR | text
--   params | VARCHAR | text
--   seq | BIGINT | id
CREATE VIEW gpu_op_label AS
SELECT a.op_kind, a.op_id, CAST(a.direction AS VARCHAR) AS direction, COALESCE(u.layer, '?') AS layer,
       CASE WHEN a.eval_range_id IS NOT NULL
            THEN regexp_extract(ev.text, '^autograd::engine::evaluate_function: (.*?)(, op_id = [0-9]+)?$', 1)
            ELSE split_part(om.text, ', ', 1) END AS op,
       NULLIF(split_part(split_part(sm.text, ', sizes = ', 2), ', input_op_ids = ', 1), '') AS params,
       a.seq
FROM gpu_op_attribution AS a
LEFT JOIN user_range AS u ON u.range_id = a.layer_range_id
LEFT JOIN nvtx_range AS om ON om.range_id = a.op_range_id
LEFT JOIN nvtx_range AS ev ON ev.range_id = a.eval_range_id
LEFT JOIN nvtx_range AS sm ON sm.range_id = a.shapes_range_id;
