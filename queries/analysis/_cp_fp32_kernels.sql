-- nsysql: analysis._cp_fp32_kernels v3
-- purpose: The kernel names findings.fp32_gemm counts (macros.is_fp32_gemm): the kernels whose time its predicted gain scales down (nsysql/answers/what_if.py).
-- requires: kernel, macros.is_fp32_gemm
-- params: none
-- columns:
--   kernel_name | VARCHAR | text
SELECT kernel_name  -- the distinct names of the stored ENUM first: one text per name, not per kernel
FROM (SELECT DISTINCT CAST(kernel_name AS VARCHAR) AS kernel_name FROM (SELECT DISTINCT kernel_name FROM kernel_int))
WHERE is_fp32_gemm(kernel_name)
ORDER BY kernel_name;
