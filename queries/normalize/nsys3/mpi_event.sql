-- nsysql: normalize.nsys3.mpi_event v1
-- purpose: MPI calls traced by `nsys profile --trace=mpi` (MPI_P2P_EVENTS, MPI_START_WAIT_EVENTS, MPI_OTHER_EVENTS, MPI_COLLECTIVES_EVENTS), one row per event row, with the rank of its thread (MPI_RANKS).
-- requires: raw.MPI_P2P_EVENTS, raw.MPI_START_WAIT_EVENTS, raw.MPI_OTHER_EVENTS, raw.MPI_COLLECTIVES_EVENTS, raw.MPI_RANKS, raw.StringIds
-- params: none
-- notes: nsys splits some calls into several rows, all kept: an MPI_Sendrecv whose two directions differ gives a
--   send row and a receive row (the same start), an MPI_Waitall or MPI_Startall one row per request. `rank` is
--   MPI_RANKS' rank of the event's own thread (as NVIDIA's mpi_event_trace joins it); a thread it does not list
--   has none.
-- columns:
--   source | VARCHAR | text (p2p, start-wait, other or collectives: the raw table, named as NVIDIA's reports name it)
--   source_row | BIGINT | id (the row's rowid in its raw table)
--   start_ns | BIGINT | ns
--   end_ns | BIGINT | ns (NULL where nsys wrote no end)
--   global_tid | BIGINT | id
--   pid | BIGINT | id
--   tid | BIGINT | id
--   rank | BIGINT | id (MPI rank of the thread)
--   name_id | BIGINT | id (StringIds id of the name; NVIDIA's summaries order ties by it)
--   name | VARCHAR | text (MPI_Send, MPI_Allreduce ...)
--   tag | BIGINT | id (point-to-point message tag)
--   peer_rank | BIGINT | id (point-to-point: the destination or source rank)
--   root_rank | BIGINT | id (collectives with a root: Bcast, Reduce, Gather, Scatter ...)
--   bytes | BIGINT | bytes (point-to-point message size)
--   send_bytes | BIGINT | bytes (collectives: size sent; NULL where the rank sends nothing)
--   recv_bytes | BIGINT | bytes (collectives: size received; NULL where the rank receives nothing)
--   comm_handle | BIGINT | id (MPI communicator handle; p2p and collectives)
--   request_handle | BIGINT | id (MPI request handle of non-blocking and persistent calls)
CREATE TABLE mpi_event AS
WITH events AS (
    SELECT 'p2p' AS source, rowid AS source_row, start, "end", globalTid, textId, tag, remoteRank AS peer_rank,
           CAST(NULL AS BIGINT) AS root_rank, size AS bytes, CAST(NULL AS BIGINT) AS send_bytes,
           CAST(NULL AS BIGINT) AS recv_bytes, commHandle, requestHandle
    FROM raw.MPI_P2P_EVENTS
    UNION ALL
    SELECT 'start-wait', rowid, start, "end", globalTid, textId, NULL, NULL, NULL, NULL, NULL, NULL, NULL, requestHandle
    FROM raw.MPI_START_WAIT_EVENTS
    UNION ALL
    SELECT 'other', rowid, start, "end", globalTid, textId, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
    FROM raw.MPI_OTHER_EVENTS
    UNION ALL
    SELECT 'collectives', rowid, start, "end", globalTid, textId, NULL, NULL, rootRank, NULL, size, recvSize,
           commHandle, requestHandle
    FROM raw.MPI_COLLECTIVES_EVENTS
), ranks AS (  -- one rank per thread, even in an edited export that lists a thread twice
    SELECT globalTid, MIN("rank") AS "rank" FROM raw.MPI_RANKS GROUP BY globalTid
)
SELECT e.source,
       e.source_row,
       e.start AS start_ns,
       e."end" AS end_ns,
       e.globalTid AS global_tid,
       (e.globalTid >> 24) & 16777215 AS pid,
       e.globalTid & 16777215 AS tid,
       r."rank",
       e.textId AS name_id,
       s.value AS name,
       e.tag,
       e.peer_rank,
       e.root_rank,
       e.bytes,
       e.send_bytes,
       e.recv_bytes,
       e.commHandle AS comm_handle,
       e.requestHandle AS request_handle
FROM events AS e
LEFT JOIN ranks AS r ON r.globalTid = e.globalTid
LEFT JOIN raw.StringIds AS s ON s.id = e.textId;  -- no ORDER BY: readers order what they show
