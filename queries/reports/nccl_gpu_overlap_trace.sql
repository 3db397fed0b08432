-- nsysql: reports.nccl_gpu_overlap_trace v1
-- purpose: Each kernel's overlap with other NCCL and compute kernels (%), identical to the rank_trace.csv of NVIDIA's multi-report recipe `nsys recipe nccl_gpu_overlap_trace` (Nsight Systems 2025.3; a recipe, not an `nsys stats` report), for captures with NCCL kernels.
-- requires: kernel
-- params: none
-- notes: As NVIDIA's recipe (nsys_recipe/recipes/nccl_gpu_overlap_trace and lib/overlap.py): a communication
--   kernel is one whose short name starts with `nccl` (case-sensitive: ncclDevKernel_*, ncclKernel_*; NCCL's
--   one-rank `oneRankReduce` is compute here, unlike macros.comm_kernels), every other kernel is compute. Kernels
--   are compared only with those of the same process and device. Communication Overlap = the time of the kernel
--   covered by at least one other communication kernel, Compute Overlap = by at least one other compute kernel
--   (the union, never a sum, so at most 100), each as a percentage of the kernel's duration, rounded to 1 decimal
--   as pandas rounds (half to even on the binary value: rint(x * 10) / 10); empty for a zero duration (NaN in
--   NVIDIA's CSV). Every kernel is listed, communication and compute alike, or none when the export has no
--   communication kernel at all (the recipe then writes no rows for it). Rows: per process and device (ascending),
--   the communication kernels first, then the compute kernels, each in export order (start order in nsys's
--   exports). Start and End are the export's timestamps (ns), Name the kernel's short name.
--   Rank is the recipe's number of the input report (its files sorted by name, from 0): one export here, so 0;
--   with several exports nsysql's own `export` and `rank` columns come first.
--   Linear: one sweep per process and device over the kernels' starts and ends counts the
--   communication and the compute kernels running from each instant to the next; running sums of those stretches
--   give, at every start and end, the time so far covered by at least one and by at least two kernels of each kind.
--   A kernel's overlap with the other kind is the first measure between its start and its end, with its own kind
--   the second (another one runs beside it). No pairs of kernels, no interval join: macros.union_islands and
--   device_busy_in answer "covered by any", not "by another of its own kind", and the sweep gives all four at once.
-- optional: "Rank", "End", "PID"
-- empty: no kernel named nccl* (NVIDIA's rule: a short name starting with nccl; one-rank NCCL's oneRankReduce is not one), so NVIDIA's recipe lists no kernel either
-- columns:
--   Name | VARCHAR | text (the kernel's short name)
--   Start | BIGINT | ns timestamp
--   End | BIGINT | ns timestamp
--   PID | BIGINT | id
--   DeviceID | BIGINT | id
--   Communication Overlap | DOUBLE | pct of the kernel's duration | 1
--   Compute Overlap | DOUBLE | pct of the kernel's duration | 1
--   Rank | BIGINT | id (0: the recipe's number of this export)
WITH
k AS MATERIALIZED (  -- every kernel, if any is NCCL's; grp: one integer per (process, device)
    SELECT kernel_id, short_name, start_ns, end_ns, pid, device_id, starts_with(short_name, 'nccl') AS is_nccl,
           pid * 4294967296 + device_id AS grp
    FROM kernel
    WHERE pid IS NOT NULL  -- pandas' groupby leaves out a kernel without a process
      AND EXISTS (SELECT 1 FROM kernel WHERE starts_with(short_name, 'nccl'))
),
edge AS (  -- each kernel's start (side 1) and end (side -1): what it adds to the count of its kind, dn or dc
    SELECT kernel_id, is_nccl, grp, start_ns AS t, 1 AS side,
           CASE WHEN is_nccl THEN 1 ELSE 0 END AS dn, CASE WHEN is_nccl THEN 0 ELSE 1 END AS dc
    FROM k
    UNION ALL
    SELECT kernel_id, is_nccl, grp, end_ns, -1, CASE WHEN is_nccl THEN -1 ELSE 0 END, CASE WHEN is_nccl THEN 0 ELSE -1 END
    FROM k
),
level AS (  -- after each edge n communication and c compute kernels run, for len ns: the last edge at an instant
            -- (every edge at it counted) gets the stretch to the next instant, the others at it 0 ns
    SELECT kernel_id, is_nccl, side, grp, t, SUM(dn) OVER w AS n, SUM(dc) OVER w AS c, LEAD(t) OVER w - t AS len
    FROM edge
    WINDOW w AS (PARTITION BY grp ORDER BY t, kernel_id, side ROWS UNBOUNDED PRECEDING)
),
upto AS (  -- time before each edge with at least 1 / 2 communication (n1, n2) and compute (c1, c2) kernels running
    SELECT kernel_id, is_nccl, side,
           COALESCE(SUM(CASE WHEN n >= 1 THEN len ELSE 0 END) OVER before, 0) AS n1,
           COALESCE(SUM(CASE WHEN n >= 2 THEN len ELSE 0 END) OVER before, 0) AS n2,
           COALESCE(SUM(CASE WHEN c >= 1 THEN len ELSE 0 END) OVER before, 0) AS c1,
           COALESCE(SUM(CASE WHEN c >= 2 THEN len ELSE 0 END) OVER before, 0) AS c2
    FROM level
    WINDOW before AS (PARTITION BY grp ORDER BY t, kernel_id, side ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
),
overlap AS (  -- end minus start; of its own kind another one must run beside it (>= 2), of the other kind any (>= 1)
    SELECT kernel_id,
           SUM(-side * CASE WHEN is_nccl THEN n2 ELSE n1 END) AS comm_ns,
           SUM(-side * CASE WHEN is_nccl THEN c1 ELSE c2 END) AS compute_ns
    FROM upto
    GROUP BY kernel_id
)
SELECT k.short_name AS "Name",
       k.start_ns AS "Start",
       k.end_ns AS "End",
       k.pid AS "PID",
       k.device_id AS "DeviceID",
       -- pandas: Sum / Duration * 100, then round(1) = rint(x * 10) / 10, in this order of operations
       round_even(CAST(o.comm_ns AS DOUBLE) / NULLIF(k.end_ns - k.start_ns, 0) * 100 * 10, 0) / 10
           AS "Communication Overlap",
       round_even(CAST(o.compute_ns AS DOUBLE) / NULLIF(k.end_ns - k.start_ns, 0) * 100 * 10, 0) / 10
           AS "Compute Overlap",
       CAST(0 AS BIGINT) AS "Rank"
FROM k JOIN overlap AS o USING (kernel_id)
ORDER BY k.pid, k.device_id, NOT k.is_nccl, k.kernel_id;
