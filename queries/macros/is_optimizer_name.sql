-- nsysql: macros.is_optimizer_name v1
-- purpose: Whether a user NVTX range's text names an optimizer step: `is_optimizer_name(text)` is true, in any case, when the text contains `optim` (optim, optimizer, optimizer_step, optimizer.step, optim_step, step_optimizer, ...), or when the whole text is `opt`, `sgd` or a word starting with `adam` (adam, adamw, adamax, adam8bit), optionally preceded by `step` and followed by `step` or `zero_grad`, joined by nothing, `_`, `.`, `-` or a space (opt_step, opt.step, OptStep, step_opt, SGD.step, AdamW_step, opt.zero_grad).
-- requires: none
-- params: none
-- notes: A scalar macro (inlined where it is called), read by normalize.nsys3.nvtx_name once per distinct range
--   text (its is_optim: a user range; PyTorch's own `Optimizer.step#...` / `Optimizer.zero_grad#...` op markers
--   are optimizer ranges there too). `opt`, `sgd` and `adam...` count as whole names only, so that a range named
--   `option`, `adopt`, `OPT-125m forward` or `sgd_loader_stats` is no optimizer.
-- columns:
--   is_optimizer_name | BOOLEAN | flag
CREATE OR REPLACE TEMP MACRO is_optimizer_name(text) AS
    contains(lower(text), 'optim')
      OR regexp_full_match(lower(text), '(step[ _.-]?)?(opt|sgd|adam[a-z0-9]*)([ _.-]?(step|zero_grad))?');
