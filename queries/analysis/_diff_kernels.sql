-- nsysql: analysis._diff_kernels v1
-- purpose: One side of `nsysql diff --by kernel`: kernel time per kernel name, or per base name so that the same work in another dtype or tile shape matches (fp32 vs bf16 GEMMs).
-- requires: kernel
-- params: match VARCHAR default 'exact' (exact: full demangled name; base: base name, below)
-- notes: Base name: GEMM/GEMV/convolution library kernels (cuBLAS, cuBLASLt, CUTLASS, cuDNN) are one family
--   each whatever their dtype, tile, layout or library: 'conv*' when the full name matches
--   convolution|convolve|conv[123]d|fprop|dgrad|wgrad|implicit_gemm|winograd, else 'gemv*' for gemv, else
--   'gemm*' for gemm|nvjet|wgmma|hmma|imma|s1688|s16816|h1688|h16816|i8816|tensorop|xmma|cublas|splitkreduce
--   (so sm80_xmma_gemm_f32f32_..._ffma_..., cutlass::Kernel2<cutlass_80_simt_sgemm_...>,
--   nvjet_sm90_tst_64x8_..._NNT and cuBLASLt's split-K reduction all become 'gemm*'); case-insensitive.
--   Any other kernel: its short name (template arguments, hence dtypes, already dropped by nsys) without the
--   '_'-separated tokens that name a dtype (f16 bf16 fp16 f32 fp32 tf32 f64 half float int8 e4m3 e5m2) or a
--   tile (128x64, 64x64x8). Limits: a GEMM family hides a change of GEMM mix inside it; two different custom
--   kernels with the same short name merge.
-- columns:
--   name | VARCHAR | text (kernel name or base name)
--   count | BIGINT | count (kernel launches)
--   total_ns | BIGINT | ns (sum of kernel durations)
WITH named AS (
    SELECT CASE
             WHEN $match = 'exact' THEN kernel_name
             WHEN regexp_matches(lower(kernel_name), 'convolution|convolve|conv[123]d|fprop|dgrad|wgrad|implicit_gemm|winograd') THEN 'conv*'
             WHEN contains(lower(kernel_name), 'gemv') THEN 'gemv*'
             WHEN regexp_matches(lower(kernel_name),
                                 'gemm|nvjet|wgmma|hmma|imma|s1688|s16816|h1688|h16816|i8816|tensorop|xmma|cublas|splitkreduce') THEN 'gemm*'
             ELSE array_to_string(list_filter(string_split(COALESCE(short_name, kernel_name), '_'),
                      t -> NOT regexp_matches(lower(t), '^(f16|bf16|fp16|f32|fp32|tf32|f64|half|float|int8|e4m3|e5m2|[0-9]+(x[0-9]+)+)$')), '_')
           END AS name,
           end_ns - start_ns AS duration_ns
    FROM kernel
)
SELECT name, COUNT(*) AS count, CAST(SUM(duration_ns) AS BIGINT) AS total_ns
FROM named
GROUP BY name
ORDER BY total_ns DESC, name;
