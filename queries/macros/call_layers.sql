-- nsysql: macros.call_layers v1
-- purpose: Where a process's CUDA calls were made, in few words: `call_layers(calls, runtime_nvtx, nvtx_context, user_range)` reads the table or CTE named `calls` (columns pid, runtime_id, weight) and returns one row per pid with `layers`, the three user-range paths (nvtx_context's user range around the call, '(outside user ranges)' without one) with the most weight, heaviest first, comma-separated.
-- requires: none
-- params: none
-- notes: Equal weights: the paths in name order. The normalized tables are passed by name. findings.pageable_copy
--   (weight: the copies' GPU time) and findings.sync_in_step (the GPU idle time of the calls) read it.
-- columns:
--   pid | BIGINT | id
--   layers | VARCHAR | text
CREATE OR REPLACE TEMP MACRO call_layers(calls, runtime_nvtx, nvtx_context, user_range) AS TABLE
WITH
call_layer AS (
    SELECT c.pid, COALESCE(u.layer, '(outside user ranges)') AS range_path, SUM(c.weight) AS weight
    FROM query_table(calls) AS c
    LEFT JOIN query_table(runtime_nvtx) AS rn ON rn.runtime_id = c.runtime_id
    LEFT JOIN query_table(nvtx_context) AS x ON x.range_id = rn.range_id
    LEFT JOIN query_table(user_range) AS u ON u.range_id = x.user_range_id
    GROUP BY c.pid, range_path
)
SELECT pid, string_agg(range_path, ', ' ORDER BY weight DESC, range_path) AS layers
FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY pid ORDER BY weight DESC, range_path) AS rank FROM call_layer)
WHERE rank <= 3 GROUP BY pid;
