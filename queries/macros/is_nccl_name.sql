-- nsysql: macros.is_nccl_name v1
-- purpose: Whether a kernel's demangled name is one of NCCL's: `is_nccl_name(kernel_name)` is true when it contains `nccl` in any case (ncclDevKernel_*, ncclKernel_*).
-- requires: none
-- params: none
-- notes: A scalar macro (inlined where it is called): the name half of the communication-kernel rule, read by
--   macros.comm_kernels and, over the distinct kernel names only, by analysis._comm_present.
-- columns:
--   is_nccl_name | BOOLEAN | flag
CREATE OR REPLACE TEMP MACRO is_nccl_name(kernel_name) AS contains(lower(kernel_name), 'nccl');
