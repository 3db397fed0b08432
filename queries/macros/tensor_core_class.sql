-- nsysql: macros.tensor_core_class v1
-- purpose: Whether a kernel's demangled name says it runs on tensor cores: `tensor_core_class(kernel_name)` is 'yes', 'no' or 'unknown' (a matrix multiplication or convolution whose precision the name does not give).
-- requires: none
-- params: none
-- notes: A scalar macro, read by analysis.overview_gpus, analysis.efficiency and macros.is_fp32_gemm. The first of
--   these tests that matches (any case) decides:
--   1. 'no', a CUDA-core (SIMT) kernel: ffma|simt|sgemm|dgemm|cgemm|zgemm|hgemm|scudnn|gemv|gemmsn|f32f32_f32f32|
--      cf32cf32 (cuBLAS sm80_xmma_gemm_f32f32_f32f32_f32_..._ffma_..., cutlass_80_simt_sgemm_*, volta_sgemm_*,
--      cudnn implicit_convolve_sgemm<float>, gemv2T_kernel_val, gemmSN_NN_kernel). An xmma type tuple
--      f32f32_f32f32 (A and B fp32, computed in fp32) is fp32 on CUDA cores; f32f32_tf32f32 is not.
--   2. 'no', fp32 attention kernels of GPUs before sm80 (fmha|flash ... f32 ... sm50|sm70|sm75): CUTLASS's
--      memory-efficient attention runs fp32 on CUDA cores there, on tensor cores (3xTF32) from sm80 on.
--   3. 'yes', a tensor-core kernel: hmma|wgmma|gmma|imma|dmma|[hsi](884|1688|16816|8816|16832|161616)|tensorop|
--      tensor[0-9]+x[0-9]+x[0-9]+|wmma|warpgroup|nvjet|tf32|flash|fmha (cuBLAS's nvjet_sm90_tst_*, cutlass
--      *_tensorop_*, cutlass_80_wmma_tensorop_*, CUTLASS templates with MmaTensorOp, cuDNN's
--      sm80_xmma_*_tf32f32_tf32f32_f32_..._tensor16x8x8_*, sm90_xmma_*_f32f32_tf32f32_f32_*_warpgroupsize*,
--      cudnn sdpa flash_*_wgmma_*, PyTorch's fmha_cutlassF/B sm80), or an xmma kernel with a low-precision type in its
--      tuple: xmma ... bf16|f16|e4m3|e5m2|int8|i8i8 (sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_*).
--   4. 'no', helpers around a GEMM or a convolution that do no matrix multiplication: splitkreduce|reducesplitk|
--      init_device_workspace|computeoffsets|compute_gemm_pointers|im2col|fft (cuBLASLt splitKreduce_kernel,
--      cutlass ReduceSplitK, cuDNN fft2d_r2c_*).
--   5. A GEMM or convolution: gemm|xmma|cutlass|convolve|conv([^e]|$)|winograd|fprop|dgrad|wgrad|matmul|
--      triton_tem: 'no' when the name gives an fp32 or fp64 element type (float|double|f32|fp32|f64|fp64: cuDNN's
--      dgrad_engine<float>, winogradForwardData4x4<float, float>), else 'unknown' (Triton templates, a GEMM library
--      that names no type).
--   6. Anything else (elementwise, reductions, copies, communication): 'no'.
-- columns:
--   tensor_core_class | VARCHAR | text (yes, no or unknown)
CREATE OR REPLACE TEMP MACRO tensor_core_class(kernel_name) AS
    CASE WHEN regexp_matches(kernel_name, 'ffma|simt|sgemm|dgemm|cgemm|zgemm|hgemm|scudnn|gemv|gemmsn|f32f32_f32f32|cf32cf32', 'i')
              THEN 'no'
         WHEN regexp_matches(kernel_name, '(fmha|flash).*f32.*sm(50|70|75)', 'i') THEN 'no'
         WHEN regexp_matches(kernel_name, 'hmma|wgmma|gmma|imma|dmma|[hsi](884|1688|16816|8816|16832|161616)|tensorop|tensor[0-9]+x[0-9]+x[0-9]+|wmma|warpgroup|nvjet|tf32|flash|fmha', 'i')
              OR regexp_matches(kernel_name, 'xmma.*(bf16|f16|e4m3|e5m2|int8|i8i8)', 'i') THEN 'yes'
         WHEN regexp_matches(kernel_name, 'splitkreduce|reducesplitk|init_device_workspace|computeoffsets|compute_gemm_pointers|im2col|fft', 'i')
              THEN 'no'
         WHEN regexp_matches(kernel_name, 'gemm|xmma|cutlass|convolve|conv([^e]|$)|winograd|fprop|dgrad|wgrad|matmul|triton_tem', 'i')
              THEN CASE WHEN regexp_matches(kernel_name, 'float|double|f32|fp32|f64|fp64', 'i') THEN 'no' ELSE 'unknown' END
         ELSE 'no' END;
