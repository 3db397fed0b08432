-- nsysql: reports.um_cpu_page_faults_sum v1
-- purpose: Unified-memory CPU page faults per faulting instruction and source line, most first, identical to `nsys stats -r um_cpu_page_faults_sum` (Nsight Systems 2025.3).
-- requires: um_cpu_page_fault
-- params: none
-- notes: As NVIDIA: faults grouped by the instruction (an address or a function name, as nsys resolved it), source
--   file and line; the file is empty and the line 0 unless the capture resolved them. Ties in the count: by
--   instruction, file and line here, in the order of nsys's string ids in NVIDIA's.
-- columns:
--   CPU Page Faults | BIGINT | count
--   CPU Instruction Address | VARCHAR | text
--   Source File | VARCHAR | text
--   Source Line | BIGINT | count (line number)
SELECT COUNT(*) AS "CPU Page Faults",
       cpu_instruction AS "CPU Instruction Address",
       source_file AS "Source File",
       source_line AS "Source Line"
FROM um_cpu_page_fault
GROUP BY cpu_instruction, source_file, source_line
ORDER BY 1 DESC, cpu_instruction, source_file, source_line;
