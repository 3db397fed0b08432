-- nsysql: macros.is_nccl_name v2
-- purpose: Whether a kernel's demangled name is one of NCCL's: `is_nccl_name(kernel_name)` is true when it contains `nccl` in any case (ncclDevKernel_*, ncclKernel_*), or is NCCL's one-rank reduction kernel (`<unnamed>::oneRankReduce<FuncPreMulSum<float>>`, a collective of a communicator of one rank).
-- requires: none
-- params: none
-- notes: A scalar macro (inlined where it is called): the name half of the communication-kernel rule, read by
--   macros.comm_kernels and, over the distinct kernel names only, by analysis._comm_present and
--   normalize.nsys3._gpu_op_rules (kernel attribution's direction comm). oneRankReduce is a
--   __global__ template in an anonymous namespace of NCCL's sources (2.19 and later), so its demangled name has
--   `::oneRankReduce<`; a bare `oneRankReduce` elsewhere is not taken as NCCL's.
-- columns:
--   is_nccl_name | BOOLEAN | flag
CREATE OR REPLACE TEMP MACRO is_nccl_name(kernel_name) AS
    contains(lower(kernel_name), 'nccl') OR contains(kernel_name, '::oneRankReduce<');
