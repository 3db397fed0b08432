-- nsysql: normalize.nsys3.raw_stubs v7
-- purpose: Empty stand-ins for raw nsys tables an export lacks (nsys exports only tables that have data), so every normalized table exists, empty, instead of failing.
-- requires: none
-- params: none
-- notes: raw.NVTX_EVENTS_BINARY is no nsys table: NVTX_EVENTS' rows with a binaryData (NVTX extended payloads,
--   `nsys export --include-blobs=true`), the bytes as SQLite's hex() writes them. The importer reads it through
--   SQLite's own SQL, as DuckDB's scanner refuses a blob in a column declared TEXT (importer.SQLITE_SQL_TABLES).
-- columns: (DDL only: one CREATE TABLE raw.<nsys table> per statement, with rowid and only the columns the normalized views read)
CREATE TABLE raw.StringIds (rowid BIGINT, id BIGINT, value VARCHAR, copies BIGINT, names BIGINT);
CREATE TABLE raw.META_DATA_EXPORT (rowid BIGINT, name VARCHAR, value VARCHAR);
CREATE TABLE raw.META_DATA_CAPTURE (rowid BIGINT, name VARCHAR, value VARCHAR);
CREATE TABLE raw.TARGET_INFO_SESSION_START_TIME (rowid BIGINT, utcEpochNs BIGINT);
CREATE TABLE raw.ThreadNames (rowid BIGINT, nameId BIGINT, priority BIGINT, globalTid BIGINT);
CREATE TABLE raw.PROCESSES (rowid BIGINT, globalPid BIGINT, pid BIGINT, name VARCHAR);
CREATE TABLE raw.TARGET_INFO_GPU (rowid BIGINT, id BIGINT, name VARCHAR, busLocation VARCHAR, totalMemory BIGINT, smCount BIGINT, chipName VARCHAR, memoryBandwidth BIGINT, clockRate BIGINT, computeMajor BIGINT, computeMinor BIGINT, maxWarpsPerSm BIGINT, maxBlocksPerSm BIGINT, maxRegistersPerSm BIGINT, maxShmemPerSm BIGINT, threadsPerWarp BIGINT);
CREATE TABLE raw.ANALYSIS_DETAILS (rowid BIGINT, globalVid BIGINT, duration BIGINT, startTime BIGINT, stopTime BIGINT);
CREATE TABLE raw.CUPTI_ACTIVITY_KIND_RUNTIME (rowid BIGINT, start BIGINT, "end" BIGINT, eventClass BIGINT, globalTid BIGINT, correlationId BIGINT, nameId BIGINT, returnValue BIGINT, callchainId BIGINT);
CREATE TABLE raw.CUPTI_ACTIVITY_KIND_KERNEL (rowid BIGINT, start BIGINT, "end" BIGINT, deviceId BIGINT, contextId BIGINT, streamId BIGINT, correlationId BIGINT, globalPid BIGINT, demangledName BIGINT, shortName BIGINT, mangledName BIGINT, launchType BIGINT, registersPerThread BIGINT, gridX BIGINT, gridY BIGINT, gridZ BIGINT, blockX BIGINT, blockY BIGINT, blockZ BIGINT, staticSharedMemory BIGINT, dynamicSharedMemory BIGINT, graphNodeId BIGINT);
CREATE TABLE raw.CUPTI_ACTIVITY_KIND_MEMCPY (rowid BIGINT, start BIGINT, "end" BIGINT, deviceId BIGINT, contextId BIGINT, streamId BIGINT, correlationId BIGINT, globalPid BIGINT, bytes BIGINT, copyKind BIGINT, srcKind BIGINT, dstKind BIGINT, graphNodeId BIGINT);
CREATE TABLE raw.CUPTI_ACTIVITY_KIND_MEMSET (rowid BIGINT, start BIGINT, "end" BIGINT, deviceId BIGINT, contextId BIGINT, streamId BIGINT, correlationId BIGINT, globalPid BIGINT, value BIGINT, bytes BIGINT, graphNodeId BIGINT, memKind BIGINT);
CREATE TABLE raw.CUPTI_ACTIVITY_KIND_GRAPH_TRACE (rowid BIGINT, start BIGINT, "end" BIGINT, deviceId BIGINT, contextId BIGINT, greenContextId BIGINT, streamId BIGINT, correlationId BIGINT, globalPid BIGINT, graphId BIGINT, graphExecId BIGINT);
CREATE TABLE raw.CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (rowid BIGINT, start BIGINT, "end" BIGINT, deviceId BIGINT, contextId BIGINT, streamId BIGINT, correlationId BIGINT, globalPid BIGINT, syncType BIGINT, eventSyncId BIGINT);
CREATE TABLE raw.CUPTI_ACTIVITY_KIND_CUDA_EVENT (rowid BIGINT, deviceId BIGINT, contextId BIGINT, streamId BIGINT, correlationId BIGINT, globalPid BIGINT, eventId BIGINT, eventSyncId BIGINT);
CREATE TABLE raw.NVTX_EVENTS (rowid BIGINT, start BIGINT, "end" BIGINT, eventType BIGINT, rangeId BIGINT, text VARCHAR, globalTid BIGINT, endGlobalTid BIGINT, textId BIGINT, domainId BIGINT);
CREATE TABLE raw.NVTX_EVENTS_BINARY (rowid BIGINT, eventType BIGINT, globalTid BIGINT, domainId BIGINT, binaryHex VARCHAR);
CREATE TABLE raw.NVTX_PAYLOAD_SCHEMAS (rowid BIGINT, domainId BIGINT, schemaId BIGINT, type BIGINT, payloadSize BIGINT, alignTo BIGINT);
CREATE TABLE raw.NVTX_PAYLOAD_SCHEMA_ENTRIES (rowid BIGINT, domainId BIGINT, schemaId BIGINT, idx BIGINT, flags BIGINT, type BIGINT, name VARCHAR, "offset" BIGINT);
CREATE TABLE raw.NVTX_PAYLOAD_ENUMS (rowid BIGINT, domainId BIGINT, schemaId BIGINT, size BIGINT);
CREATE TABLE raw.NVTX_PAYLOAD_ENUM_ENTRIES (rowid BIGINT, domainId BIGINT, schemaId BIGINT, name VARCHAR, value BIGINT);
CREATE TABLE raw.OSRT_API (rowid BIGINT, start BIGINT, "end" BIGINT, eventClass BIGINT, globalTid BIGINT, nameId BIGINT, returnValue BIGINT, nestingLevel BIGINT);
CREATE TABLE raw.ENUM_CUDA_MEMCPY_OPER (rowid BIGINT, id BIGINT, name VARCHAR, label VARCHAR);
CREATE TABLE raw.ENUM_CUDA_MEM_KIND (rowid BIGINT, id BIGINT, name VARCHAR, label VARCHAR);
CREATE TABLE raw.ENUM_CUPTI_SYNC_TYPE (rowid BIGINT, id BIGINT, name VARCHAR, label VARCHAR);
CREATE TABLE raw.CUDA_UM_CPU_PAGE_FAULT_EVENTS (rowid BIGINT, start BIGINT, globalPid BIGINT, address BIGINT, CpuInstruction BIGINT, sourceFile BIGINT, sourceLine BIGINT);
CREATE TABLE raw.CUDA_UM_GPU_PAGE_FAULT_EVENTS (rowid BIGINT, start BIGINT, "end" BIGINT, globalPid BIGINT, deviceId BIGINT, address BIGINT, numberOfPageFaults BIGINT, faultAccessType BIGINT);
CREATE TABLE raw.ENUM_CUDA_UNIF_MEM_ACCESS_TYPE (rowid BIGINT, id BIGINT, name VARCHAR, label VARCHAR);
CREATE TABLE raw.ENUM_CUDA_UNIF_MEM_MIGRATION (rowid BIGINT, id BIGINT, name VARCHAR, label VARCHAR);
CREATE TABLE raw.SYSCALL (rowid BIGINT, start BIGINT, "end" BIGINT, eventClass BIGINT, globalTid BIGINT, nameId BIGINT, callchainId BIGINT);
CREATE TABLE raw.MPI_RANKS (rowid BIGINT, globalTid BIGINT, rank BIGINT);
CREATE TABLE raw.MPI_P2P_EVENTS (rowid BIGINT, start BIGINT, "end" BIGINT, globalTid BIGINT, textId BIGINT, commHandle BIGINT, tag BIGINT, remoteRank BIGINT, size BIGINT, requestHandle BIGINT);
CREATE TABLE raw.MPI_START_WAIT_EVENTS (rowid BIGINT, start BIGINT, "end" BIGINT, globalTid BIGINT, textId BIGINT, requestHandle BIGINT);
CREATE TABLE raw.MPI_OTHER_EVENTS (rowid BIGINT, start BIGINT, "end" BIGINT, globalTid BIGINT, textId BIGINT);
CREATE TABLE raw.MPI_COLLECTIVES_EVENTS (rowid BIGINT, start BIGINT, "end" BIGINT, globalTid BIGINT, textId BIGINT, commHandle BIGINT, rootRank BIGINT, size BIGINT, recvSize BIGINT, requestHandle BIGINT);
CREATE TABLE raw.OPENMP_EVENT_KIND_THREAD (rowid BIGINT, start BIGINT, "end" BIGINT, globalTid BIGINT, nameId BIGINT);
CREATE TABLE raw.OPENMP_EVENT_KIND_PARALLEL (rowid BIGINT, start BIGINT, "end" BIGINT, globalTid BIGINT, nameId BIGINT);
CREATE TABLE raw.OPENMP_EVENT_KIND_SYNC_REGION_WAIT (rowid BIGINT, start BIGINT, "end" BIGINT, globalTid BIGINT, nameId BIGINT);
CREATE TABLE raw.OPENMP_EVENT_KIND_SYNC_REGION (rowid BIGINT, start BIGINT, "end" BIGINT, globalTid BIGINT, nameId BIGINT);
CREATE TABLE raw.OPENMP_EVENT_KIND_TASK (rowid BIGINT, start BIGINT, "end" BIGINT, globalTid BIGINT, nameId BIGINT);
CREATE TABLE raw.OPENMP_EVENT_KIND_MASTER (rowid BIGINT, start BIGINT, "end" BIGINT, globalTid BIGINT, nameId BIGINT);
CREATE TABLE raw.OPENMP_EVENT_KIND_REDUCTION (rowid BIGINT, start BIGINT, "end" BIGINT, globalTid BIGINT, nameId BIGINT);
CREATE TABLE raw.OPENMP_EVENT_KIND_TASK_CREATE (rowid BIGINT, start BIGINT, "end" BIGINT, globalTid BIGINT, nameId BIGINT);
CREATE TABLE raw.OPENMP_EVENT_KIND_TASK_SCHEDULE (rowid BIGINT, start BIGINT, "end" BIGINT, globalTid BIGINT, nameId BIGINT);
CREATE TABLE raw.OPENMP_EVENT_KIND_CANCEL (rowid BIGINT, start BIGINT, "end" BIGINT, globalTid BIGINT, nameId BIGINT);
CREATE TABLE raw.OPENMP_EVENT_KIND_MUTEX_WAIT (rowid BIGINT, start BIGINT, "end" BIGINT, globalTid BIGINT, nameId BIGINT);
CREATE TABLE raw.OPENMP_EVENT_KIND_CRITICAL_SECTION (rowid BIGINT, start BIGINT, "end" BIGINT, globalTid BIGINT, nameId BIGINT);
CREATE TABLE raw.OPENMP_EVENT_KIND_MUTEX_RELEASED (rowid BIGINT, start BIGINT, "end" BIGINT, globalTid BIGINT, nameId BIGINT);
CREATE TABLE raw.OPENMP_EVENT_KIND_LOCK_INIT (rowid BIGINT, start BIGINT, "end" BIGINT, globalTid BIGINT, nameId BIGINT);
CREATE TABLE raw.OPENMP_EVENT_KIND_LOCK_DESTROY (rowid BIGINT, start BIGINT, "end" BIGINT, globalTid BIGINT, nameId BIGINT);
CREATE TABLE raw.OPENMP_EVENT_KIND_WORKSHARE (rowid BIGINT, start BIGINT, "end" BIGINT, globalTid BIGINT, nameId BIGINT);
CREATE TABLE raw.OPENMP_EVENT_KIND_DISPATCH (rowid BIGINT, start BIGINT, "end" BIGINT, globalTid BIGINT, nameId BIGINT);
CREATE TABLE raw.OPENMP_EVENT_KIND_FLUSH (rowid BIGINT, start BIGINT, "end" BIGINT, globalTid BIGINT, nameId BIGINT);
CREATE TABLE raw.CUPTI_ACTIVITY_KIND_OPENACC_DATA (rowid BIGINT, start BIGINT, "end" BIGINT, nameId BIGINT, globalTid BIGINT, lineNo BIGINT, srcFile BIGINT, funcName BIGINT, bytes BIGINT, varName BIGINT);
CREATE TABLE raw.CUPTI_ACTIVITY_KIND_OPENACC_LAUNCH (rowid BIGINT, start BIGINT, "end" BIGINT, nameId BIGINT, globalTid BIGINT, lineNo BIGINT, srcFile BIGINT, funcName BIGINT, kernelName BIGINT);
CREATE TABLE raw.CUPTI_ACTIVITY_KIND_OPENACC_OTHER (rowid BIGINT, start BIGINT, "end" BIGINT, nameId BIGINT, globalTid BIGINT, lineNo BIGINT, srcFile BIGINT, funcName BIGINT);
