-- nsysql: normalize.shims.v0_0_to_v2_99.enum_cuda_memcpy_oper v1
-- purpose: raw.ENUM_CUDA_MEMCPY_OPER for exports without it (export schema 2.x and exports without a metadata table, Nsight Systems 2021.x to 2022.3): the copy kinds with the ids and labels of a 3.20.3 export, so copies are labelled (Host-to-Device ...) as in newer exports.
-- requires: none
-- provides: raw.ENUM_CUDA_MEMCPY_OPER
-- params: none
-- notes: The values are CUPTI's CUpti_ActivityMemcpyKind, which copyKind has held in every schema: in the 2022.1 (2.9.1)
--   and 2021 (no metadata) exports of ../shared/samples/external every copy of kind 1 goes pageable -> device and of kind 2
--   device -> pageable, each launched by a cudaMemcpy* call. NVIDIA's 2025.3 scripts refuse the copy reports of these
--   exports instead ("does not contain ENUM_CUDA_MEMCPY_OPER table"); nsysql gives them with these labels.
-- columns:
--   rowid | BIGINT | id
--   id | BIGINT | id
--   name | VARCHAR | text
--   label | VARCHAR | text
CREATE VIEW raw.ENUM_CUDA_MEMCPY_OPER AS
SELECT CAST(id AS BIGINT) AS rowid, CAST(id AS BIGINT) AS id, name, label
FROM (VALUES
    (0, 'CUDA_MEMCPY_KIND_UNKNOWN', 'Unknown'),
    (1, 'CUDA_MEMCPY_KIND_HTOD', 'Host-to-Device'),
    (2, 'CUDA_MEMCPY_KIND_DTOH', 'Device-to-Host'),
    (3, 'CUDA_MEMCPY_KIND_HTOA', 'Host-to-Array'),
    (4, 'CUDA_MEMCPY_KIND_ATOH', 'Array-to-Host'),
    (5, 'CUDA_MEMCPY_KIND_ATOA', 'Array-to-Array'),
    (6, 'CUDA_MEMCPY_KIND_ATOD', 'Array-to-Device'),
    (7, 'CUDA_MEMCPY_KIND_DTOA', 'Device-to-Array'),
    (8, 'CUDA_MEMCPY_KIND_DTOD', 'Device-to-Device'),
    (9, 'CUDA_MEMCPY_KIND_HTOH', 'Host-to-Host'),
    (10, 'CUDA_MEMCPY_KIND_PTOP', 'Peer-to-Peer'),
    (11, 'CUDA_MEMCPY_KIND_UVM_HTOD', 'Unified Host-to-Device'),
    (12, 'CUDA_MEMCPY_KIND_UVM_DTOH', 'Unified Device-to-Host'),
    (13, 'CUDA_MEMCPY_KIND_UVM_DTOD', 'Unified Device-to-Device')
) AS e(id, name, label);
