-- nsysql: analysis._cp_data_ranges v1
-- purpose: The texts of the data-loading ranges (macros.is_data_loading) of the processes with steps: the ranges whose CPU time the dataloader_wait finding's predicted gain removes (nsysql/answers/what_if.py).
-- requires: analysis.steady_steps, nvtx_range, macros.is_data_loading
-- params: none
-- columns:
--   text | VARCHAR | text
SELECT DISTINCT text FROM nvtx_range
WHERE pid IN (SELECT DISTINCT pid FROM steady_steps) AND text IS NOT NULL AND is_data_loading(text)
ORDER BY text;
