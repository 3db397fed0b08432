-- nsysql: macros.host_memory v1
-- purpose: The host memory a copy touches, from its source and destination memory kinds: `host_memory(src_kind, dst_kind)` is 'Pageable' when either side is pageable host memory, else 'Pinned' when either is pinned, else NULL (device to device, or a memset's device memory).
-- requires: none
-- params: none
-- notes: A scalar macro (inlined where it is called): analysis.memcpy, memcpy_by_stream and memcpy_by_range read it.
-- columns:
--   host_memory | VARCHAR | text
CREATE OR REPLACE TEMP MACRO host_memory(src_kind, dst_kind) AS
    CASE WHEN 'Pageable' IN (src_kind, dst_kind) THEN 'Pageable'
         WHEN 'Pinned' IN (src_kind, dst_kind) THEN 'Pinned' END;
