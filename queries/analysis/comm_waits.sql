-- nsysql: analysis.comm_waits v3
-- purpose: Each rank's instance of each collective split into waiting and transfer: the collective's instances matched across ranks, the last rank's arrival, and the part of each instance spent spinning until then.
-- requires: analysis.comm_instances
-- params: none
-- notes: An NCCL kernel starts when its rank launches it and spins on the GPU until every rank has arrived; only then
--   does data move. Instances of one collective are matched by `collective`: (comm_id, comm_seq) when every
--   instance has its communicator (NCCL's NVTX payloads: each rank's k-th kernel of that communicator), else
--   (stream_order, seq) (analysis.comm_instances: the k-th kernel on each rank's n-th NCCL stream); a collective is matched when every rank of the job has exactly
--   one instance of it and they name the same operation. For rank r's instance [s_r, e_r) of a matched
--   collective whose last rank arrives at L = max s: the wait interval is [s_r, min(e_r, L)), the transfer interval
--   [max(s_r, L), e_r), and late_ns = s_r - the first arrival (min s). An unmatched instance (a rank lacks it, has
--   another operation there, or the job has one rank) has no wait: all of it is transfer, late_ns 0. The ranks of
--   the job are those with any instance. Run over the instances of several exports of one job (their clocks
--   aligned), the same SQL matches across exports (nsysql/answers/job.py).
-- columns:
--   source | BIGINT | index (the export's place in the job; 0 in one export)
--   rank | BIGINT | index
--   pid | BIGINT | id
--   device_id | BIGINT | id
--   kernel_id | BIGINT | id
--   operation | VARCHAR | text
--   stream_order | BIGINT | index
--   seq | BIGINT | index
--   collective | VARCHAR | text (the matching key: `comm <id>:<k>` or `stream <n>:<k>`)
--   message_bytes | BIGINT | bytes (NULL without NCCL's payloads)
--   start_ns | BIGINT | ns timestamp
--   end_ns | BIGINT | ns timestamp
--   step | BIGINT | index (NULL: outside every step)
--   analysed | BOOLEAN | flag
--   matched | BOOLEAN | flag (every rank has this collective, with the same operation)
--   ranks | BIGINT | count (ranks with an instance of this collective)
--   first_start_ns | BIGINT | ns timestamp (the earliest start among the ranks; own start when unmatched)
--   last_start_ns | BIGINT | ns timestamp (the latest start: L; own start when unmatched)
--   wait_end_ns | BIGINT | ns timestamp (min(end, L); = start_ns when there is no wait)
--   wait_ns | BIGINT | ns (wait_end_ns - start_ns)
--   transfer_ns | BIGINT | ns (end_ns - max(start_ns, L))
--   late_ns | BIGINT | ns (start_ns - first_start_ns)
WITH
by_comm AS (SELECT COALESCE(bool_and(comm_id IS NOT NULL), false) AS yes FROM comm_instances),
inst AS (
    SELECT *, CASE WHEN (SELECT yes FROM by_comm) THEN printf('comm %d:%d', comm_id, comm_seq)
                   ELSE printf('stream %d:%d', stream_order, seq) END AS collective
    FROM comm_instances
),
job AS (SELECT COUNT(*) AS ranks FROM (SELECT DISTINCT source, pid, device_id FROM inst)),
coll AS (
    SELECT collective, COUNT(*) AS ranks, COUNT(DISTINCT (source, pid, device_id)) AS distinct_ranks,
           COUNT(DISTINCT operation) AS operations, MIN(start_ns) AS first_ns, MAX(start_ns) AS last_ns
    FROM inst GROUP BY collective
),
keyed AS (
    SELECT i.*, c.ranks,
           c.ranks = (SELECT ranks FROM job) AND c.distinct_ranks = c.ranks AND c.operations = 1
               AND (SELECT ranks FROM job) > 1 AS matched,
           c.first_ns, c.last_ns
    FROM inst AS i JOIN coll AS c USING (collective)
)
SELECT source, rank, pid, device_id, kernel_id, operation, stream_order, seq, collective, message_bytes,
       start_ns, end_ns, step, analysed,
       matched, ranks,
       CASE WHEN matched THEN first_ns ELSE start_ns END AS first_start_ns,
       CASE WHEN matched THEN last_ns ELSE start_ns END AS last_start_ns,
       CASE WHEN matched THEN GREATEST(start_ns, LEAST(end_ns, last_ns)) ELSE start_ns END AS wait_end_ns,
       CASE WHEN matched THEN GREATEST(start_ns, LEAST(end_ns, last_ns)) ELSE start_ns END - start_ns AS wait_ns,
       end_ns - CASE WHEN matched THEN LEAST(end_ns, GREATEST(start_ns, last_ns)) ELSE start_ns END AS transfer_ns,
       CASE WHEN matched THEN start_ns - first_ns ELSE 0 END AS late_ns
FROM keyed
ORDER BY source, pid, device_id, stream_order, seq;
