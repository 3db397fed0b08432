-- nsysql: macros.is_fp32_gemm v3
-- purpose: Whether a kernel's demangled name is an fp32 matrix multiplication or convolution off the tensor cores: `is_fp32_gemm(kernel_name)`, the kernel rule of findings.fp32_gemm (its notes give the three tests).
-- requires: macros.tensor_core_class
-- params: none
-- notes: A scalar macro: read by findings.fp32_gemm and analysis._cp_fp32_kernels (the kernels whose time the
--   finding's predicted gain scales), over distinct kernel names only. A kernel on tensor cores by
--   macros.tensor_core_class (TF32 included: sm90_xmma_*_f32f32_tf32f32_*, cutlass_tensorop_s1688*_tf32_*), or of
--   unknown precision, is not one.
-- columns:
--   is_fp32_gemm | BOOLEAN | flag
CREATE OR REPLACE TEMP MACRO is_fp32_gemm(kernel_name) AS
    regexp_matches(kernel_name, 'gemm|xmma|cutlass|convolve|conv([^e]|$)|winograd|fft2d|fprop|dgrad|wgrad', 'i')
      AND NOT regexp_matches(kernel_name, 'gemv|splitkreduce', 'i')  -- memory-bound products, a reduction helper
      AND tensor_core_class(kernel_name) = 'no'
      AND regexp_matches(kernel_name, 'f32f32|sgemm|ffma|float|_s1688|fp32', 'i')
      AND NOT regexp_matches(kernel_name, 'bf16|bfloat16|f16|fp16|half|tf32|double|dgemm|int8|i8', 'i');
