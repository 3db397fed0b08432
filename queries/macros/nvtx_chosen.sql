-- nsysql: macros.nvtx_chosen v1
-- purpose: The NVTX events an NVIDIA recipe's `--filter-nvtx range[@domain][/index]` selects: `nvtx_chosen(events, f_name, f_domain, f_index)` reads the table or CTE named `events` (columns event_id, start_ns, end_ns, text, domain_name, is_range: every NVTX event, end_ns NULL where it has none) and returns the chosen ones (event_id, s, e).
-- requires: none
-- params: none
-- notes: As NVIDIA's recipes (nsys_recipe/lib/data_utils.py, Nsight Systems 2025.3): the events whose text is
--   f_name; f_domain NULL: only ranges of the default domain, `*`: every event of that text in any domain (marks
--   too), else only ranges of that domain; f_index (0-based, NULL: all): the n-th of those in export order.
--   No row when nothing matches (the recipe's caller says why: queries/recipes/_filter_check.sql).
-- columns:
--   event_id | BIGINT | id
--   s | BIGINT | ns timestamp
--   e | BIGINT | ns timestamp (NULL: no end)
CREATE OR REPLACE TEMP MACRO nvtx_chosen(events, f_name, f_domain, f_index) AS TABLE
SELECT event_id, start_ns AS s, end_ns AS e
FROM (SELECT event_id, start_ns, end_ns, ROW_NUMBER() OVER (ORDER BY event_id) - 1 AS nth
      FROM query_table(events)
      WHERE text = f_name
        AND CASE WHEN f_domain IS NULL THEN is_range AND domain_name = ''
                 WHEN f_domain = '*' THEN true
                 ELSE is_range AND domain_name = f_domain END)
WHERE f_index IS NULL OR nth = f_index;
