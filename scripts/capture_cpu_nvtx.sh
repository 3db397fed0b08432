#!/usr/bin/env bash
# Make the CPU-only fixture of an older export schema: Debian's Nsight Systems 2022.4 profiles
# scripts/capture_cpu_nvtx.c (NVTX ranges + OS runtime calls, no GPU needed), exports SQLite and
# runs that version's own `nsys stats`. From the repository root:
#
#   # Debian 12: nsight-systems is in non-free (add "contrib non-free" to the apt components)
#   apt-get install --no-install-recommends nsight-systems gcc xz-utils
#   bash scripts/capture_cpu_nvtx.sh [OUTDIR]      # default fixtures/cpu-nvtx-osrt-nsys2022.4
#
# Writes into OUTDIR:
#   export.sqlite.xz             the SQLite export (xz -9)
#   nsys-stats_<report>.csv      `nsys stats -r <report> -f csv` of that .sqlite, under the report
#                                names this nsys knows (2022.4: nvtxsum, osrtsum, ...; non-empty only)
#   nsys-stats.log               everything nsys stats printed (the SKIPPED lines of the CUDA reports)
#   capture.log                  versions, machine, the exact commands
# The times in the trace differ on every run; the CSVs always belong to the export beside them.
set -euo pipefail

OUT=${1:-fixtures/cpu-nvtx-osrt-nsys2022.4}
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d /tmp/nsysql-cpu-nvtx.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$OUT"
LOG="$OUT/capture.log"
: >"$LOG"
say() { echo "$*" | tee -a "$LOG"; }
run() {  # log the command and its output, progress bars left out
  say "\$ $*"
  "$@" 2>&1 | sed -E 's/(Processing|Exporting [0-9]+ events:) \[[^]]*\]//g' >>"$LOG"
}

NSYS=$(command -v nsys) || { echo "nsys not found: apt-get install nsight-systems (Debian non-free)" >&2; exit 1; }
TARGET_DIR=$(dirname "$(readlink -f "$NSYS")")           # .../nsight-systems/target-linux-x64
NVTX_INCLUDE="$TARGET_DIR/nvtx/include"
[ -f "$NVTX_INCLUDE/nvtx3/nvToolsExt.h" ] || { echo "no NVTX headers under $NVTX_INCLUDE" >&2; exit 1; }

say "== $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -srm), $(nproc) CPUs, GPU: $(command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | head -1 || echo none)"
say "nsys: $(nsys --version)"
say "gcc: $(gcc --version | head -1)"

# In a PID namespace of its own nsys sees only itself and the program, so the export's PROCESSES and
# ThreadNames do not list every process of the capture machine.
ISOLATE=()
if unshare --pid --fork --mount-proc true 2>/dev/null; then
  ISOLATE=(unshare --pid --fork --mount-proc)
else
  say "warning: cannot unshare a PID namespace (needs root); the export will list the machine's processes"
fi

run gcc -O1 -Wall -pthread -I"$NVTX_INCLUDE" "$HERE/capture_cpu_nvtx.c" -ldl -o "$WORK/cpu_nvtx"
run "${ISOLATE[@]}" nsys profile --trace=nvtx,osrt --sample=none --cpuctxsw=none --force-overwrite=true \
    -o "$WORK/cpu_nvtx" "$WORK/cpu_nvtx"
if [ ! -f "$WORK/cpu_nvtx.nsys-rep" ]; then
  # Debian's package installs QdstrmImporter outside the folder nsys looks in, so profile stops at
  # the raw .qdstrm ("The importer binary and its dependencies were not found"): import it here.
  IMPORTER=""
  for candidate in "$TARGET_DIR/../host-linux-x64/QdstrmImporter" /usr/lib/nsight-systems/host-linux-x64/QdstrmImporter \
                   /opt/nvidia/nsight-systems/*/host-linux-x64/QdstrmImporter; do
    [ -x "$candidate" ] && { IMPORTER=$candidate; break; }
  done
  [ -n "$IMPORTER" ] || { echo "no .nsys-rep and no QdstrmImporter found" >&2; exit 1; }
  run "$IMPORTER" -i "$WORK/cpu_nvtx.qdstrm" -o "$WORK/cpu_nvtx.nsys-rep"
fi
run nsys export --type sqlite --force-overwrite=true -o "$WORK/export.sqlite" "$WORK/cpu_nvtx.nsys-rep"

# The nine reports nsysql mirrors (2025 names) and their 2022.4 names; plus the two NVTX style
# summaries that 2022.4 has. Each is run under whichever name this nsys lists.
REPORTS="nvtx_sum:nvtxsum osrt_sum:osrtsum nvtx_gpu_proj_sum:nvtxgpuproj nvtx_kern_sum:nvtxkernsum
cuda_api_sum:cudaapisum cuda_gpu_kern_sum:gpukernsum cuda_kern_exec_sum:kernexecsum
cuda_gpu_mem_time_sum:gpumemtimesum cuda_gpu_mem_size_sum:gpumemsizesum nvtx_pushpop_sum:nvtxppsum
nvtx_startend_sum:nvtxsesum"
KNOWN=$(nsys stats --help-reports 2>&1 | awk '{print $1}' | sed 's/\[.*//' || true)
: >"$OUT/nsys-stats.log"
for pair in $REPORTS; do
  for name in "${pair%%:*}" "${pair##*:}"; do
    if grep -qx "$name" <<<"$KNOWN"; then
      say "\$ nsys stats -r $name -f csv -o $WORK/stats export.sqlite"
      nsys stats -r "$name" -f csv --force-overwrite=true -o "$WORK/stats" "$WORK/export.sqlite" >>"$OUT/nsys-stats.log" 2>&1 \
        || say "  (exit $?)"
      [ -s "$WORK/stats_$name.csv" ] && cp "$WORK/stats_$name.csv" "$OUT/nsys-stats_$name.csv"
      break
    fi
  done
done
sed -i -e "s#$WORK/##g" -e "s#$HERE/#scripts/#g" "$OUT/nsys-stats.log" "$LOG"   # temp paths mean nothing later

xz -9 -T1 -c "$WORK/export.sqlite" >"$OUT/export.sqlite.xz"
say "export.sqlite: $(stat -c %s "$WORK/export.sqlite") bytes, export.sqlite.xz: $(stat -c %s "$OUT/export.sqlite.xz") bytes"
say "tables: $(sqlite3 "$WORK/export.sqlite" "SELECT group_concat(name, ' ') FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'ENUM_%'" 2>/dev/null || echo '(sqlite3 not installed)')"
ls -l "$OUT"
