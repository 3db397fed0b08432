-- nsysql: normalize.nsys3.string_ids_repeated v1
-- purpose: StringIds ids that appear on more than one row (nsys writes each once; an edited or merged export can repeat them), with how many rows and how many different strings each had.
-- requires: raw.StringIds
-- params: none
-- notes: the normalized tables read each id once, from its first row (nsysql.store.importer.RAW_TABLES), so a repeated id
--   never repeats the rows that look a name up; when its rows hold different strings, the names of that id may be
--   wrong. analysis.sanity counts this table and nsysql.answers.sanity turns it into a warning line. Empty for a sound export.
-- columns:
--   id | BIGINT | id (StringIds id)
--   copies | BIGINT | count (rows with this id)
--   names | BIGINT | count (different strings among them)
CREATE TABLE string_ids_repeated AS
SELECT id, copies, names
FROM raw.StringIds
WHERE copies > 1
ORDER BY id;
