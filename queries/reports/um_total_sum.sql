-- nsysql: reports.um_total_sum v1
-- purpose: Unified-memory totals: bytes migrated each way, CPU and GPU page faults, and the range of virtual addresses involved (MB = 10^6 bytes), identical to `nsys stats -r um_total_sum` (Nsight Systems 2025.3).
-- requires: um_migration, um_cpu_page_fault, um_gpu_page_fault
-- params: none
-- rows: one
-- notes: As NVIDIA: the migrations are the unified Host-to-Device and Device-to-Host copies; the GPU page faults
--   sum numberOfPageFaults. The address range spans the CPU faults, GPU faults and both migration directions, and
--   is empty when any of the four has no rows (SQLite's several-argument min and max give NULL then).
-- optional: ("Minimum Virtual Address", "Maximum Virtual Address")
-- columns:
--   Total HtoD Migration Size (MB) | DOUBLE | MB (10^6 bytes) | 3
--   Total DtoH Migration Size (MB) | DOUBLE | MB (10^6 bytes) | 3
--   Total CPU Page Faults | BIGINT | count
--   Total GPU PageFaults | BIGINT | count
--   Minimum Virtual Address | VARCHAR | address (hex, as nsys prints it)
--   Maximum Virtual Address | VARCHAR | address (hex, as nsys prints it)
WITH cpu AS (
    SELECT MIN(address) AS lo, MAX(address) AS hi, COUNT(*) AS faults FROM um_cpu_page_fault
), gpu AS (
    SELECT MIN(address) AS lo, MAX(address) AS hi, SUM(faults) AS faults FROM um_gpu_page_fault
), h2d AS (
    SELECT MIN(virtual_address) AS lo, MAX(virtual_address) AS hi, SUM(bytes) AS bytes
    FROM um_migration WHERE direction = 'HtoD'
), d2h AS (
    SELECT MIN(virtual_address) AS lo, MAX(virtual_address) AS hi, SUM(bytes) AS bytes
    FROM um_migration WHERE direction = 'DtoH'
), ranges AS (
    SELECT CASE WHEN cpu.lo IS NULL OR gpu.lo IS NULL OR h2d.lo IS NULL OR d2h.lo IS NULL THEN NULL
                ELSE least(cpu.lo, gpu.lo, h2d.lo, d2h.lo) END AS lo,
           CASE WHEN cpu.hi IS NULL OR gpu.hi IS NULL OR h2d.hi IS NULL OR d2h.hi IS NULL THEN NULL
                ELSE greatest(cpu.hi, gpu.hi, h2d.hi, d2h.hi) END AS hi
    FROM cpu, gpu, h2d, d2h
)
SELECT h2d.bytes / 1e6 AS "Total HtoD Migration Size (MB)",
       d2h.bytes / 1e6 AS "Total DtoH Migration Size (MB)",
       cpu.faults AS "Total CPU Page Faults",
       gpu.faults AS "Total GPU PageFaults",
       '0x' || upper(format('{:x}', ranges.lo)) AS "Minimum Virtual Address",
       '0x' || upper(format('{:x}', ranges.hi)) AS "Maximum Virtual Address"
FROM ranges, cpu, gpu, d2h, h2d;
