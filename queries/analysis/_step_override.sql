-- nsysql: analysis._step_override v1
-- purpose: The step level the user named (`--step-range`, `nsysql.open(..., step_range=)`): no row unless one was named, when nsysql gives its row in place of this query's.
-- requires: none
-- params: none
-- notes: analysis.step_candidates reads it: a row here makes the level it names the steps, whatever the other rules say.
-- columns:
--   level | VARCHAR | text (a level of analysis.step_candidates, or its last components: `decode_step`, `request/decode_step`)
SELECT CAST(NULL AS VARCHAR) AS level WHERE false ORDER BY level;
