-- nsysql: normalize.nsys3.um_cpu_page_fault v1
-- purpose: CPU page faults on CUDA unified memory (CUDA_UM_CPU_PAGE_FAULT_EVENTS, from `nsys profile --cuda-um-cpu-page-faults=true`), one row per fault.
-- requires: raw.CUDA_UM_CPU_PAGE_FAULT_EVENTS, raw.StringIds
-- params: none
-- columns:
--   start_ns | BIGINT | ns
--   pid | BIGINT | id
--   address | BIGINT | address (virtual address of the faulting page)
--   cpu_instruction | VARCHAR | text (the faulting instruction's address, or its function, as nsys names it)
--   source_file | VARCHAR | text (NULL unless the capture resolved it)
--   source_line | BIGINT | count (line in source_file; 0 when unknown)
CREATE TABLE um_cpu_page_fault AS
SELECT f.start AS start_ns,
       (f.globalPid >> 24) & 16777215 AS pid,
       f.address,
       si.value AS cpu_instruction,
       sf.value AS source_file,
       f.sourceLine AS source_line
FROM raw.CUDA_UM_CPU_PAGE_FAULT_EVENTS AS f
LEFT JOIN raw.StringIds AS si ON si.id = f.CpuInstruction
LEFT JOIN raw.StringIds AS sf ON sf.id = f.sourceFile;
