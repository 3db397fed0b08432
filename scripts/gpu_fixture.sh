# The shared part of scripts/capture_cuda_graphs.sh and scripts/capture_um.sh (sourced, ON THE GPU MACHINE): the
# environment log and `capture_fixture`, which profiles a Python program under nsys from /tmp with a small
# environment, exports SQLite, runs `nsys stats` (EXTRA_REPORTS, the nine, the others and the report arguments) and
# `nsys analyze`, and lays the fixture out as fixtures/<name>/ under $WORK/out/<name>: export.sqlite.xz,
# nsys-stats_<report>.csv and nsys-analyze_<rule>.csv (files over 100 kB xz-compressed), capture.log with every
# command and its output.
#
# The caller sets PROGRAM_SOURCE (the program to profile, from the repository root; $SRC replaces it) and may set
# EXTRA_REPORTS (nsys stats reports run before the nine), RAW_TABLES (an SQL condition on `name`: the export's tables
# whose rows and columns capture.log lists), SUMMARY (an extended regex: the capture.log lines echoed at the end),
# TIMEOUT (seconds for profile, stats and analyze each).
: "${OUT:?set OUT to the folder to write into}"
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK=$(mktemp -d "/tmp/nsysql-$(basename "$PROGRAM_SOURCE" .py).XXXXXX")
PROGRAM=$WORK/$(basename "$PROGRAM_SOURCE")
cp "${SRC:-$REPO/$PROGRAM_SOURCE}" "$PROGRAM"
PY=$(command -v python3)
NSYS=$(command -v nsys)
NINE=nvtx_sum,nvtx_gpu_proj_sum,nvtx_kern_sum,cuda_api_sum,cuda_gpu_kern_sum,cuda_kern_exec_sum,cuda_gpu_mem_time_sum,cuda_gpu_mem_size_sum,osrt_sum
MORE=cuda_api_gpu_sum,cuda_api_trace,cuda_gpu_kern_gb_sum,cuda_gpu_sum,cuda_gpu_trace,cuda_kern_exec_trace,nvtx_gpu_proj_trace,nvtx_pushpop_sum,nvtx_pushpop_trace,nvtx_startend_sum,cuda_gpu_kern_sum:base,cuda_gpu_kern_sum:mangled,cuda_gpu_kern_sum:nvtx-name,cuda_kern_exec_sum:base,cuda_kern_exec_sum:mangled
RULES=cuda_api_sync,cuda_memcpy_async,cuda_memcpy_sync,cuda_memset_sync,gpu_gaps,gpu_time_util
RAW_TABLES=${RAW_TABLES:-"name like 'CUPTI_ACTIVITY_KIND_%'"}
SUMMARY=${SUMMARY:-'^TABLE|^done|FAILED'}
TIMEOUT=${TIMEOUT:-300}

write_environment() {  # the machine, the GPU and the versions: $WORK/environment.log, heading each capture.log
  {
    echo "== environment $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    "$PY" -c 'import sys,torch; print("python", sys.version.split()[0], sys.executable); print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())'
    echo "nsys: $NSYS"; "$NSYS" --version; echo "kernel $(uname -r)"
  } > "$WORK/environment.log" 2>&1
  cat "$WORK/environment.log"
}

capture_fixture() {  # name, -t value, [nsys profile flags...] [-- program arguments...]
  local name=$1 trace=$2; shift 2
  local flags=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do flags+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  local d="$WORK/out/$name" t="$WORK/tmp/$name"; mkdir -p "$d" "$t"
  local reports="${EXTRA_REPORTS:+$EXTRA_REPORTS,}$NINE,$MORE"
  {
    cat "$WORK/environment.log"; echo; echo "== fixture $name"
    local cmd=("$NSYS" profile -t "$trace" "${flags[@]}" -s none --cpuctxsw=none --python-sampling=false
               -o "$t/$name" -f true "$PY" "$PROGRAM" "$@")
    echo "\$ (cd /tmp && env -i PATH=... LD_LIBRARY_PATH=... HOME=/tmp ${cmd[*]})"
    (cd /tmp && timeout "$TIMEOUT" env -i PATH="$PATH" LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}" HOME=/tmp "${cmd[@]}") || { echo "FAILED profile"; return 1; }
    echo "\$ nsys export --type sqlite -f true -o $t/$name.sqlite $t/$name.nsys-rep"
    "$NSYS" export --type sqlite -f true -o "$t/$name.sqlite" "$t/$name.nsys-rep" 2>&1 | tr '\r' '\n' | grep -v '^Processing [0-9]* events' || true
    echo "\$ nsys stats -r $reports -f csv -o $t/nsys-stats $t/$name.sqlite"
    timeout "$TIMEOUT" "$NSYS" stats -r "$reports" -f csv -o "$t/nsys-stats" --force-overwrite true "$t/$name.sqlite" 2>&1 | grep -v '^$'
    echo "\$ nsys analyze -r $RULES -f csv -o $t/nsys-analyze $t/$name.sqlite"
    timeout "$TIMEOUT" "$NSYS" analyze -r "$RULES" -f csv -o "$t/nsys-analyze" --force-overwrite true "$t/$name.sqlite" > "$d/nsys-analyze.log" 2>&1
    "$PY" - "$t/$name.sqlite" "$RAW_TABLES" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
for (t,) in c.execute(f"select name from sqlite_master where type='table' and ({sys.argv[2]}) order by 1"):
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
  grep -E "$SUMMARY" "$d/capture.log" | head -60
}
