-- nsysql: findings.fp32_gemm v5
-- purpose: Finding: fp32 matrix multiplications and convolutions running on CUDA cores (no tensor cores) inside the analysed steps, which TF32 or bf16 autocast would move to tensor cores.
-- requires: analysis.steady_steps, analysis._step_label, analysis._steady_windows, analysis._step_busy, kernel, gpu_op_attribution, macros.human_ns_each, macros.plural_s, macros.union_ns, macros.clip_to_steps, macros.is_fp32_gemm, analysis.structure
-- params: $min_busy_pct DOUBLE default 10 (fires when those kernels take at least this share of the GPU busy time of the analysed steps, %), $speedup BIGINT default 8 (assumed ceiling of the tensor-core speedup)
-- notes: A kernel counts when its demangled name
--   (a) is a GEMM/convolution kernel: matches, ignoring case, gemm|xmma|cutlass|convolve|conv([^e]|$)|winograd|
--       fft2d|fprop|dgrad|wgrad (cuBLAS sm80_xmma_gemm_*, cutlass simt sgemm, cuDNN implicit_convolve_sgemm /
--       winograd / fft kernels; `conv` not followed by `e`, so type-conversion kernels are not convolutions), and is
--       neither a matrix-vector product (gemv: bound by memory, no tensor-core path, so TF32 changes nothing: a
--       decode step's batch-4 products) nor cuBLASLt's split-K reduction (splitKreduce: it adds partial results
--       of whichever GEMM ran, on tensor cores or not, and multiplies nothing);
--   (b) is a CUDA-core kernel by macros.tensor_core_class ('no'): TF32 tensor-core kernels (cuDNN's
--       sm90_xmma_*_f32f32_tf32f32_f32_*, cutlass_tensorop_s1688*_tf32_*), cuBLAS's nvjet_* and fp32 attention on
--       sm80 and newer (fmha_cutlassF_f32_*_sm80, 3xTF32) already use tensor cores, and a GEMM of unknown precision
--       is not counted;
--   (c) computes in fp32: it matches f32f32|sgemm|ffma|float|_s1688|fp32 and none of bf16|bfloat16|f16|fp16|half|tf32|
--       double|dgemm|int8|i8.
--   Kernels of a process with analysed steps, clipped to its analysed steps. busy = |union of those kernels ∩ the
--   steps|; the share compares it with the GPU busy time inside the steps (analysis._step_busy: the busy intervals
--   of the process's devices, analysis._process_busy, clipped to the steps).
--   recoverable_ns = busy x ($speedup - 1) / $speedup in integer arithmetic (floor): if the same work ran $speedup
--   times faster, that much GPU time would go. The default 8 is the ratio of dense TF32 tensor-core to fp32 CUDA-core
--   peak throughput in NVIDIA's data sheets (A100: 156 / 19.5 TFLOP/s = 8; H100 SXM: 494.7 / 66.9 = 7.4), a ceiling:
--   small GEMMs bound by memory or launch latency gain far less. GPU time saved shortens the step only where the
--   GPU is on the critical path, so this bounds the wall time gained from above.
--   Fires when busy >= $min_busy_pct % of the analysed steps' GPU busy time.
--   where: the steps, the three kernels (short names; a cuBLAS name cut before `_tilesize`, a CUTLASS kernel by its
--   `cutlass_...` template argument; tile variants of one kernel add up) and PyTorch ops or autograd nodes (from op markers, when
--   captured) with the most time. Evidence numbers per step are means over the analysed steps.
-- columns:
--   rule | VARCHAR | text (fp32_gemm)
--   title | VARCHAR | text
--   where | VARCHAR | text (steps, kernels, ops)
--   evidence | VARCHAR | text (numbers in ms, %)
--   action | VARCHAR | text
--   recoverable_ns | BIGINT | ns (upper bound of GPU time recoverable, total over the analysed steps)
--   recoverable_pct | DOUBLE | pct of the analysed steps' wall time | 1
WITH
win AS (  -- the analysed steady-state step windows
    SELECT step, pid, tid, start_ns, end_ns, end_ns - start_ns AS wall_ns FROM steady_steps WHERE analysed
),
kernel_class AS (  -- each distinct kernel name once: is it an fp32 GEMM/convolution off the tensor cores? (any_value:
    -- the optimizer cannot push the name tests below the grouping, so they run per name, not per kernel)
    SELECT kernel_name, is_fp32_gemm(kernel_name) AS fp32_gemm
    FROM (SELECT any_value(kernel_name) AS kernel_name FROM kernel GROUP BY kernel_name)
),
gemm AS (  -- those kernels of the processes with analysed steps
    SELECT k.kernel_id, k.pid, k.start_ns, k.end_ns
    FROM kernel AS k JOIN kernel_class AS c USING (kernel_name)
    WHERE c.fp32_gemm AND k.pid IN (SELECT pid FROM win)
),
ops AS MATERIALIZED (  -- the fp32 GEMMs clipped to the analysed steps they overlap (queries/macros/clip_to_steps.sql)
    SELECT kernel_id AS op_id, pid, step, s, e FROM clip_to_steps(gemm, _steady_windows)
),
busy_in AS (  -- GPU busy time inside the analysed steps (the busy intervals, clipped to the steps, are disjoint)
    SELECT pid, SUM(end_ns - start_ns) AS busy_ns FROM _step_busy GROUP BY pid
),
gemm_interval AS (SELECT pid AS grp, s, e FROM ops),
unions AS (  -- |union of the clipped GEMMs| per process (queries/macros/union_ns.sql)
    SELECT u.grp AS pid, b.busy_ns, u.busy_ns AS gemm_ns
    FROM union_ns(gemm_interval) AS u JOIN busy_in AS b ON b.pid = u.grp
),
gemm_once AS MATERIALIZED (  -- each counted kernel once, for counts and names
    SELECT DISTINCT op_id, pid FROM ops
),
gemm_op AS (  -- their PyTorch op or autograd node, named as gpu_op_label names it, resolved only for them
    SELECT a.op_id,
           CASE WHEN a.eval_range_id IS NOT NULL
                THEN regexp_extract(ev.text, '^autograd::engine::evaluate_function: (.*?)(, op_id = [0-9]+)?$', 1)
                ELSE split_part(om.text, ', ', 1) END AS op
    FROM gemm_once AS g
    JOIN gpu_op_attribution AS a ON a.op_kind = 'kernel' AND a.op_id = g.op_id
    LEFT JOIN nvtx_range AS om ON om.range_id = a.op_range_id
    LEFT JOIN nvtx_range AS ev ON ev.range_id = a.eval_range_id
),
gemm_kernel AS (
    SELECT g.pid, k.end_ns - k.start_ns AS dur_ns, COALESCE(l.op, '?') AS op,
           CASE WHEN regexp_matches(k.kernel_name, 'cutlass_[0-9]+_[A-Za-z0-9_]+')
                THEN regexp_extract(k.kernel_name, 'cutlass_[0-9]+_[A-Za-z0-9_]+')
                ELSE regexp_replace(k.short_name, '_tilesize.*$', '') END AS short_name
    FROM gemm_once AS g
    JOIN kernel AS k ON k.kernel_id = g.op_id
    LEFT JOIN gemm_op AS l ON l.op_id = g.op_id
),
counts AS (
    SELECT pid, COUNT(*) AS kernels, SUM(dur_ns) AS sum_ns FROM gemm_kernel GROUP BY pid
),
top_kernels AS (
    SELECT pid, string_agg(short_name, ', ' ORDER BY dur_ns DESC, short_name) AS names
    FROM (SELECT pid, short_name, SUM(dur_ns) AS dur_ns,
                 ROW_NUMBER() OVER (PARTITION BY pid ORDER BY SUM(dur_ns) DESC, short_name) AS rank
          FROM gemm_kernel GROUP BY pid, short_name)
    WHERE rank <= 3 GROUP BY pid
),
top_ops AS (
    SELECT pid, string_agg(op, ', ' ORDER BY dur_ns DESC, op) AS names
    FROM (SELECT pid, op, SUM(dur_ns) AS dur_ns,
                 ROW_NUMBER() OVER (PARTITION BY pid ORDER BY SUM(dur_ns) DESC, op) AS rank
          FROM gemm_kernel WHERE op <> '?' GROUP BY pid, op)
    WHERE rank <= 3 GROUP BY pid
),
per_pid AS (
    SELECT pid, COUNT(*) AS steps, SUM(wall_ns) AS wall_ns FROM win GROUP BY pid
),
fired AS (
    SELECT p.pid, p.steps, p.wall_ns, u.busy_ns, u.gemm_ns, c.kernels, k.names AS kernel_names, o.names AS op_names,
           l.label, u.gemm_ns * ($speedup - 1) // $speedup AS saved_ns
    FROM per_pid AS p
    JOIN unions AS u USING (pid)
    JOIN counts AS c USING (pid)
    JOIN top_kernels AS k USING (pid)
    JOIN _step_label AS l USING (pid)
    LEFT JOIN top_ops AS o USING (pid)
    WHERE u.gemm_ns > 0 AND 100.0 * u.gemm_ns >= $min_busy_pct * u.busy_ns
),
shown AS (  -- the per-step numbers in human units: d[1], d[2], ...
    SELECT *, human_ns_each([gemm_ns / steps, busy_ns / steps, saved_ns / steps]) AS d
    FROM fired
)
SELECT 'fp32_gemm' AS rule,
       printf('fp32 GEMMs/convolutions without tensor cores: %s per step, %.0f%% of GPU busy time',
              d[1], 100.0 * gemm_ns / busy_ns) AS title,
       label || ', kernels ' || kernel_names || CASE WHEN op_names IS NOT NULL THEN ', ops ' || op_names ELSE '' END
         AS "where",
       printf('%,d fp32 matmul/convolution kernels on CUDA cores (FFMA/SIMT, no TF32) in %,d step%s: ', kernels, steps,
              plural_s(steps))
         || printf('%s of GPU time per step, %.1f%% of the %s the GPU was busy. At %dx on tensor cores ', d[1],
                   100.0 * gemm_ns / busy_ns, d[2], $speedup)
         || printf('(the TF32/fp32 peak ratio) they would take %s less per step.', d[3]) AS evidence,
       'Let matmuls and convolutions use tensor cores: torch.set_float32_matmul_precision("high") and '
         || 'torch.backends.cudnn.allow_tf32 = True (TF32), or run '
         || CASE WHEN (SELECT MIN(program_kind) FROM structure AS k WHERE k.pid = shown.pid) = 'inference'
                 THEN 'the model' ELSE 'forward and loss' END
         || ' under torch.autocast("cuda", dtype=torch.bfloat16).' AS action,
       CAST(saved_ns AS BIGINT) AS recoverable_ns,
       100.0 * saved_ns / wall_ns AS recoverable_pct
FROM shown
ORDER BY recoverable_ns DESC, pid;
