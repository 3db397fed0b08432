-- nsysql: analysis.collectives v3
-- purpose: Collectives per operation (AllReduce, AllGather, ReduceScatter, Broadcast, ...), summed over every rank: how many, how long their kernels ran, and how much of that was waiting for the last rank and how much transfer; the NCCL algorithm and protocol the kernels name.
-- requires: analysis.comm_waits, kernel
-- params: none
-- notes: One row per operation of analysis.comm_waits (every communication kernel of the export, in and out of the
--   steps, on every rank: the k-th of a rank is one instance). instances counts kernels, as NVIDIA's nccl_sum and
--   nccl_gpu_proj_sum count NCCL's API ranges per operation (one per rank and call: equal where each call launched
--   one kernel); collectives = the matched ones counted once. time_ns = the sum of the kernels' durations;
--   wait_ns and transfer_ns split it (analysis.comm_waits: waiting until the collective's last rank arrived, then
--   transfer; all transfer when unmatched). algorithms: the algorithm and protocol in the kernels' names
--   (ncclDevKernel_AllReduce_Sum_f32_RING_LL: RING_LL), distinct, comma separated. Message sizes and bus
--   bandwidth need NCCL's NVTX payloads, which `nsys export --include-blobs=true` keeps (NULL without):
--   mean_message_bytes is the mean of NCCL's message size per kernel (NCCL states it per rank: AllGather's send
--   count, ReduceScatter's receive count, times the type's size); bus_gb_per_s = sum over the matched instances of
--   message_bytes x the bus factor of nccl-tests (PERFORMANCE.md; n = the collective's ranks: AllReduce 2(n-1)/n,
--   AllGather and ReduceScatter (n-1) for a per-rank size, others 1) / the sum of their transfer time: the
--   bandwidth of the data movement itself, waiting left out.
-- optional: "mean_ns", "ranks", "collectives", "instances", "algorithms"
-- columns:
--   operation | VARCHAR | text
--   instances | BIGINT | count (kernels, on all ranks)
--   collectives | BIGINT | count (matched across ranks, each once)
--   ranks | BIGINT | count (ranks that ran this operation)
--   time_ns | BIGINT | ns (sum of the kernels' durations)
--   mean_ns | DOUBLE | ns (per kernel) | 1
--   wait_ns | BIGINT | ns (of time_ns: waiting for the last rank)
--   transfer_ns | BIGINT | ns (of time_ns: after the last rank arrived)
--   wait_pct | DOUBLE | pct of time_ns | 1
--   algorithms | VARCHAR | text (algorithm_protocol from the kernel names, e.g. RING_LL)
--   mean_message_bytes | DOUBLE | bytes (NCCL's message size, per rank; NULL without NCCL's payloads) | 0
--   bus_gb_per_s | DOUBLE | GB/s (bus bandwidth of the transfer; NULL without NCCL's payloads) | 2
WITH
w AS (
    SELECT w.*, CASE w.operation WHEN 'AllReduce' THEN 2.0 * (w.ranks - 1) / w.ranks
                                 WHEN 'AllGather' THEN w.ranks - 1 WHEN 'ReduceScatter' THEN w.ranks - 1
                                 ELSE 1.0 END AS bus_factor,
           regexp_extract(k.kernel_name, '_((?:RING|TREE|COLLNET_DIRECT|COLLNET_CHAIN|NVLS_TREE|NVLS|PAT)_(?:LL128|LL|SIMPLE))', 1) AS algo
    FROM comm_waits AS w JOIN kernel AS k USING (kernel_id)
)
SELECT operation, COUNT(*) AS instances,
       CAST(COUNT(DISTINCT collective) FILTER (WHERE matched) AS BIGINT) AS collectives,
       CAST(COUNT(DISTINCT (source, pid, device_id)) AS BIGINT) AS ranks,
       CAST(SUM(end_ns - start_ns) AS BIGINT) AS time_ns, AVG(end_ns - start_ns) AS mean_ns,
       CAST(SUM(wait_ns) AS BIGINT) AS wait_ns, CAST(SUM(transfer_ns) AS BIGINT) AS transfer_ns,
       100.0 * SUM(wait_ns) / NULLIF(SUM(end_ns - start_ns), 0) AS wait_pct,
       string_agg(DISTINCT NULLIF(algo, ''), ', ' ORDER BY NULLIF(algo, '')) AS algorithms,
       AVG(message_bytes) AS mean_message_bytes,
       -- a DECIMAL sum is exact: a sum of doubles changes its last digit with the threads' order
       CAST(SUM(message_bytes * CAST(bus_factor AS DECIMAL(18, 9))) FILTER (WHERE matched) AS DOUBLE)
           / NULLIF(SUM(transfer_ns) FILTER (WHERE matched AND message_bytes IS NOT NULL), 0) AS bus_gb_per_s
FROM w
GROUP BY operation
ORDER BY time_ns DESC, operation;
