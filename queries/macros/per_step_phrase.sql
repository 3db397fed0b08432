-- nsysql: macros.per_step_phrase v1
-- purpose: How a finding's evidence opens for the steps it covers: `per_step_phrase(last_step, steps)` is 'Over the GPU activity' when there are no steps (analysis.steady_steps' window 0, the span of GPU activity), 'In the analysed step' for one, else 'Per step (mean of N)'.
-- requires: none
-- params: none
-- notes: A scalar macro (inlined where it is called): findings.dataloader_wait and findings.gpu_idle_in_step read it.
-- columns:
--   per_step_phrase | VARCHAR | text
CREATE OR REPLACE TEMP MACRO per_step_phrase(last_step, steps) AS
    CASE WHEN last_step = 0 THEN 'Over the GPU activity' WHEN steps = 1 THEN 'In the analysed step'
         ELSE printf('Per step (mean of %,d)', steps) END;
