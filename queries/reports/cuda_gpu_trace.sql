-- nsysql: reports.cuda_gpu_trace v2
-- purpose: Every CUDA kernel, memcpy and memset on the GPU in start order, identical to `nsys stats -r cuda_gpu_trace` (Nsight Systems 2025.3).
-- requires: kernel|memcpy|memset, gpu
-- params: none
-- notes: Kernel rows fill the grid, block, register and shared-memory columns; memcpy and memset rows fill Bytes,
--   Throughput and the memory kinds (a memset's kind is in SrcMemKd). MB = 10^6 bytes. Throughput is NVIDIA's
--   bytes * (10^9 div duration), the division an integer one (empty for a zero duration), in MB/s; a value exactly halfway at the third decimal is
--   rounded half to even, as NVIDIA prints it. Ctx, GreenCtx and Strm are empty when 0.
--   Device is `<GPU name> (<device id>)`. Rows with the same start keep kernels, then memcpys, then memsets, each
--   in export order, as NVIDIA's union does.
-- optional: "GreenCtx", "Ctx", ("StcSMem (MB)", "DymSMem (MB)"), "Reg/Trd", ("GrdX", "GrdY", "GrdZ"), ("BlkX", "BlkY", "BlkZ"), "CorrId", "Throughput (MB/s)", ("SrcMemKd", "DstMemKd"), "Device"
-- columns:
--   Start (ns) | BIGINT | ns timestamp
--   Duration (ns) | BIGINT | ns
--   CorrId | BIGINT | id
--   GrdX | BIGINT | count
--   GrdY | BIGINT | count
--   GrdZ | BIGINT | count
--   BlkX | BIGINT | count
--   BlkY | BIGINT | count
--   BlkZ | BIGINT | count
--   Reg/Trd | BIGINT | count
--   StcSMem (MB) | DOUBLE | MB (10^6 bytes) | 3
--   DymSMem (MB) | DOUBLE | MB (10^6 bytes) | 3
--   Bytes (MB) | DOUBLE | MB (10^6 bytes) | 3
--   Throughput (MB/s) | DOUBLE | MB/s (10^6 bytes/s) | 3
--   SrcMemKd | VARCHAR | text
--   DstMemKd | VARCHAR | text
--   Device | VARCHAR | text
--   Ctx | BIGINT | id
--   GreenCtx | BIGINT | id
--   Strm | BIGINT | id
--   Name | VARCHAR | text (demangled kernel name, or the copy's or set's [CUDA memcpy …] / [CUDA memset] label)
WITH ops AS (
    SELECT 0 AS kind, kernel_id AS op_id, start_ns, end_ns, correlation_id, grid_x, grid_y, grid_z,
           block_x, block_y, block_z, registers_per_thread, static_smem_bytes, dynamic_smem_bytes,
           CAST(NULL AS BIGINT) AS bytes, CAST(NULL AS VARCHAR) AS src_kind, CAST(NULL AS VARCHAR) AS dst_kind,
           device_id, context_id, green_context_id, stream_id, kernel_name AS name
    FROM kernel
    UNION ALL
    SELECT 1, memcpy_id, start_ns, end_ns, correlation_id, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
           bytes, src_kind, dst_kind, device_id, context_id, green_context_id, stream_id,
           '[CUDA memcpy ' || copy_kind || ']'
    FROM memcpy
    UNION ALL
    SELECT 2, memset_id, start_ns, end_ns, correlation_id, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
           bytes, mem_kind, NULL, device_id, context_id, green_context_id, stream_id, '[CUDA memset]'
    FROM memset
),
rated AS (  -- NVIDIA's throughput numerator: bytes * (10^9 div duration), exact
    SELECT *, CAST(bytes AS HUGEINT) * (1000000000 // NULLIF(end_ns - start_ns, 0)) AS tput FROM ops
)
SELECT o.start_ns AS "Start (ns)",
       o.end_ns - o.start_ns AS "Duration (ns)",
       o.correlation_id AS "CorrId",
       o.grid_x AS "GrdX", o.grid_y AS "GrdY", o.grid_z AS "GrdZ",
       o.block_x AS "BlkX", o.block_y AS "BlkY", o.block_z AS "BlkZ",
       o.registers_per_thread AS "Reg/Trd",
       o.static_smem_bytes / 1e6 AS "StcSMem (MB)",
       o.dynamic_smem_bytes / 1e6 AS "DymSMem (MB)",
       o.bytes / 1e6 AS "Bytes (MB)",
       CASE WHEN o.tput % 1000 = 500 AND o.tput % 62500 = 0  -- N/1e6 exactly halfway at 3 decimals: NVIDIA
            THEN (o.tput // 1000 + (o.tput // 1000) % 2) / 1e3   -- prints it rounded half to even (1.5625 -> 1.562)
            ELSE o.tput / 1e6 END AS "Throughput (MB/s)",
       o.src_kind AS "SrcMemKd",
       o.dst_kind AS "DstMemKd",
       COALESCE(g.gpu_name, '') || ' (' || o.device_id || ')' AS "Device",
       NULLIF(o.context_id, 0) AS "Ctx",
       NULLIF(o.green_context_id, 0) AS "GreenCtx",
       NULLIF(o.stream_id, 0) AS "Strm",
       o.name AS "Name"
FROM rated AS o
LEFT JOIN gpu AS g ON g.device_id = o.device_id
ORDER BY o.start_ns, o.kind, o.op_id;
