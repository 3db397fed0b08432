-- nsysql: analysis.damaged_tables v1
-- purpose: Raw tables in which SQLite's own integrity check (PRAGMA quick_check, run once when the export was normalized) found problems: rows there may be missing, repeated or wrong; empty for every sound export.
-- requires: none
-- params: none
-- notes: reads normalize.nsys3.sqlite_check; nsysql.answers.sanity turns each row into one warning line.
-- columns:
--   raw_table | VARCHAR | text (nsys table)
--   problems | BIGINT | count (problems SQLite reported; it stops at 100)
--   first_problem | VARCHAR | text (the first of them, as SQLite words it)
SELECT raw_table, problems, first_problem
FROM sqlite_check
WHERE problems > 0
ORDER BY raw_table;
