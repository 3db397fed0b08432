-- nsysql: normalize.nsys3.openacc_event v1
-- purpose: OpenACC events traced by `nsys profile --trace=openacc` through CUPTI (CUPTI_ACTIVITY_KIND_OPENACC_DATA, _LAUNCH and _OTHER), one row per event, with its directive's source file and line.
-- requires: raw.CUPTI_ACTIVITY_KIND_OPENACC_DATA, raw.CUPTI_ACTIVITY_KIND_OPENACC_LAUNCH,
--   raw.CUPTI_ACTIVITY_KIND_OPENACC_OTHER, raw.StringIds
-- params: none
-- notes: The three tables of export schema 3.20.3 (Nsight Systems 2025.3), which NVIDIA's openacc_sum reads as every
--   table named CUPTI_ACTIVITY_KIND_OPENACC_*.
-- columns:
--   kind | VARCHAR | text (DATA, LAUNCH or OTHER: the table a row came from)
--   source_row | BIGINT | id (the row's rowid in its table)
--   start_ns | BIGINT | ns
--   end_ns | BIGINT | ns
--   global_tid | BIGINT | id
--   pid | BIGINT | id
--   tid | BIGINT | id
--   name | VARCHAR | text (the event: Enqueue launch, Enqueue upload, Compute construct, Wait ...)
--   source_file | VARCHAR | text (of the directive; NULL where nsys has none, e.g. device init)
--   line | BIGINT | count (line of the directive in source_file)
--   function_name | VARCHAR | text (the function the directive is in)
--   bytes | BIGINT | bytes (DATA rows: bytes moved or allocated)
--   variable | VARCHAR | text (DATA rows: the variable)
--   kernel_name | VARCHAR | text (LAUNCH rows: the kernel launched)
CREATE TABLE openacc_event AS
WITH events AS (
    SELECT 'DATA' AS kind, rowid AS source_row, start, "end", globalTid, nameId, srcFile, lineNo, funcName, bytes,
           varName, CAST(NULL AS BIGINT) AS kernelName
    FROM raw.CUPTI_ACTIVITY_KIND_OPENACC_DATA
    UNION ALL
    SELECT 'LAUNCH', rowid, start, "end", globalTid, nameId, srcFile, lineNo, funcName, NULL, NULL, kernelName
    FROM raw.CUPTI_ACTIVITY_KIND_OPENACC_LAUNCH
    UNION ALL
    SELECT 'OTHER', rowid, start, "end", globalTid, nameId, srcFile, lineNo, funcName, NULL, NULL, NULL
    FROM raw.CUPTI_ACTIVITY_KIND_OPENACC_OTHER
)
SELECT e.kind,
       e.source_row,
       e.start AS start_ns,
       e."end" AS end_ns,
       e.globalTid AS global_tid,
       (e.globalTid >> 24) & 16777215 AS pid,
       e.globalTid & 16777215 AS tid,
       n.value AS name,
       f.value AS source_file,
       e.lineNo AS line,
       fn.value AS function_name,
       e.bytes,
       v.value AS variable,
       k.value AS kernel_name
FROM events AS e
LEFT JOIN raw.StringIds AS n ON n.id = e.nameId
LEFT JOIN raw.StringIds AS f ON f.id = e.srcFile
LEFT JOIN raw.StringIds AS fn ON fn.id = e.funcName
LEFT JOIN raw.StringIds AS v ON v.id = e.varName
LEFT JOIN raw.StringIds AS k ON k.id = e.kernelName;  -- no ORDER BY: readers order what they show
