-- nsysql: reports.mpi_msg_size_sum v1
-- purpose: MPI message sizes summed by kind (p2p, coll_send, coll_recv) and call name, identical to `nsys stats -r mpi_msg_size_sum` (Nsight Systems 2025.3).
-- requires: mpi_event
-- params: none
-- notes: As NVIDIA: a point-to-point row counts once with its size (rows without one count as instances, not in the
--   sums); a collective counts as coll_send where the rank sent data and as coll_recv where it received some (a
--   Barrier as neither; a Bcast's root sends, every rank receives). Sizes are in bytes. Rows come by instances,
--   most first; ties keep NVIDIA's order: by Source, then by the name's StringIds id.
-- columns:
--   Total Message Volume | BIGINT | bytes
--   Instances | BIGINT | count
--   Avg | DOUBLE | bytes | 1
--   Med | DOUBLE | bytes | 1
--   Min | BIGINT | bytes
--   Max | BIGINT | bytes
--   StdDev | DOUBLE | bytes (sample standard deviation; 0 for one message) | 1
--   Source | VARCHAR | text (p2p, coll_send or coll_recv)
--   Name | VARCHAR | text
WITH messages AS (
    SELECT 'p2p' AS source, name_id, name, bytes FROM mpi_event WHERE source = 'p2p'
    UNION ALL
    SELECT 'coll_send', name_id, name, send_bytes FROM mpi_event WHERE source = 'collectives' AND send_bytes IS NOT NULL
    UNION ALL
    SELECT 'coll_recv', name_id, name, recv_bytes FROM mpi_event WHERE source = 'collectives' AND recv_bytes IS NOT NULL
)
SELECT SUM(bytes) AS "Total Message Volume",
       COUNT(*) AS "Instances",
       AVG(bytes) AS "Avg",
       MEDIAN(bytes) AS "Med",
       MIN(bytes) AS "Min",
       MAX(bytes) AS "Max",
       COALESCE(STDDEV_SAMP(bytes), 0.0) AS "StdDev",
       source AS "Source",
       name AS "Name"
FROM messages
GROUP BY source, name_id, name
ORDER BY "Instances" DESC, source, name_id;
