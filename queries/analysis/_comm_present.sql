-- nsysql: analysis._comm_present v1
-- purpose: Whether the export has communication kernels as analysis.comm counts them (a kernel named like NCCL's, or NCCL's NVTX domain), so that summarize shows its communication section only then, without computing analysis.comm for every export.
-- requires: kernel, nvtx_name, macros.is_nccl_name
-- params: none
-- rows: one
-- notes: Reads the distinct kernel names (a few hundred) and the NVTX names, not the kernels one by one.
-- columns:
--   present | BOOLEAN | flag
SELECT COALESCE((SELECT bool_or(is_nccl_name(CAST(kernel_name AS VARCHAR)))  -- queries/macros/is_nccl_name.sql
                 FROM (SELECT DISTINCT kernel_name FROM kernel_int)), false)
       OR EXISTS (SELECT 1 FROM nvtx_name WHERE domain = 'NCCL') AS present;
