-- nsysql: normalize.nsys3.sqlite_check v1
-- purpose: What SQLite's own integrity check (PRAGMA quick_check, run once when the export was normalized) found in each raw table nsysql reads that the export holds; problems there mean its rows may be missing, repeated or wrong.
-- requires: raw.nsysql_sqlite_check
-- params: none
-- notes: nsysql/store/sqlite_check.py runs the check on the export before DuckDB reads it and stages what it found as
--   raw.nsysql_sqlite_check; this keeps it with the cache, so later commands read it instead of checking again.
--   analysis.damaged_tables lists the tables with problems; nsysql.answers.sanity turns them into warning lines.
-- columns:
--   raw_table | VARCHAR | text (nsys table)
--   problems | BIGINT | count (problems SQLite reported; it stops at 100; 0 for a sound table)
--   first_problem | VARCHAR | text (the first of them, as SQLite words it; NULL when none)
CREATE TABLE sqlite_check AS
SELECT raw_table, problems, first_problem
FROM raw.nsysql_sqlite_check
ORDER BY raw_table;
