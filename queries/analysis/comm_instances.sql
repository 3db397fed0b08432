-- nsysql: analysis.comm_instances v3
-- purpose: Every communication kernel as one rank's instance of a collective: its operation, the NCCL stream it ran on, its place in that stream's order (the key that matches it with the other ranks' instances, analysis.comm_waits) and the step that launched it.
-- requires: analysis.steady_steps, gpu_op, kernel, runtime, runtime_nvtx, nvtx_ancestor, kernel|nvtx_range, session, nccl_payload, macros.comm_kernels
-- params: none
-- notes: Communication kernels are macros.comm_kernels' (a kernel named like NCCL's, or launched inside one of NCCL's
--   NVTX ranges). A rank is a (process, GPU) that ran any; `rank` is the RANK of the process's environment where the
--   export has it (one nsys per rank: normalize.nsys3.session), else the GPU's device id (with one nsys over
--   torchrun, LOCAL_RANK's GPU). operation is the collective named in the kernel's name (ncclDevKernel_AllReduce_Sum_f32_RING_LL
--   and ncclKernel_AllReduce_RING_LL_Sum_float: AllReduce; SendRecv, Send, Recv, AllGather, ReduceScatter,
--   Broadcast, Reduce, AllToAll, ...), else the name before its first `(` or `<`. NCCL runs a communicator's collectives
--   in the same order on every rank, on one stream per communicator and GPU (PyTorch's ProcessGroupNCCL): a rank's
--   NCCL streams are numbered by their first communication kernel (stream_order 1, 2, ...), and seq counts the
--   kernels on one stream in start order, so (stream_order, seq) names the same collective on every rank of the job.
--   Where the export has NCCL's NVTX payloads (`nsys export --include-blobs=true`: normalize.nsys3.nccl_payload),
--   the NCCL range around the launching call (its innermost range) gives the communicator and the message size,
--   and comm_seq counts the rank's kernels of that communicator in start order: (comm_id, comm_seq) names the
--   collective without relying on streams (analysis.comm_waits uses it when every instance has it).
--   step is the step (per process, as analysis.steps numbers them) whose span holds the launching CUDA call, start
--   to end, on any thread of the process; NULL outside every step. source is 0: the place of the export in a job of
--   several exports, which the code that matches them sets.
-- columns:
--   source | BIGINT | index (0; the export's place among the exports of one job)
--   rank | BIGINT | index (RANK, else the device id)
--   pid | BIGINT | id
--   device_id | BIGINT | id
--   stream_id | BIGINT | id
--   kernel_id | BIGINT | id
--   operation | VARCHAR | text
--   stream_order | BIGINT | index (1 = the rank's first NCCL stream to run a communication kernel)
--   seq | BIGINT | index (1 = the first communication kernel on that stream)
--   start_ns | BIGINT | ns timestamp
--   end_ns | BIGINT | ns timestamp
--   comm_id | UBIGINT | id (NCCL's communicator; NULL without NCCL's payloads)
--   comm_seq | BIGINT | index (1 = the rank's first kernel of that communicator; NULL without comm_id)
--   message_bytes | BIGINT | bytes (NCCL's message size; NULL without NCCL's payloads)
--   step | BIGINT | index (NULL: launched outside every step)
--   analysed | BOOLEAN | flag (launched in an analysed step)
WITH
kernel_op AS (SELECT kernel_id, kernel_name, pid, correlation_id FROM kernel),
comm_kernel AS (  -- queries/macros/comm_kernels.sql
    SELECT kernel_id FROM comm_kernels(kernel_op, runtime, runtime_nvtx, nvtx_ancestor, nvtx_range)
),
comm AS MATERIALIZED (
    SELECT k.kernel_id, k.pid, k.device_id, k.stream_id, k.start_ns, k.end_ns, k.kernel_name,
           rt.start_ns AS call_start_ns, rt.end_ns AS call_end_ns, p.comm_id, p.message_bytes
    FROM kernel AS k
    JOIN comm_kernel AS c USING (kernel_id)
    LEFT JOIN gpu_op AS o ON o.op_kind = 'kernel' AND o.op_id = k.kernel_id
    LEFT JOIN runtime AS rt ON rt.runtime_id = o.runtime_id
    LEFT JOIN runtime_nvtx AS rn ON rn.runtime_id = o.runtime_id
    LEFT JOIN nccl_payload AS p ON p.range_id = rn.range_id
),
step AS (SELECT step, pid, range_start_ns AS start_ns, range_end_ns AS end_ns, analysed  -- the launches of its range
              FROM steady_steps WHERE pid IS NOT NULL),
stepped AS (
    SELECT c.*, CASE WHEN c.call_end_ns <= s.end_ns THEN s.step END AS step,
           COALESCE(c.call_end_ns <= s.end_ns AND s.analysed, false) AS analysed
    FROM comm AS c
    ASOF LEFT JOIN step AS s ON s.pid = c.pid AND s.start_ns <= c.call_start_ns
),
streams AS (
    SELECT pid, device_id, stream_id,
           ROW_NUMBER() OVER (PARTITION BY pid, device_id ORDER BY MIN(start_ns), stream_id) AS stream_order
    FROM comm GROUP BY pid, device_id, stream_id
)
SELECT CAST(0 AS BIGINT) AS source,
       CAST(COALESCE((SELECT rank FROM session), s.device_id) AS BIGINT) AS rank,
       s.pid, s.device_id, s.stream_id, s.kernel_id,
       COALESCE(NULLIF(regexp_extract(s.kernel_name, 'nccl(?:Dev)?Kernel_([A-Za-z]+?)(?:_|\(|$)', 1), ''),
                NULLIF(regexp_extract(s.kernel_name, '([A-Za-z_][A-Za-z0-9_]*)(?:<|\(|$)', 1), ''), s.kernel_name) AS operation,
       st.stream_order,
       ROW_NUMBER() OVER (PARTITION BY s.pid, s.device_id, s.stream_id ORDER BY s.start_ns, s.kernel_id) AS seq,
       s.start_ns, s.end_ns, s.comm_id,
       CASE WHEN s.comm_id IS NOT NULL THEN ROW_NUMBER() OVER (PARTITION BY s.pid, s.device_id, s.comm_id
                                                               ORDER BY s.start_ns, s.kernel_id) END AS comm_seq,
       s.message_bytes, s.step, s.analysed
FROM stepped AS s
JOIN streams AS st USING (pid, device_id, stream_id)
ORDER BY s.pid, s.device_id, st.stream_order, seq;
