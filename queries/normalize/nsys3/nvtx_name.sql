-- nsysql: normalize.nsys3.nvtx_name v3
-- purpose: One row per distinct NVTX range name of a process (domain, text, style): the texts nvtx_range shows, stored once, and what each text says about the range (op marker, user range, optimizer, backward), decided once per text instead of once per range.
-- requires: raw.NVTX_EVENTS, raw.StringIds, macros.is_optimizer_name
-- params: none
-- storage-of: nvtx_range (a copy of the Parquet dataset leaves this table out: those hold its rows)
-- notes: nvtx_node refers to a row by name_id; nvtx_range joins the texts in. The key is what the raw event
--   holds (process, domainId, text, push/pop or start/end), so nvtx_node finds its name by equality; a
--   domain is created once per process and names ranges of any thread of that process (eventType 75).
--   The flags are those of nvtx_range.is_op_marker and nvtx_context (which explains them). Optimizer: a user
--   range whose text names an optimizer step (macros.is_optimizer_name, in any case: containing `optim`, or the
--   whole text `opt`, `sgd` or `adam...`, with `step`/`zero_grad` around it: opt_step, SGD.step, AdamW_step), or
--   PyTorch's `Optimizer.step#...` / `Optimizer.zero_grad#...` op markers.
--   Libraries' ranges: a range of a library's domain (CCCL, NCCL and its `com.nvidia.nccl...` domains, cuBLAS,
--   cuBLASLt, cuDNN, cuFFT, cuSPARSE, cuSOLVER, NVSHMEM, CUTLASS, nvFuser, TensorRT) is the library's, never a
--   step. TensorRT's are layers nonetheless: TensorRT marks a range per engine layer in its domain `TensorRT`,
--   named by the layer (`conv1 + relu1` for fused layers, `Reformatting CopyNode for Input Tensor 0 to conv1`;
--   with ProfilingVerbosity kDETAILED a JSON object whose "Name" is the layer's name), so those are user ranges
--   (is_user: layers) and library ranges (is_library: no steps); its API ranges, named like C++ methods
--   (`ExecutionContext::enqueueV3`), are neither. nvFuser pushes its ranges in the default domain, named by its
--   C++ scopes: a default-domain range named like one of its entry points (`FusionExecutorCache::...`,
--   `FusionKernelRuntime::...`, `KernelExecutor::...`, `FusionExecutor::...`, `ExecutorDispatch::...`,
--   `FusionDefinition::...`, `nvfuser::...`) is nvFuser's (opens_internals: nvtx_context makes every
--   default-domain range inside it nvFuser's too).
-- columns:
--   name_id | BIGINT | id
--   pid | BIGINT | id (key)
--   domain_key | BIGINT | id (key: NVTX_EVENTS.domainId)
--   push_pop | BOOLEAN | flag (key: a push/pop range, else start/end)
--   range_name | VARCHAR | text (`<domain>:<text>`)
--   text | VARCHAR | text (key)
--   domain | VARCHAR | text ('' = default domain)
--   style | VARCHAR | PushPop or StartEnd
--   is_op_marker | BOOLEAN | flag (see nvtx_range)
--   is_eval | BOOLEAN | flag (an `autograd::engine::evaluate_function: ...` marker)
--   is_user | BOOLEAN | flag (neither an op marker nor a library's internal range: the user's ranges and TensorRT's layers)
--   is_library | BOOLEAN | flag (a library's own range, TensorRT's layers included: never a step)
--   opens_internals | BOOLEAN | flag (an nvFuser entry range: the default-domain ranges inside it are nvFuser's)
--   is_optim | BOOLEAN | flag (an optimizer range)
--   is_backward | BOOLEAN | flag (a backward range)
--   is_annotated | BOOLEAN | flag (a user range named `... [backward]`)
CREATE TABLE nvtx_name AS
WITH
evt AS MATERIALIZED (
    SELECT n.start, n.eventType, n.globalTid, n.domainId, COALESCE(s.value, n.text) AS body
    FROM raw.NVTX_EVENTS AS n
    LEFT JOIN raw.StringIds AS s ON s.id = n.textId
    WHERE n.eventType IN (59, 60, 70, 71, 75)
),
domains AS (
    SELECT domainId, (globalTid >> 24) & 16777215 AS pid, arg_min(body, start) AS domain
    FROM evt WHERE eventType = 75
    GROUP BY ALL
),
keys AS (
    SELECT DISTINCT (globalTid >> 24) & 16777215 AS pid, domainId AS domain_key, eventType IN (59, 70) AS push_pop,
           COALESCE(body, '') AS text
    FROM evt WHERE eventType <> 75
),
named AS (
    SELECT k.*, COALESCE(d.domain, '') AS domain,
           contains(k.text, ', op_id = ') OR contains(k.text, ', seq = ')
             OR starts_with(k.text, 'autograd::engine::evaluate_function: ')
             OR starts_with(k.text, 'Optimizer.step#') OR starts_with(k.text, 'Optimizer.zero_grad#') AS is_op_marker,
           starts_with(k.text, 'autograd::engine::evaluate_function: ') AS is_eval
    FROM keys AS k
    LEFT JOIN domains AS d ON d.domainId = k.domain_key AND d.pid = k.pid
),
libraries AS (
    SELECT *,
           domain = '' AND regexp_matches(text, '^(nvfuser::|FusionExecutorCache::|FusionKernelRuntime::|KernelExecutor::|FusionExecutor::|ExecutorDispatch::|FusionDefinition::)') AS opens_internals
    FROM named
),
kinds AS (
    SELECT *, NOT is_op_marker AND (NOT is_library OR is_trt_layer) AS is_user
    FROM (SELECT *,
                 domain IN ('CCCL', 'NCCL', 'cuBLAS', 'cuBLASLt', 'cuDNN', 'cuFFT', 'cuSPARSE', 'cuSOLVER', 'NVSHMEM',
                            'CUTLASS', 'nvFuser', 'TensorRT')
                   OR starts_with(domain, 'com.nvidia.nccl') OR opens_internals AS is_library,
                 domain = 'TensorRT' AND NOT regexp_matches(text, '^[A-Za-z_][A-Za-z0-9_]*::') AS is_trt_layer
          FROM libraries)
)
SELECT CAST(row_number() OVER (ORDER BY pid, domain_key, push_pop, text) AS BIGINT) AS name_id,
       pid, domain_key, push_pop, domain || ':' || text AS range_name, text, domain,
       CASE WHEN push_pop THEN 'PushPop' ELSE 'StartEnd' END AS style,
       is_op_marker, is_eval, is_user, is_library, opens_internals,
       (is_user AND is_optimizer_name(text))  -- queries/macros/is_optimizer_name.sql
         OR starts_with(text, 'Optimizer.step#') OR starts_with(text, 'Optimizer.zero_grad#') AS is_optim,
       (is_user AND contains(lower(text), 'backward')) OR is_eval AS is_backward,
       is_user AND ends_with(text, ' [backward]') AS is_annotated
FROM kinds
ORDER BY name_id;
