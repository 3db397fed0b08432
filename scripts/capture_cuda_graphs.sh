#!/usr/bin/env bash
# nsysql's CUDA-graph fixtures, ON THE GPU MACHINE (device tool), from the repository root:
#
#   source .gpu/device-env.sh && bash scripts/capture_cuda_graphs.sh
#
# Runs scripts/capture_cuda_graphs.py under nsys four times and writes $OUT/graph-fixtures.tar holding one folder
# per fixture, laid out as fixtures/<name>/: export.sqlite.xz, nsys-stats_<report>.csv (the nine reports, then the
# others and the report arguments, as scripts/make_report_goldens.sh; files over 100 kB xz-compressed),
# nsys-analyze_<rule>.csv, capture.log with every command and its output.
#   cuda-graphs-graph   --cuda-graph-trace=graph (nsys's default): one GRAPH_TRACE row per replay, no kernels
#   cuda-graphs-node    --cuda-graph-trace=node: the kernels inside the graphs, with their graphNodeId
#   cuda-graphs-nonvtx  graph level, -t cuda,osrt, the program emits no NVTX
#   cuda-graphs-compile graph level, torch.compile(mode="reduce-overhead") inference (skipped if it fails)
set -uo pipefail
: "${OUT:?set OUT to the folder to write into}"
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SRC=${SRC:-$REPO/scripts/capture_cuda_graphs.py}
WORK=$(mktemp -d /tmp/nsysql-graphs.XXXXXX)
cp "$SRC" "$WORK/cuda_graphs.py"
PY=$(command -v python3)
NSYS=$(command -v nsys)
NINE=nvtx_sum,nvtx_gpu_proj_sum,nvtx_kern_sum,cuda_api_sum,cuda_gpu_kern_sum,cuda_kern_exec_sum,cuda_gpu_mem_time_sum,cuda_gpu_mem_size_sum,osrt_sum
MORE=cuda_api_gpu_sum,cuda_api_trace,cuda_gpu_kern_gb_sum,cuda_gpu_sum,cuda_gpu_trace,cuda_kern_exec_trace,nvtx_gpu_proj_trace,nvtx_pushpop_sum,nvtx_pushpop_trace,nvtx_startend_sum,cuda_gpu_kern_sum:base,cuda_gpu_kern_sum:mangled,cuda_gpu_kern_sum:nvtx-name,cuda_kern_exec_sum:base,cuda_kern_exec_sum:mangled
RULES=cuda_api_sync,cuda_memcpy_async,cuda_memcpy_sync,cuda_memset_sync,gpu_gaps,gpu_time_util
{
  echo "== environment $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  "$PY" -c 'import sys,torch; print("python", sys.version.split()[0], sys.executable); print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())'
  echo "nsys: $NSYS"; "$NSYS" --version; echo "kernel $(uname -r)"
} > "$WORK/environment.log" 2>&1
cat "$WORK/environment.log"

one() {  # name, trace mode, -t value, program arguments...
  local name=$1 mode=$2 trace=$3; shift 3
  local d="$WORK/out/$name" t="$WORK/tmp/$name"; mkdir -p "$d" "$t"
  {
    cat "$WORK/environment.log"; echo; echo "== fixture $name"
    local cmd=("$NSYS" profile -t "$trace" -s none --cpuctxsw=none --python-sampling=false --cuda-graph-trace="$mode"
               -o "$t/$name" -f true "$PY" "$WORK/cuda_graphs.py" "$@")
    echo "\$ ${cmd[*]}"
    (cd /tmp && timeout 300 env -i PATH="$PATH" LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}" HOME=/tmp "${cmd[@]}") || { echo "FAILED profile"; return 1; }
    echo "\$ nsys export --type sqlite -f true -o $t/$name.sqlite $t/$name.nsys-rep"
    "$NSYS" export --type sqlite -f true -o "$t/$name.sqlite" "$t/$name.nsys-rep" 2>&1 | tr '\r' '\n' | grep -v '^Processing [0-9]* events' || true
    echo "\$ nsys stats -r $NINE,$MORE -f csv -o $t/nsys-stats $t/$name.sqlite"
    timeout 300 "$NSYS" stats -r "$NINE,$MORE" -f csv -o "$t/nsys-stats" --force-overwrite true "$t/$name.sqlite" 2>&1 | grep -v '^$'
    echo "\$ nsys analyze -r $RULES -f csv -o $t/nsys-analyze $t/$name.sqlite"
    timeout 300 "$NSYS" analyze -r "$RULES" -f csv -o "$t/nsys-analyze" --force-overwrite true "$t/$name.sqlite" > "$d/nsys-analyze.log" 2>&1
    "$PY" - "$t/$name.sqlite" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
for (t,) in c.execute("select name from sqlite_master where type='table' and name like 'CUPTI_ACTIVITY_KIND_%' order by 1"):
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
  grep -E '^TABLE|^done|^torch|FAILED' "$d/capture.log"
}
one cuda-graphs-graph graph cuda,nvtx,osrt --warmup 2 --steps 5
one cuda-graphs-node node cuda,nvtx,osrt --warmup 2 --steps 5
one cuda-graphs-nonvtx graph cuda,osrt --warmup 2 --steps 5 --no-nvtx
one cuda-graphs-compile graph cuda,nvtx,osrt --warmup 3 --steps 5 --compile || echo "compile capture failed"
tar -cf "$OUT/graph-fixtures.tar" -C "$WORK/out" .
ls -la "$OUT"
