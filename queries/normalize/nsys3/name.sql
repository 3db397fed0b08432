-- nsysql: normalize.nsys3.name v1
-- purpose: Every StringIds string once, as a value of the ENUM type nsys_string (created here): the per-row tables (kernel_int, runtime_int, gpu_op_int) store names as this ENUM, a small integer each, and their views (kernel, runtime, gpu_op) cast it back to text.
-- requires: raw.StringIds
-- params: none
-- storage-of: kernel, runtime, gpu_op (a copy of the Parquet dataset leaves this table out: those hold its rows)
-- notes: writing 1.7M kernels' three names as VARCHAR cost 3x the rest of the kernel table; an ENUM column costs
--   what an integer does, and reading it back as text (a cast) costs next to nothing, unlike a join to a name table
--   in every reader's view. nsys_string holds each distinct string and each CUDA API name with its `_vNNNN` suffix
--   dropped (runtime.api_short_name).
-- columns:
--   name_id | BIGINT | id (StringIds id)
--   name | ENUM | text
--   short_name | ENUM | text (name with a trailing 4-digit `_vNNNN` dropped, as nsys stats prints CUDA API names)
CREATE TYPE nsys_string AS ENUM (
    SELECT DISTINCT s
    FROM (SELECT value FROM raw.StringIds
          UNION ALL
          SELECT regexp_replace(value, '_v[0-9]{4}$', '') FROM raw.StringIds) AS t(s)
    WHERE s IS NOT NULL
    ORDER BY s
);
CREATE TABLE name AS
SELECT id AS name_id,
       CAST(value AS nsys_string) AS name,
       CAST(regexp_replace(value, '_v[0-9]{4}$', '') AS nsys_string) AS short_name
FROM raw.StringIds
ORDER BY name_id;
