-- nsysql: macros.human_ns v1
-- purpose: A duration in ns as a finding's title and evidence print it: `1.23 s`, `412 ms`, `41.2 ms`, `4.12 ms`, `412 µs`, `41.2 µs`, `4.12 µs`, `412 ns` (three significant digits, the unit chosen by size).
-- requires: none
-- params: none
-- notes: A scalar macro over a DOUBLE; findings call it inside list_transform over their per-step numbers
--   (`list_transform([idle_ns / steps]::DOUBLE[], lambda x: human_ns(x))`), so the formatting is written once.
--   The same rule as Python's nsysql/core/units.py `duration` (tests/test_units.py compares them value by value).
-- columns:
--   human_ns | VARCHAR | text
CREATE OR REPLACE TEMP MACRO human_ns(x) AS
    CASE WHEN abs(x) >= 1e11 THEN printf('%.0f s', x / 1e9) WHEN abs(x) >= 1e10 THEN printf('%.1f s', x / 1e9)
         WHEN abs(x) >= 1e9 THEN printf('%.2f s', x / 1e9) WHEN abs(x) >= 1e8 THEN printf('%.0f ms', x / 1e6)
         WHEN abs(x) >= 1e7 THEN printf('%.1f ms', x / 1e6) WHEN abs(x) >= 1e6 THEN printf('%.2f ms', x / 1e6)
         WHEN abs(x) >= 1e5 THEN printf('%.0f µs', x / 1e3) WHEN abs(x) >= 1e4 THEN printf('%.1f µs', x / 1e3)
         WHEN abs(x) >= 1e3 THEN printf('%.2f µs', x / 1e3) ELSE printf('%.0f ns', x) END;
