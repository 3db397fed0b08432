-- nsysql: macros.plural_s v1
-- purpose: The plural ending of a count in a finding's text: `plural_s(n)` is '' when n is 1, else 's' (`printf('%d step%s', steps, plural_s(steps))`).
-- requires: none
-- params: none
-- notes: A scalar macro (inlined where it is called); the findings read it.
-- columns:
--   plural_s | VARCHAR | text
CREATE OR REPLACE TEMP MACRO plural_s(n) AS CASE WHEN n = 1 THEN '' ELSE 's' END;
