-- nsysql: recipes._session v1
-- purpose: The facts of an export that NVIDIA's recipes take beside its rows, one row: its report's name, when its session started (UTC, to align several exports), how long it lasted, its kernels and its NVTX events without an end.
-- requires: none
-- params: none
-- rows: one
-- notes: report: the .nsys-rep the export was made from (META_DATA_EXPORT's EXPORT_PARAM_INPUT_FILE), without
--   .nsys-rep or .qdrep: the name NVIDIA's recipes write in files.parquet and sort their inputs by; NULL when the
--   export does not record it. duration_ns: ANALYSIS_DETAILS' duration, the heatmaps' time axis.
--   nvtx_without_end: NVTX events with no end (unterminated ranges, marks, domain registrations): with any, pandas
--   reads the NVTX table's end times as floats, and NVIDIA's files then hold floats where they hold integers
--   otherwise (nsysql/answers/recipes.py).
-- columns:
--   report | VARCHAR | text
--   utc_start_ns | BIGINT | ns since the Unix epoch
--   duration_ns | BIGINT | ns
--   kernels | BIGINT | count
--   nvtx_without_end | BIGINT | count
SELECT (SELECT regexp_replace(regexp_replace(value, '^.*[/\\]', ''), '\.(nsys-rep|qdrep)$', '')
        FROM export_info WHERE key = 'EXPORT_PARAM_INPUT_FILE') AS report,
       (SELECT utc_start_ns FROM session) AS utc_start_ns,
       (SELECT duration_ns FROM capture_span) AS duration_ns,
       (SELECT COUNT(*) FROM kernel) AS kernels,
       (SELECT COUNT(*) FROM nvtx_point WHERE end_ns IS NULL)
           + (SELECT COUNT(*) FROM nvtx_range WHERE is_open) AS nvtx_without_end;
