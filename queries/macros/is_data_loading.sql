-- nsysql: macros.is_data_loading v1
-- purpose: Whether an NVTX range's text names data loading, by the rule of findings.dataloader_wait: `is_data_loading(text)` is true when it matches, ignoring case, dataloader|data[ _-]?load|load[ _-]?(batch|data)|(next|get|fetch)[ _-]?batch|^data$|^batch$|input[ _-]?pipeline.
-- requires: none
-- params: none
-- notes: A scalar macro: read by findings.dataloader_wait and analysis._cp_data_ranges (the ranges whose CPU time
--   the finding's predicted gain removes, nsysql/answers/what_if.py).
-- columns:
--   is_data_loading | BOOLEAN | flag
CREATE OR REPLACE TEMP MACRO is_data_loading(text) AS
    regexp_matches(text, 'dataloader|data[ _-]?load|load[ _-]?(batch|data)|(next|get|fetch)[ _-]?batch|^data$|^batch$|input[ _-]?pipeline', 'i');
