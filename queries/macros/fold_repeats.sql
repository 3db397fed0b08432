-- nsysql: macros.fold_repeats v1
-- purpose: A layer path with its numbered repeats of the step's work folded: `fold_repeats(path)` turns each path component named like a micro-batch, chunk, accumulation step or iteration and a number (`micro_batch_3`, `microbatch2`, `mb_1`, `chunk_0`, `accum_step_2`, `step_5`, `iteration 4`, any case) into the name and `*` (`micro_batch_*`), so gradient accumulation's micro-batches are one path.
-- requires: none
-- params: none
-- notes: A scalar macro; analysis.layers (unless merge_repeats, which folds every number) and analysis.top_ops read
--   it. Layers such as `layer_3` are not folded: they are different weights, not a repeat.
-- columns:
--   fold_repeats | VARCHAR | text
CREATE OR REPLACE TEMP MACRO fold_repeats(path) AS  -- twice over: a match takes the '/' after it
    regexp_replace(regexp_replace(path,
                       '(^|/)((micro[_ -]?batch|mb|chunk|accum[a-z_]*|step|iter|iteration)[_ #-]?)[0-9]+(/|$)',
                       '\1\2*\4', 'gi'),
                   '(^|/)((micro[_ -]?batch|mb|chunk|accum[a-z_]*|step|iter|iteration)[_ #-]?)[0-9]+(/|$)',
                   '\1\2*\4', 'gi');
