-- nsysql: normalize.shims.v0_0_to_v2_99.enum_cuda_mem_kind v1
-- purpose: raw.ENUM_CUDA_MEM_KIND for exports without it (export schema 2.x and exports without a metadata table, Nsight Systems 2021.x to 2022.3): the memory kinds with the ids and labels of a 3.20.3 export (Pageable, Pinned, Device ...).
-- requires: none
-- provides: raw.ENUM_CUDA_MEM_KIND
-- params: none
-- notes: nsys's own numbering (CUDA_MEMOPR_MEMORY_KIND: 0 pageable, 1 pinned, 2 device), not CUPTI's. The 2022.1 (2.9.1)
--   and 2021 (no metadata) exports of ../shared/samples/external use it too: host-to-device copies go 0 -> 2, memsets on
--   device memory are 2.
-- columns:
--   rowid | BIGINT | id
--   id | BIGINT | id
--   name | VARCHAR | text
--   label | VARCHAR | text
CREATE VIEW raw.ENUM_CUDA_MEM_KIND AS
SELECT CAST(id AS BIGINT) AS rowid, CAST(id AS BIGINT) AS id, name, label
FROM (VALUES
    (0, 'CUDA_MEMOPR_MEMORY_KIND_PAGEABLE', 'Pageable'),
    (1, 'CUDA_MEMOPR_MEMORY_KIND_PINNED', 'Pinned'),
    (2, 'CUDA_MEMOPR_MEMORY_KIND_DEVICE', 'Device'),
    (3, 'CUDA_MEMOPR_MEMORY_KIND_ARRAY', 'Array'),
    (4, 'CUDA_MEMOPR_MEMORY_KIND_MANAGED', 'Managed'),
    (5, 'CUDA_MEMOPR_MEMORY_KIND_DEVICE_STATIC', 'Device Static'),
    (6, 'CUDA_MEMOPR_MEMORY_KIND_MANAGED_STATIC', 'Managed Static'),
    (7, 'CUDA_MEMOPR_MEMORY_KIND_UNKNOWN', 'Unknown')
) AS e(id, name, label);
