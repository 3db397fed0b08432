-- nsysql: reports.mpi_event_trace v1
-- purpose: Every MPI call in start order, with its rank, tag, peer or root rank and message sizes, identical to `nsys stats -r mpi_event_trace` (Nsight Systems 2025.3).
-- requires: mpi_event
-- params: none
-- notes: As NVIDIA: one row per row of the four MPI event tables, so an MPI_Sendrecv whose directions differ in
--   rank, tag or size is two rows (its send and its receive, the same start) and an MPI_Waitall one row per
--   request. Size is a point-to-point message's, CollSendSize and CollRecvSize a collective's; MB = 10^6 bytes.
--   Rank is the rank of the calling thread. Rows with the same start keep NVIDIA's order: p2p, start-wait, other,
--   collectives, each in export order.
-- optional: "End (ns)", "Pid", "Tid", "RootRank", "CollRecvSize (MB)", "CollSendSize (MB)", "Tag"
-- columns:
--   Start (ns) | BIGINT | ns timestamp
--   End (ns) | BIGINT | ns timestamp
--   Duration (ns) | BIGINT | ns
--   Event | VARCHAR | text
--   Pid | BIGINT | id
--   Tid | BIGINT | id
--   Tag | BIGINT | id
--   Rank | BIGINT | id
--   PeerRank | BIGINT | id
--   RootRank | BIGINT | id
--   Size (MB) | DOUBLE | MB (10^6 bytes) | 3
--   CollSendSize (MB) | DOUBLE | MB (10^6 bytes) | 3
--   CollRecvSize (MB) | DOUBLE | MB (10^6 bytes) | 3
SELECT start_ns AS "Start (ns)",
       end_ns AS "End (ns)",
       end_ns - start_ns AS "Duration (ns)",
       name AS "Event",
       pid AS "Pid",
       tid AS "Tid",
       tag AS "Tag",
       "rank" AS "Rank",
       peer_rank AS "PeerRank",
       root_rank AS "RootRank",
       bytes / 1e6 AS "Size (MB)",
       send_bytes / 1e6 AS "CollSendSize (MB)",
       recv_bytes / 1e6 AS "CollRecvSize (MB)"
FROM mpi_event
ORDER BY start_ns, CASE source WHEN 'p2p' THEN 0 WHEN 'start-wait' THEN 1 WHEN 'other' THEN 2 ELSE 3 END, source_row;
