-- nsysql: recipes._check v1
-- purpose: What a recipe's options find in an export, one row: the NVTX ranges and kernels named as --name says, and the NVTX events --filter-nvtx names, so that a recipe with nothing to show says why.
-- requires: macros.nvtx_events
-- params: name VARCHAR default NULL (--name),
--   filter_name VARCHAR default NULL (--filter-nvtx's range),
--   filter_domain VARCHAR default NULL (its domain: NULL the default one, '*' any)
-- rows: one
-- notes: As NVIDIA's recipes say it (nsys_recipe/lib/data_utils.py): a filter range of no event is "not found",
--   one of no range in the domain asked for is "not found in the default domain" (or in that domain), and an index
--   at or beyond filter_in_domain "exceeds the number of rows".
-- columns:
--   named_ranges | BIGINT | count (NVTX ranges with an end whose text is name)
--   named_kernels | BIGINT | count (kernels whose short name is name)
--   filter_texts | BIGINT | count (NVTX events whose text is filter_name)
--   filter_in_domain | BIGINT | count (of those, the ones in filter_domain as macros.nvtx_chosen takes them)
--   nccl_kernels | BIGINT | count (kernels whose short name starts with nccl)
WITH events AS (
    SELECT * FROM nvtx_events(nvtx_range, nvtx_point) WHERE text IN ($name, $filter_name)
)
SELECT (SELECT COUNT(*) FROM events WHERE text = $name AND is_range AND end_ns IS NOT NULL) AS named_ranges,
       (SELECT COUNT(*) FROM kernel WHERE short_name = $name) AS named_kernels,
       (SELECT COUNT(*) FROM events WHERE text = $filter_name) AS filter_texts,
       (SELECT COUNT(*) FROM events
        WHERE text = $filter_name
          AND CASE WHEN $filter_domain IS NULL THEN is_range AND domain_name = ''
                   WHEN $filter_domain = '*' THEN true
                   ELSE is_range AND domain_name = $filter_domain END) AS filter_in_domain,
       (SELECT COUNT(*) FROM kernel WHERE starts_with(CAST(short_name AS VARCHAR), 'nccl')) AS nccl_kernels;
