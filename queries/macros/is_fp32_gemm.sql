-- nsysql: macros.is_fp32_gemm v1
-- purpose: Whether a kernel's demangled name is an fp32 matrix multiplication or convolution off the tensor cores: `is_fp32_gemm(kernel_name)`, the kernel rule of findings.fp32_gemm (its notes give the three tests).
-- requires: none
-- params: none
-- notes: A scalar macro: read by findings.fp32_gemm and analysis._cp_fp32_kernels (the kernels whose time the
--   finding's predicted gain scales), over distinct kernel names only.
-- columns:
--   is_fp32_gemm | BOOLEAN | flag
CREATE OR REPLACE TEMP MACRO is_fp32_gemm(kernel_name) AS
    regexp_matches(kernel_name, 'gemm|gemv|xmma|cutlass|splitkreduce|convolve|conv([^e]|$)|winograd|fft2d|fprop|dgrad|wgrad', 'i')
      AND NOT (regexp_matches(kernel_name, 'hmma|wgmma|gmma|imma|[hsi](884|1688|16816|8816|16832)|tensorop|tensor[0-9]+x[0-9]+x[0-9]+|nvjet|warpgroup|tf32|bf16|f16|fp16|e4m3|e5m2|fp8|int8', 'i')
               AND NOT regexp_matches(kernel_name, 'ffma|simt|sgemm|dgemm', 'i'))
      AND regexp_matches(kernel_name, 'f32f32|sgemm|ffma|float|_s1688|fp32', 'i')
      AND NOT regexp_matches(kernel_name, 'bf16|bfloat16|f16|fp16|half|tf32|double|dgemm|int8|i8', 'i');
