-- nsysql: normalize.nsys3.nccl_payload v1
-- purpose: One row per NVTX range of NCCL's that carries an extended payload (exports made with `nsys export --include-blobs=true`): the communicator, message size, ranks, rank, root or peer rank and reduction NCCL attached to the call (ncclAllReduce, ncclBroadcast, ncclSend, ncclCommInitRankConfig ...), decoded by the payload schema NCCL registered.
-- requires: raw.NVTX_EVENTS_BINARY, raw.NVTX_PAYLOAD_SCHEMAS, raw.NVTX_PAYLOAD_SCHEMA_ENTRIES, raw.NVTX_PAYLOAD_ENUMS, raw.NVTX_PAYLOAD_ENUM_ENTRIES, nvtx_name, macros.hex_le_uint, macros.hex_le_int
-- params: none
-- notes: Ranges of the domains `NCCL` and `com.nvidia.nccl...` (nvtx_name) whose NVTX_EVENTS.binaryData is set; a
--   default export has the schema tables but no binaryData, so no rows. The blob is NVTX's payload array as nsys
--   writes it: the payload count n (uint64), n descriptors of three uint64 (schema id, size in bytes, offset of the
--   data in the blob: the nvtxPayloadData_t of nvToolsExtPayload.h with the pointer made an offset), then the data,
--   all little-endian (the x86-64 and Arm64 hosts NCCL runs on). nsys documents no layout: this one is read off
--   NVTX's header and the blobs of a 2-GPU DDP export (torch 2.11's NCCL, nsys 2025.3: n = 1, data at byte 32,
--   sizes equal to NVTX_PAYLOAD_SCHEMAS.payloadSize). The first payload is decoded (NCCL attaches one): the range's schema_id.
--   The blobs come through raw.NVTX_EVENTS_BINARY as hex text (raw_stubs says why) and are read with
--   macros.hex_le_uint and hex_le_int.
--   A value is read by the schema the event's process registered (NVTX_PAYLOAD_SCHEMAS/_ENTRIES, matched on domain
--   and schema id): the entry named `NCCL communicator ID`, `Message size [bytes]`, `No. of ranks`, `Rank`, `Root`,
--   `Peer rank`, `Reduction operation` or `CUDA device` (NCCL's names, nvtx_payload_schemas.h), at the entry's
--   offset, as wide and signed as its type (NVTX_PAYLOAD_ENTRY_TYPE_*, sizes of LP64 Linux; an enum type is an
--   NVTX_PAYLOAD_ENUMS id, as wide as its `size`, and is shown by its NVTX_PAYLOAD_ENUM_ENTRIES name). So other NCCL
--   versions, whose schemas differ, are read right as long as they keep these names. An entry after the first
--   without an offset (nsys writes 0 as NULL) is placed by natural alignment (capped by the schema's alignTo), as
--   the NVTX handler does.
--   Left NULL, the row kept: a value the range's schema lacks (ncclAllGather has no root), an unregistered schema,
--   a union schema, an array, pointer or float entry, bytes past the payload or the blob, and a schema two
--   processes registered differently under one domain and schema id (the schema tables name no process; nsys
--   writes one copy per process, identical copies are merged).
-- columns:
--   range_id | BIGINT | id (nvtx_range)
--   schema_id | BIGINT | id (NVTX payload schema of the first payload: NVTX_PAYLOAD_SCHEMAS.schemaId)
--   comm_id | UBIGINT | id (NCCL communicator ID: one per communicator, the same on each of its ranks)
--   message_bytes | BIGINT | bytes (NCCL's `Message size [bytes]`)
--   ranks | BIGINT | count (ranks of the communicator: ncclCommInitRank*, ncclCommDestroy, ncclCommSplit ...)
--   rank | BIGINT | id (this process's rank in the communicator: the same calls)
--   root_rank | BIGINT | id (ncclBroadcast, ncclReduce, ncclGather, ncclScatter)
--   peer_rank | BIGINT | id (ncclSend, ncclRecv)
--   reduction | VARCHAR | text (ncclAllReduce, ncclReduce, ncclReduceScatter: Sum, Product, Max, Min, Avg; the number where the enum has no name for it)
--   cuda_device | BIGINT | id (CUDA device of the rank: the communicator calls)
CREATE TABLE nccl_payload AS
WITH RECURSIVE
nccl_domain AS (
    SELECT DISTINCT pid, domain_key FROM nvtx_name WHERE domain = 'NCCL' OR starts_with(domain, 'com.nvidia.nccl')
),
payload AS MATERIALIZED (  -- NCCL's ranges with a payload (the only rows decoded) and their first payload's descriptor
    SELECT b.rowid AS range_id, b.domainId AS domain_id, b.binaryHex AS h,
           hex_le_uint(b.binaryHex, 0, 8) AS payloads, hex_le_uint(b.binaryHex, 8, 8) AS schema_id,
           hex_le_uint(b.binaryHex, 16, 8) AS size, hex_le_uint(b.binaryHex, 24, 8) AS data_at,
           length(b.binaryHex) // 2 AS nbytes
    FROM raw.NVTX_EVENTS_BINARY AS b
    SEMI JOIN nccl_domain AS d ON d.pid = (b.globalTid >> 24) & 16777215 AND d.domain_key = b.domainId
    WHERE b.eventType IN (59, 60, 70, 71)  -- ranges, as nvtx_node takes them
),
schema AS (  -- nsys writes the schemas once per process that registered them
    SELECT domainId AS domain_id, schemaId AS schema_id, max(COALESCE(type, 0)) AS schema_type,
           max(COALESCE(alignTo, 0)) AS pack_align
    FROM raw.NVTX_PAYLOAD_SCHEMAS
    GROUP BY ALL
),
enum AS (
    SELECT domainId AS domain_id, schemaId AS enum_id, max(size) AS width
    FROM raw.NVTX_PAYLOAD_ENUMS
    GROUP BY ALL
),
enum_name AS (
    SELECT domainId AS domain_id, schemaId AS enum_id, COALESCE(value, 0) AS value, min(name) AS name
    FROM raw.NVTX_PAYLOAD_ENUM_ENTRIES
    GROUP BY ALL
),
scalar(type, width, signed) AS (  -- NVTX_PAYLOAD_ENTRY_TYPE_*: the integer types (LP64), size_t, addresses, ids
    VALUES (1, 1, true), (2, 1, false), (3, 2, true), (4, 2, false), (5, 4, true), (6, 4, false), (7, 8, true),
           (8, 8, false), (9, 8, true), (10, 8, false), (11, 1, true), (12, 1, false), (13, 2, true), (14, 2, false),
           (15, 4, true), (16, 4, false), (17, 8, true), (18, 8, false), (22, 8, false), (23, 8, false),
           (68, 4, false), (69, 4, false), (70, 8, false), (71, 4, false), (72, 8, false), (73, 4, false),
           (74, 8, false)
),
entry_copy AS (
    SELECT DISTINCT domainId AS domain_id, schemaId AS schema_id, idx, COALESCE(flags, 0) AS flags, type, name,
           COALESCE("offset", 0) AS given_at
    FROM raw.NVTX_PAYLOAD_SCHEMA_ENTRIES
),
conflict AS (  -- a schema two processes registered differently under one domain and schema id
    SELECT domain_id, schema_id FROM entry_copy GROUP BY ALL HAVING count(*) > count(DISTINCT idx)
),
entry AS (  -- width and sign of each entry; none for arrays, pointers (flag bits 1-6), floats, nested schemas
    SELECT e.domain_id, e.schema_id, e.idx, e.type, e.name, e.given_at,
           CASE WHEN e.flags & 126 = 0 THEN COALESCE(t.width, en.width) END AS width,
           COALESCE(t.signed, false) AS signed, en.enum_id IS NOT NULL AND t.type IS NULL AS is_enum, s.pack_align
    FROM entry_copy AS e
    JOIN schema AS s USING (domain_id, schema_id)
    LEFT JOIN scalar AS t ON t.type = e.type
    LEFT JOIN enum AS en ON en.domain_id = e.domain_id AND en.enum_id = e.type
    ANTI JOIN conflict AS c USING (domain_id, schema_id)
    WHERE s.schema_type NOT IN (3, 4)  -- unions: the members share offset 0, chosen by a selector
),
placed(domain_id, schema_id, idx, pos, width, signed, is_enum, type, name) AS (  -- offsets, entry after entry
    SELECT domain_id, schema_id, idx, CAST(given_at AS BIGINT), width, signed, is_enum, type, name
    FROM entry WHERE idx = 0
    UNION ALL
    SELECT e.domain_id, e.schema_id, e.idx,
           CASE WHEN e.given_at > 0 THEN e.given_at
                ELSE (p.pos + p.width + a.align - 1) // a.align * a.align END,
           e.width, e.signed, e.is_enum, e.type, e.name
    FROM placed AS p
    JOIN entry AS e ON e.domain_id = p.domain_id AND e.schema_id = p.schema_id AND e.idx = p.idx + 1
    CROSS JOIN LATERAL (SELECT CASE WHEN e.pack_align > 0 THEN LEAST(e.width, e.pack_align) ELSE e.width END
                               AS align) AS a
),
layout AS (  -- one row per schema: where it keeps each value NCCL names (the first entry of the name)
    SELECT domain_id, schema_id,
           arg_min({'pos': pos, 'width': width, 'signed': signed}, idx)
             FILTER (WHERE name = 'NCCL communicator ID') AS comm,
           arg_min({'pos': pos, 'width': width, 'signed': signed}, idx)
             FILTER (WHERE name = 'Message size [bytes]') AS message,
           arg_min({'pos': pos, 'width': width, 'signed': signed}, idx) FILTER (WHERE name = 'No. of ranks') AS ranks,
           arg_min({'pos': pos, 'width': width, 'signed': signed}, idx) FILTER (WHERE name = 'Rank') AS "rank",
           arg_min({'pos': pos, 'width': width, 'signed': signed}, idx) FILTER (WHERE name = 'Root') AS root,
           arg_min({'pos': pos, 'width': width, 'signed': signed}, idx) FILTER (WHERE name = 'Peer rank') AS peer,
           arg_min({'pos': pos, 'width': width, 'signed': signed, 'enum_id': CASE WHEN is_enum THEN type END}, idx)
             FILTER (WHERE name = 'Reduction operation') AS reduction,
           arg_min({'pos': pos, 'width': width, 'signed': signed}, idx) FILTER (WHERE name = 'CUDA device') AS device
    FROM placed
    WHERE width IS NOT NULL AND pos >= 0
    GROUP BY ALL
),
located AS (  -- the byte offset of each value in the blob; NULL where it is not inside the payload and the blob
    SELECT p.range_id, p.schema_id, p.domain_id, p.h, l.comm, l.message, l.ranks, l."rank", l.root, l.peer,
           l.reduction, l.device,
           p.payloads >= 1 AND CAST(p.data_at AS HUGEINT) + p.size <= p.nbytes AS whole,
           CAST(CASE WHEN p.data_at <= p.nbytes THEN p.data_at END AS BIGINT) AS base,
           CAST(CASE WHEN p.size <= p.nbytes THEN p.size END AS BIGINT) AS size
    FROM payload AS p
    LEFT JOIN layout AS l ON l.domain_id = p.domain_id AND l.schema_id = p.schema_id
),
decoded AS (  -- a value whose bytes are not inside the payload gets a NULL offset, so it reads as NULL
    SELECT range_id, schema_id, domain_id, reduction.enum_id AS enum_id,
           hex_le_uint(h, CASE WHEN whole AND comm.pos + comm.width <= size THEN base + comm.pos END,
                       comm.width) AS comm_id,
           hex_le_int(h, CASE WHEN whole AND message.pos + message.width <= size THEN base + message.pos END,
                      message.width, message.signed) AS message_bytes,
           hex_le_int(h, CASE WHEN whole AND ranks.pos + ranks.width <= size THEN base + ranks.pos END,
                      ranks.width, ranks.signed) AS ranks,
           hex_le_int(h, CASE WHEN whole AND "rank".pos + "rank".width <= size THEN base + "rank".pos END,
                      "rank".width, "rank".signed) AS "rank",
           hex_le_int(h, CASE WHEN whole AND root.pos + root.width <= size THEN base + root.pos END,
                      root.width, root.signed) AS root_rank,
           hex_le_int(h, CASE WHEN whole AND peer.pos + peer.width <= size THEN base + peer.pos END,
                      peer.width, peer.signed) AS peer_rank,
           hex_le_int(h, CASE WHEN whole AND reduction.pos + reduction.width <= size THEN base + reduction.pos END,
                      reduction.width, reduction.signed) AS reduction_op,
           hex_le_int(h, CASE WHEN whole AND device.pos + device.width <= size THEN base + device.pos END,
                      device.width, device.signed) AS cuda_device
    FROM located
)
SELECT d.range_id, TRY_CAST(d.schema_id AS BIGINT) AS schema_id, d.comm_id, d.message_bytes, d.ranks, d."rank",
       d.root_rank, d.peer_rank, COALESCE(en.name, CAST(d.reduction_op AS VARCHAR)) AS reduction, d.cuda_device
FROM decoded AS d
LEFT JOIN enum_name AS en ON en.domain_id = d.domain_id AND en.enum_id = d.enum_id AND en.value = d.reduction_op
ORDER BY d.range_id;
