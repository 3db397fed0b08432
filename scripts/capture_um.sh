#!/usr/bin/env bash
# nsysql's unified-memory fixture, ON THE GPU MACHINE (device tool), from the repository root:
#
#   source .gpu/device-env.sh && bash scripts/capture_um.sh
#
# Runs scripts/capture_um.py (cudaMallocManaged memory touched by the CPU and by GPU kernels/memsets, in NVTX
# ranges) under `nsys profile -t cuda,nvtx,osrt --cuda-um-cpu-page-faults=true --cuda-um-gpu-page-faults=true`,
# from /tmp with a small environment, then `nsys export`, `nsys stats` (the UM reports, the nine, the others and
# the report arguments) and `nsys analyze`; writes $OUT/um-fixtures.tar (um-faults/ laid out as fixtures/<name>/)
# (and um-faults-syscall/: the same with --syscall=process-tree; ONLY=<name> does one) and $OUT/nvreports.tar (`nsys profile --help` and the list of NVIDIA's report scripts, for reference).
set -uo pipefail
: "${OUT:?set OUT to the folder to write into}"
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK=$(mktemp -d /tmp/nsysql-um.XXXXXX)
cp "${SRC:-$REPO/scripts/capture_um.py}" "$WORK/um_workload.py"
PY=$(command -v python3); NSYS=$(command -v nsys)
NINE=nvtx_sum,nvtx_gpu_proj_sum,nvtx_kern_sum,cuda_api_sum,cuda_gpu_kern_sum,cuda_kern_exec_sum,cuda_gpu_mem_time_sum,cuda_gpu_mem_size_sum,osrt_sum
MORE=cuda_api_gpu_sum,cuda_api_trace,cuda_gpu_kern_gb_sum,cuda_gpu_sum,cuda_gpu_trace,cuda_kern_exec_trace,nvtx_gpu_proj_trace,nvtx_pushpop_sum,nvtx_pushpop_trace,nvtx_startend_sum,cuda_gpu_kern_sum:base,cuda_gpu_kern_sum:mangled,cuda_gpu_kern_sum:nvtx-name,cuda_kern_exec_sum:base,cuda_kern_exec_sum:mangled
UM=um_sum,um_total_sum,um_cpu_page_faults_sum,syscall_sum
RULES=cuda_api_sync,cuda_memcpy_async,cuda_memcpy_sync,cuda_memset_sync,gpu_gaps,gpu_time_util
RDIR=$(dirname "$NSYS")/reports
mkdir -p "$WORK/nvreports"; ls "$RDIR" > "$WORK/nvreports/LIST"
"$NSYS" profile --help > "$WORK/nvreports/profile-help.txt" 2>&1
{
  echo "== environment $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  "$PY" -c 'import sys,torch; print("python", sys.version.split()[0], sys.executable); print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())'
  echo "nsys: $NSYS"; "$NSYS" --version; echo "kernel $(uname -r)"
} > "$WORK/environment.log" 2>&1
cat "$WORK/environment.log"
echo "== syscall in profile --help:"; grep -n -i -E 'syscall' "$WORK/nvreports/profile-help.txt" | head; grep -n -A3 -E '^\s*-t, --trace' "$WORK/nvreports/profile-help.txt" | head -30
one() {  # name, -t value, extra nsys flags...
  local name=$1 trace=$2; shift 2
  local d="$WORK/out/$name" t="$WORK/tmp/$name"; mkdir -p "$d" "$t"
  {
    cat "$WORK/environment.log"; echo; echo "== fixture $name"
    local cmd=("$NSYS" profile -t "$trace" "$@" -s none --cpuctxsw=none --python-sampling=false
               -o "$t/$name" -f true "$PY" "$WORK/um_workload.py")
    echo "\$ (cd /tmp && env -i PATH=... LD_LIBRARY_PATH=... HOME=/tmp ${cmd[*]})"
    (cd /tmp && timeout 200 env -i PATH="$PATH" LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}" HOME=/tmp "${cmd[@]}") || { echo "FAILED profile"; return 1; }
    echo "\$ nsys export --type sqlite -f true -o $t/$name.sqlite $t/$name.nsys-rep"
    "$NSYS" export --type sqlite -f true -o "$t/$name.sqlite" "$t/$name.nsys-rep" 2>&1 | tr '\r' '\n' | grep -v '^Processing [0-9]* events' || true
    echo "\$ nsys stats -r $UM,$NINE,$MORE -f csv -o $t/nsys-stats $t/$name.sqlite"
    timeout 200 "$NSYS" stats -r "$UM,$NINE,$MORE" -f csv -o "$t/nsys-stats" --force-overwrite true "$t/$name.sqlite" 2>&1 | grep -v '^$'
    echo "\$ nsys analyze -r $RULES -f csv -o $t/nsys-analyze $t/$name.sqlite"
    timeout 200 "$NSYS" analyze -r "$RULES" -f csv -o "$t/nsys-analyze" --force-overwrite true "$t/$name.sqlite" > "$d/nsys-analyze.log" 2>&1
    "$PY" - "$t/$name.sqlite" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
for (t,) in c.execute("select name from sqlite_master where type='table' and (name like 'CUPTI_ACTIVITY_KIND_%' or name like 'CUDA_UM%' or name like '%SYSCALL%' or name like 'ENUM_CUDA%') order by 1"):
    n = c.execute(f"select count(*) from {t}").fetchone()[0]
    cols = [r[1] for r in c.execute(f"pragma table_info({t})")]
    print(f"TABLE {t}: {n} rows; columns {', '.join(cols)}")
PY
  } > "$d/capture.log" 2>&1
  for f in "$t"/nsys-stats_*.csv "$t"/nsys-analyze_*.csv; do
    [ -s "$f" ] || continue
    if [ "$(stat -c %s "$f")" -gt 100000 ]; then xz -T0 -c "$f" > "$d/$(basename "$f").xz"; else cp "$f" "$d/"; fi
  done
  xz -T0 -9 -c "$t/$name.sqlite" > "$d/export.sqlite.xz"
  echo "SIZE $name: sqlite $(stat -c %s "$t/$name.sqlite") bytes, xz $(stat -c %s "$d/export.sqlite.xz") bytes" | tee -a "$d/capture.log"
  grep -E '^TABLE|^done|^tensor|^cudart|FAILED|SKIPPED|Error|rror' "$d/capture.log" | head -60
}
UMF=(--cuda-um-cpu-page-faults=true --cuda-um-gpu-page-faults=true)
[ -z "${ONLY:-}" ] || [ "$ONLY" = um-faults ] && one um-faults cuda,nvtx,osrt "${UMF[@]}"
# system calls: 2025.3 traces them with the experimental --syscall (not a -t value)
[ -z "${ONLY:-}" ] || [ "$ONLY" = um-faults-syscall ] && one um-faults-syscall cuda,nvtx,osrt "${UMF[@]}" --syscall=process-tree
tar -cf "$OUT/um-fixtures.tar" -C "$WORK/out" .
tar -cf "$OUT/nvreports.tar" -C "$WORK" nvreports
ls -la "$OUT"
