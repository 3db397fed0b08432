-- nsysql: macros.human_ns_each v1
-- purpose: A list of durations in ns as a finding prints them: `human_ns_each([idle_ns / steps, wall_ns / steps])` is the list of their macros.human_ns texts, so a finding's `shown` step reads its numbers as d[1], d[2], ...
-- requires: macros.human_ns
-- params: none
-- notes: A scalar macro (inlined where it is called): list_transform over the values cast to DOUBLE[]. Every finding
--   reads it.
-- columns:
--   human_ns_each | VARCHAR[] | text
CREATE OR REPLACE TEMP MACRO human_ns_each(durations) AS list_transform(durations::DOUBLE[], lambda x: human_ns(x));
