-- nsysql: reports.um_sum v1
-- purpose: Unified-memory migrations and page faults per virtual address, highest migration throughput first (MB = 10^6 bytes), identical to `nsys stats -r um_sum` (Nsight Systems 2025.3).
-- requires: um_migration, um_cpu_page_fault, um_gpu_page_fault
-- params: $rows BIGINT default 10 (rows shown, highest throughput first; -1 for all)
-- notes: As NVIDIA: one row per virtual address that had a CPU page fault, a GPU page fault or a migration (the
--   `virtualAddress` of the unified Host-to-Device and Device-to-Host copies; Device-to-Device ones are left out).
--   CPU Page Faults counts fault rows, GPU Page Faults sums their numberOfPageFaults. Migration Throughput is the
--   bytes moved in both directions times 10^9 divided by their summed duration, that division in whole numbers as
--   SQLite does it (so 10^9 // ns, then times bytes); addresses with no migration have none and come last. Ties in
--   throughput: by address here, in SQLite's order in NVIDIA's (no fixture has any within the rows shown).
-- optional: "Migration Throughput (MB/s)"
-- text-min: "Virtual Address" 18
-- columns:
--   Virtual Address | VARCHAR | address (hex, as nsys prints it)
--   HtoD Migration size (MB) | DOUBLE | MB (10^6 bytes) | 3
--   DtoH Migration size (MB) | DOUBLE | MB (10^6 bytes) | 3
--   CPU Page Faults | BIGINT | count
--   " GPU Page Faults" | BIGINT | count (NVIDIA's name starts with a space)
--   Migration Throughput (MB/s) | DOUBLE | MB/s | 3
WITH cpu AS (
    SELECT address, COUNT(*) AS faults FROM um_cpu_page_fault GROUP BY address
), gpu AS (
    SELECT address, SUM(faults) AS faults FROM um_gpu_page_fault GROUP BY address
), moved AS (
    SELECT virtual_address AS address,
           SUM(bytes) FILTER (WHERE direction = 'HtoD') AS h2d,
           SUM(bytes) FILTER (WHERE direction = 'DtoH') AS d2h,
           COALESCE(SUM(end_ns - start_ns) FILTER (WHERE direction = 'HtoD'), 0)
             + COALESCE(SUM(end_ns - start_ns) FILTER (WHERE direction = 'DtoH'), 0) AS ns
    FROM um_migration
    WHERE direction IN ('HtoD', 'DtoH')
    GROUP BY virtual_address
), per_address AS (
    SELECT COALESCE(f.address, m.address) AS address, m.h2d, m.d2h, f.cpu_faults, f.gpu_faults,
           (COALESCE(m.d2h, 0) + COALESCE(m.h2d, 0)) * (1000000000 // NULLIF(m.ns, 0)) AS tput
    FROM (SELECT COALESCE(cpu.address, gpu.address) AS address, cpu.faults AS cpu_faults, gpu.faults AS gpu_faults
          FROM cpu FULL JOIN gpu ON gpu.address = cpu.address) AS f
    FULL JOIN moved AS m ON m.address = f.address
)
SELECT '0x' || upper(format('{:x}', address)) AS "Virtual Address",
       h2d / 1e6 AS "HtoD Migration size (MB)",
       d2h / 1e6 AS "DtoH Migration size (MB)",
       cpu_faults AS "CPU Page Faults",
       gpu_faults AS " GPU Page Faults",
       tput / 1e6 AS "Migration Throughput (MB/s)"
FROM per_address
ORDER BY tput DESC NULLS LAST, address
LIMIT (CASE WHEN $rows < 0 THEN NULL ELSE $rows END);
