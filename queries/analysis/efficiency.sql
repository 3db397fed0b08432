-- nsysql: analysis.efficiency v3
-- purpose: Achieved math and memory throughput per PyTorch op (with its input shapes) or per layer: FLOPs of matmuls and convolutions and bytes of elementwise ops from the shapes emit_nvtx(record_shapes=True) recorded, over the kernel time those ops took, and the share of matmul time spent in tensor-core kernels.
-- requires: kernel, gpu_op, nvtx_range, nvtx_ancestor, gpu_op_attribution, user_range, macros.tensor_core_class
-- params: by VARCHAR default 'op' (op: one row per direction, op and input shapes; layer: one row per direction and layer)
-- notes: Only kernels launched inside a PyTorch op marker count (no markers, e.g. warm-up or --no-op-ranges: no rows).
--   An op instance is the innermost op marker around a kernel's launch (gpu_op_attribution.op_range_id: aten::mm inside
--   MmBackward0, aten::addmm inside aten::linear); its kernel time is the sum of the durations of the kernels it
--   launched. FLOPs (multiply-add = 2), from the recorded input shapes s1, s2, ...:
--     aten::mm [M,K]x[K,N] 2MKN; aten::addmm (bias, [M,K], [K,N]) 2MKN (the bias add is not counted);
--     aten::bmm [B,M,K]x[B,K,N] 2BMKN; aten::baddbmm (in, [B,M,K], [B,K,N]) 2BMKN; aten::mv [M,K]x[K] 2MK;
--     aten::addmv (in, [M,K], [K]) 2MK; aten::matmul [..,M,K]x[..,K,N] 2*batch*MKN (batch = the larger of the two
--     batch products); aten::linear ([..,K], [N,K]) 2*prod(..)*K*N; a convolution (aten::convolution,
--     _convolution, cudnn_convolution, conv1d/2d/3d, ...) 2*prod(output)*prod(weight dims after the first), the output shape found
--     as the input of a later op whose input_op_ids name this op or an op marker around it (NULL when none);
--     aten::convolution_backward (grad_out, input, weight, ...) 4*prod(grad_out)*prod(weight dims after the first) (assumes both
--     input and weight gradients; output_mask is not recorded). A matmul/linear/convolution that encloses
--     another counted op instance gets no FLOPs of its own (no double count).
--   Bytes (elementwise ops only: add sub mul div neg exp log sqrt rsqrt pow tanh sigmoid relu gelu silu where
--   masked_fill clamp(_min/_max) addcmul addcdiv lerp abs sign maximum minimum eq ne lt le gt ge reciprocal sin cos
--   square rsub their in-place `_` forms, *_backward of the activations, native_dropout(_backward), and fill_,
--   zero_, copy_): element size * (elements of all tensor inputs + elements of the largest input as the output);
--   copy_ reads and writes its source's elements once each, fill_ and zero_ only write. Scalars count nothing.
--   The element size is not recorded: it is taken from the op's kernel names (BFloat16/Half -> 2 bytes, double
--   -> 8, else 4), so mixed-dtype ops (casts) are approximate. _foreach_* ops (optimizers) record their tensor
--   lists flattened, without the lists' boundaries: no bytes.
--   Tensor cores: a kernel that macros.tensor_core_class calls 'yes' (TF32 included). Limits: a name-based guess;
--   kernels of unknown precision (custom, Triton) count as not tensor-core; cuBLAS's fp32
--   `sm80_xmma_gemm_f32f32_f32f32_..._ffma_...` kernels are correctly not tensor-core.
--   Throughputs use only the kernel time of instances whose FLOPs (bytes) are known: tflops = flops / flop_ns / 1e3,
--   gb_per_s = bytes / byte_ns; tensor_core_pct is the share of flop_ns (the matmuls' and convolutions' own
--   kernels, so a wrapper's copy kernel is not matmul time) spent in tensor-core kernels.
-- columns:
--   direction | VARCHAR | fprop, bprop, optim, comm or other
--   name | VARCHAR | text (by op: the aten op; by layer: the layer path)
--   params | VARCHAR | text (by op: input shapes as recorded, a list longer than 160 characters cut to 120 + `… (N inputs)`; by layer: NULL)
--   instances | BIGINT | count (op instances)
--   kernels | BIGINT | count
--   kernel_ns | BIGINT | ns (sum of the instances' kernel durations)
--   gflop | DOUBLE | 10^9 floating-point operations | 3
--   flop_ns | BIGINT | ns (kernel time of the instances with known FLOPs)
--   tflops | DOUBLE | 10^12 FLOP/s achieved | 2
--   bytes | BIGINT | bytes (elementwise traffic, estimated)
--   byte_ns | BIGINT | ns (kernel time of the instances with known bytes)
--   gb_per_s | DOUBLE | 10^9 bytes/s achieved | 1
--   tensor_core_pct | DOUBLE | pct of flop_ns (matmul and convolution kernel time) in tensor-core kernels | 1
WITH
kernel_op AS (  -- every kernel launched inside an op marker, with the marker and its attribution
    SELECT k.kernel_id, k.end_ns - k.start_ns AS duration_ns, a.op_range_id, CAST(a.direction AS VARCHAR) AS direction,
           COALESCE(u.layer, '?') AS layer,
           tensor_core_class(CAST(k.kernel_name AS VARCHAR)) = 'yes' AS is_tensor_core,  -- macros/tensor_core_class.sql
           CASE WHEN regexp_matches(k.kernel_name, 'BFloat16|bfloat16|Half|__half') THEN 2
                WHEN contains(k.kernel_name, 'double') THEN 8 ELSE 4 END AS elem_bytes
    FROM kernel AS k
    JOIN gpu_op_attribution AS a ON a.op_kind = 'kernel' AND a.op_id = k.kernel_id
    LEFT JOIN user_range AS u ON u.range_id = a.layer_range_id
    WHERE a.op_range_id IS NOT NULL
),
instance AS (
    SELECT op_range_id, COUNT(*) AS kernels, SUM(duration_ns) AS kernel_ns,
           COALESCE(SUM(duration_ns) FILTER (WHERE is_tensor_core), 0) AS tc_ns,
           MAX(elem_bytes) AS elem_bytes, mode(direction) AS direction, mode(layer) AS layer
    FROM kernel_op GROUP BY op_range_id
),
parsed AS (
    SELECT i.*, r.pid, split_part(r.text, ',', 1) AS op,
           regexp_extract(r.text, 'sizes = (\[.*?\]\])', 1) AS params,
           TRY_CAST(regexp_extract(r.text, 'sizes = (\[.*?\]\])', 1) AS BIGINT[][]) AS s
    FROM instance AS i JOIN nvtx_range AS r ON r.range_id = i.op_range_id
),
classified AS (
    SELECT *,
           CASE WHEN op IN ('aten::mm', 'aten::addmm', 'aten::bmm', 'aten::baddbmm', 'aten::mv', 'aten::addmv',
                            'aten::matmul', 'aten::linear') THEN 'matmul'
                WHEN regexp_matches(op, '^aten::(_?convolution|cudnn_convolution|miopen_convolution|mkldnn_convolution|conv[123]d|cudnn_convolution_transpose|conv_transpose[123]d)$') THEN 'conv'
                WHEN regexp_matches(op, '^aten::(cudnn_)?convolution_backward$') THEN 'conv_backward'
                WHEN regexp_matches(op, '^aten::(add|sub|mul|div|neg|exp|log|sqrt|rsqrt|pow|tanh|sigmoid|relu|gelu|silu|where|masked_fill|clamp|clamp_min|clamp_max|addcmul|addcdiv|lerp|abs|sign|maximum|minimum|eq|ne|lt|le|gt|ge|reciprocal|sin|cos|square|rsub|threshold_backward|gelu_backward|silu_backward|sigmoid_backward|tanh_backward|native_dropout|native_dropout_backward)_?$') THEN 'elementwise'
                WHEN op IN ('aten::fill_', 'aten::zero_') THEN 'fill'
                WHEN op = 'aten::copy_' THEN 'copy'
                ELSE 'other' END AS kind
    FROM parsed
),
nested AS (  -- counted instances inside another instance: the outer one gets no FLOPs
    SELECT DISTINCT a.ancestor_id AS op_range_id
    FROM classified AS inner_op
    JOIN nvtx_ancestor AS a ON a.range_id = inner_op.op_range_id AND a.distance > 0
    WHERE inner_op.kind IN ('matmul', 'conv', 'conv_backward')
),
conv_ids AS (  -- op ids of each convolution instance and of the op markers around it
    SELECT c.op_range_id, c.pid, TRY_CAST(regexp_extract(r.text, 'op_id = ([0-9]+)', 1) AS BIGINT) AS op_id
    FROM classified AS c
    JOIN nvtx_ancestor AS a ON a.range_id = c.op_range_id
    JOIN nvtx_range AS r ON r.range_id = a.ancestor_id
    WHERE c.kind = 'conv' AND r.is_op_marker
),
consumed AS (  -- (pid, producing op id) -> shape of that output as a later op's input
    SELECT pid, TRY_CAST(regexp_extract(ref, '\(([0-9]+),0\)', 1) AS BIGINT) AS op_id,
           TRY_CAST(regexp_extract(text, 'sizes = (\[.*?\]\])', 1) AS BIGINT[][])[pos] AS shape
    FROM (SELECT pid, text,
                 unnest(regexp_extract_all(text, '\(-?[0-9]+,-?[0-9]+\)')) AS ref,
                 generate_subscripts(regexp_extract_all(text, '\(-?[0-9]+,-?[0-9]+\)'), 1) AS pos
          FROM nvtx_range
          WHERE is_op_marker AND contains(text, 'input_op_ids') AND EXISTS (SELECT 1 FROM conv_ids))
    WHERE ends_with(ref, ',0)')
),
conv_out AS (
    SELECT ci.op_range_id, arg_max(cs.shape, len(cs.shape)) AS out_shape
    FROM conv_ids AS ci JOIN consumed AS cs ON cs.pid = ci.pid AND cs.op_id = ci.op_id
    WHERE len(cs.shape) > 0
    GROUP BY ci.op_range_id
),
costed AS (
    SELECT c.*,
           CASE WHEN n.op_range_id IS NOT NULL THEN NULL
                WHEN c.op = 'aten::mm' AND len(c.s[1]) = 2 AND len(c.s[2]) = 2
                     THEN 2.0 * c.s[1][1] * c.s[1][2] * c.s[2][2]
                WHEN c.op = 'aten::addmm' AND len(c.s[2]) = 2 AND len(c.s[3]) = 2
                     THEN 2.0 * c.s[2][1] * c.s[2][2] * c.s[3][2]
                WHEN c.op = 'aten::bmm' AND len(c.s[1]) = 3 AND len(c.s[2]) = 3
                     THEN 2.0 * c.s[1][1] * c.s[1][2] * c.s[1][3] * c.s[2][3]
                WHEN c.op = 'aten::baddbmm' AND len(c.s[2]) = 3 AND len(c.s[3]) = 3
                     THEN 2.0 * c.s[2][1] * c.s[2][2] * c.s[2][3] * c.s[3][3]
                WHEN c.op = 'aten::mv' AND len(c.s[1]) = 2 THEN 2.0 * c.s[1][1] * c.s[1][2]
                WHEN c.op = 'aten::addmv' AND len(c.s[2]) = 2 THEN 2.0 * c.s[2][1] * c.s[2][2]
                WHEN c.op = 'aten::matmul' AND len(c.s[1]) >= 2 AND len(c.s[2]) >= 2
                     THEN 2.0 * GREATEST(COALESCE(list_product(c.s[1][1:-3]), 1), COALESCE(list_product(c.s[2][1:-3]), 1))
                          * c.s[1][-2] * c.s[1][-1] * c.s[2][-1]
                WHEN c.op = 'aten::linear' AND len(c.s[1]) >= 1 AND len(c.s[2]) = 2
                     THEN 2.0 * COALESCE(list_product(c.s[1][1:-2]), 1) * c.s[1][-1] * c.s[2][1]
                WHEN c.kind = 'conv' AND len(c.s[2]) >= 3
                     THEN 2.0 * list_product(co.out_shape) * list_product(c.s[2][2:])
                WHEN c.kind = 'conv_backward' AND len(c.s[1]) >= 3 AND len(c.s[3]) >= 3
                     THEN 4.0 * list_product(c.s[1]) * list_product(c.s[3][2:])
           END AS flops,
           CASE c.kind
                WHEN 'elementwise' THEN c.elem_bytes * (
                     list_sum(list_transform(c.s, x -> CASE WHEN len(x) = 0 THEN 0 ELSE list_product(x) END))
                     + list_max(list_transform(c.s, x -> CASE WHEN len(x) = 0 THEN 0 ELSE list_product(x) END)))
                WHEN 'copy' THEN CASE WHEN len(c.s[2]) > 0 THEN 2.0 * c.elem_bytes * list_product(c.s[2]) END
                WHEN 'fill' THEN CASE WHEN len(c.s[1]) > 0 THEN 1.0 * c.elem_bytes * list_product(c.s[1]) END
           END AS traffic
    FROM classified AS c
    LEFT JOIN nested AS n ON n.op_range_id = c.op_range_id
    LEFT JOIN conv_out AS co ON co.op_range_id = c.op_range_id
),
grouped AS (
    SELECT COALESCE(direction, 'other') AS direction,
           CASE WHEN $by = 'layer' THEN COALESCE(layer, '?') ELSE op END AS name,
           CASE WHEN $by = 'layer' THEN NULL
                WHEN length(params) > 160 THEN left(params, 120) || '… (' || len(s) || ' inputs)'
                ELSE params END AS params,
           COUNT(*) AS instances, SUM(kernels) AS kernels, SUM(kernel_ns) AS kernel_ns,
           -- whole numbers summed as integers: a sum of doubles past 2^53 depends on the threads' order
           SUM(CAST(flops AS HUGEINT)) AS flops, SUM(kernel_ns) FILTER (WHERE flops IS NOT NULL) AS flop_ns,
           SUM(CAST(traffic AS HUGEINT)) AS traffic, SUM(kernel_ns) FILTER (WHERE traffic IS NOT NULL) AS byte_ns,
           SUM(tc_ns) FILTER (WHERE flops IS NOT NULL) AS flop_tc_ns
    FROM costed
    GROUP BY ALL
)
SELECT direction, name, params, instances, CAST(kernels AS BIGINT) AS kernels, CAST(kernel_ns AS BIGINT) AS kernel_ns,
       flops / 1e9 AS gflop, CAST(flop_ns AS BIGINT) AS flop_ns, flops / NULLIF(flop_ns, 0) / 1e3 AS tflops,
       CAST(round(traffic) AS BIGINT) AS bytes, CAST(byte_ns AS BIGINT) AS byte_ns,
       traffic / NULLIF(byte_ns, 0) AS gb_per_s,
       100.0 * flop_tc_ns / NULLIF(flop_ns, 0) AS tensor_core_pct
FROM grouped
ORDER BY kernel_ns DESC, direction, name, params;
