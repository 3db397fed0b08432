#!/usr/bin/env bash
# nsysql's unified-memory fixture, ON THE GPU MACHINE (device tool), from the repository root:
#
#   source .gpu/device-env.sh && bash scripts/capture_um.sh
#
# Runs scripts/capture_um.py (cudaMallocManaged memory touched by the CPU and by GPU kernels/memsets, in NVTX
# ranges) under `nsys profile -t cuda,nvtx,osrt --cuda-um-cpu-page-faults=true --cuda-um-gpu-page-faults=true`,
# from /tmp with a small environment, then `nsys export`, `nsys stats` (the UM reports, the nine, the others and
# the report arguments) and `nsys analyze` (scripts/gpu_fixture.sh); writes $OUT/um-fixtures.tar (um-faults/ laid
# out as fixtures/<name>/) (and um-faults-syscall/: the same with --syscall=process-tree; ONLY=<name> does one) and
# $OUT/nvreports.tar (`nsys profile --help` and the list of NVIDIA's report scripts, for reference).
set -uo pipefail
PROGRAM_SOURCE=scripts/capture_um.py
EXTRA_REPORTS=um_sum,um_total_sum,um_cpu_page_faults_sum,syscall_sum
RAW_TABLES="name like 'CUPTI_ACTIVITY_KIND_%' or name like 'CUDA_UM%' or name like '%SYSCALL%' or name like 'ENUM_CUDA%'"
SUMMARY='^TABLE|^done|^tensor|^cudart|FAILED|SKIPPED|Error|rror'
TIMEOUT=200
source "$(dirname "${BASH_SOURCE[0]}")/gpu_fixture.sh"
RDIR=$(dirname "$NSYS")/reports
mkdir -p "$WORK/nvreports"; ls "$RDIR" > "$WORK/nvreports/LIST"
"$NSYS" profile --help > "$WORK/nvreports/profile-help.txt" 2>&1
write_environment
echo "== syscall in profile --help:"; grep -n -i -E 'syscall' "$WORK/nvreports/profile-help.txt" | head; grep -n -A3 -E '^\s*-t, --trace' "$WORK/nvreports/profile-help.txt" | head -30

UMF=(--cuda-um-cpu-page-faults=true --cuda-um-gpu-page-faults=true)
[ -z "${ONLY:-}" ] || [ "$ONLY" = um-faults ] && capture_fixture um-faults cuda,nvtx,osrt "${UMF[@]}"
# system calls: 2025.3 traces them with the experimental --syscall (not a -t value)
[ -z "${ONLY:-}" ] || [ "$ONLY" = um-faults-syscall ] && capture_fixture um-faults-syscall cuda,nvtx,osrt "${UMF[@]}" --syscall=process-tree
tar -cf "$OUT/um-fixtures.tar" -C "$WORK/out" .
tar -cf "$OUT/nvreports.tar" -C "$WORK" nvreports
ls -la "$OUT"
