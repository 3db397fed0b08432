-- nsysql: normalize.nsys3.session v1
-- purpose: The capture session, one row: when it started (UTC, which aligns the exports of one job made by one nsys per rank) and the rank the profiled process was launched as (RANK, LOCAL_RANK, WORLD_SIZE of its environment, as torchrun sets them).
-- requires: raw.TARGET_INFO_SESSION_START_TIME, raw.META_DATA_CAPTURE
-- params: none
-- notes: nsys records the environment of the process it launched (META_DATA_CAPTURE, PROCESS_0:ENVIRONMENT_VARIABLE,
--   `NAME="value"`): with one nsys per rank (torchrun --no-python nsys profile ...) that process is the rank and
--   carries RANK; with one nsys over torchrun it is torchrun's, which has no RANK (NULL: ranks are then numbered by
--   device, analysis.comm_instances). A value that is not a whole number is NULL.
-- columns:
--   utc_start_ns | BIGINT | ns since the Unix epoch (NULL when the export lacks TARGET_INFO_SESSION_START_TIME)
--   rank | BIGINT | index (RANK; NULL without it)
--   local_rank | BIGINT | index (LOCAL_RANK; NULL without it)
--   world_size | BIGINT | count (WORLD_SIZE; NULL without it)
CREATE TABLE session AS
WITH env AS (
    SELECT regexp_extract(value, '^([A-Za-z_][A-Za-z0-9_]*)=', 1) AS k,
           trim(regexp_extract(value, '^[A-Za-z_][A-Za-z0-9_]*=(.*)$', 1), '"') AS v
    FROM raw.META_DATA_CAPTURE WHERE name = 'PROCESS_0:ENVIRONMENT_VARIABLE'
)
SELECT (SELECT MIN(utcEpochNs) FROM raw.TARGET_INFO_SESSION_START_TIME) AS utc_start_ns,
       (SELECT TRY_CAST(MIN(v) AS BIGINT) FROM env WHERE k = 'RANK') AS rank,
       (SELECT TRY_CAST(MIN(v) AS BIGINT) FROM env WHERE k = 'LOCAL_RANK') AS local_rank,
       (SELECT TRY_CAST(MIN(v) AS BIGINT) FROM env WHERE k = 'WORLD_SIZE') AS world_size;
