-- nsysql: analysis._cp_steps v2
-- purpose: The steps whose critical path nsysql walks (docs/critical-path.md): every step of analysis.steady_steps with its thread's global id.
-- requires: analysis.steady_steps, thread
-- params: none
-- notes: A step's window is its range (steady_steps.range_start_ns/range_end_ns), also when the CPU runs ahead
--   and its time elsewhere is its period on the GPU's clock: the path is walked over the work the step launched.
-- columns:
--   step | BIGINT | index
--   pid | BIGINT | id
--   global_tid | BIGINT | id (the step's own thread; NULL for a gpu_span window without one)
--   source | VARCHAR | text (range, pattern, kernel-pattern, graph-launch or gpu_span)
--   start_ns | BIGINT | ns timestamp
--   end_ns | BIGINT | ns timestamp
--   wall_ns | BIGINT | ns
--   analysed | BOOLEAN | flag
SELECT s.step, s.pid, t.global_tid, s.source, s.range_start_ns AS start_ns, s.range_end_ns AS end_ns,
       s.range_wall_ns AS wall_ns, s.analysed
FROM steady_steps AS s LEFT JOIN thread AS t ON t.pid = s.pid AND t.tid = s.tid
ORDER BY s.pid, s.step;
