#!/usr/bin/env bash
# NVIDIA's pacing, histogram and heatmap recipes on reports, ON THE GPU MACHINE (issue 44):
#
#   source .gpu/device-env.sh && bash scripts/make_recipe_goldens.sh OUTDIR LABEL=REPORT.nsys-rep[@RANGE] ... \
#       [MULTI:LABEL=REPORT+REPORT...@RANGE]
#
# NVIDIA's recipes read only .nsys-rep files (not SQLite exports), so goldens exist only for reports
# kept from their capture. For each report: nvtx_pace and nvtx_gpu_proj_pace over RANGE (the step
# range; skipped without one) and over its second instance (--filter-nvtx RANGE/1), cuda_gpu_kern_pace
# over a delimiting kernel (its short name, which the recipe matches: a kernel launched once per RANGE
# where there is one, else the most launched), cuda_gpu_kern_hist (all, and --filter-nvtx RANGE/1),
# cuda_gpu_time_util_map (30 bins; 12 bins --cumulative; --filter-nvtx RANGE), nccl_gpu_time_util_map
# (30 and 12 bins) and nvtx_cpu_topdown. A MULTI entry runs the pace, histogram and map recipes on
# several reports at once (NVIDIA's ranks, one per file; the map also with --disable-alignment).
# Every run goes to OUTDIR/LABEL/<recipe>[-variant]/ with its command line, exit status and output
# (notebooks and NVIDIA's scripts left out); each recipe's --help goes to OUTDIR/help/. A recipe
# exports the tables it needs into REPORT_pqtdir/, so the runs of one report go one after the other
# (reports in parallel); the MULTI runs come last.
set -uo pipefail
OUTDIR=${1:?usage: make_recipe_goldens.sh OUTDIR LABEL=REPORT.nsys-rep[@RANGE] ...}
shift
PY=${PYTHON:-python3}
LIMIT_S=${LIMIT_S:-120}
RECIPES=(nvtx_pace nvtx_gpu_proj_pace cuda_gpu_kern_pace cuda_gpu_kern_hist cuda_gpu_time_util_map
         nccl_gpu_time_util_map nvtx_cpu_topdown)
mkdir -p "$OUTDIR/help" "$OUTDIR/jobs"

for recipe in "${RECIPES[@]}"; do
  nsys recipe "$recipe" --help > "$OUTDIR/help/$recipe.txt" 2>&1 || true
done
nsys --version > "$OUTDIR/help/version.txt" 2>&1 || true

delimiting_kernel() {  # delimiting_kernel SQLITE RANGE: the short name of a kernel launched once per RANGE
  "$PY" - "$1" "$2" <<'EOF'
import sqlite3, sys
db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
rows = db.execute(
    "SELECT s.value, count(*) AS n FROM CUPTI_ACTIVITY_KIND_KERNEL k "
    "JOIN StringIds s ON s.id = k.shortName GROUP BY s.value ORDER BY n DESC, s.value").fetchall()
steps = 0
if sys.argv[2]:
    try:
        steps = db.execute("SELECT count(*) FROM NVTX_EVENTS WHERE text = ?", (sys.argv[2],)).fetchone()[0]
    except sqlite3.Error:
        pass
once = [r for r in rows if steps and r[1] == steps]
print((once or rows)[0][0] if rows else "")
EOF
}

job() {  # job FILE DIR ARGS...: one recipe run, appended to FILE (fields joined by the unit separator)
  local file=$1; shift
  local IFS=$'\037'
  echo "$*" >> "$file"
}

multi=()
for spec in "$@"; do
  case $spec in MULTI:*) multi+=("${spec#MULTI:}"); continue ;; esac
  label=${spec%%=*}; rest=${spec#*=}
  report=${rest%%@*}; range=""
  [ "$rest" != "$report" ] && range=${rest#*@}
  if [ ! -f "$report" ]; then echo "MISSING: $report"; continue; fi
  sqlite=${report%.nsys-rep}.sqlite
  [ -f "$sqlite" ] || nsys export --type sqlite -f true -o "$sqlite" "$report" > /dev/null 2>&1
  jobs_file="$OUTDIR/jobs/$label.txt"; : > "$jobs_file"
  in=(--input "$report")
  if [ -n "$range" ]; then
    job "$jobs_file" "$label/nvtx_pace" nvtx_pace "${in[@]}" --name "$range"
    job "$jobs_file" "$label/nvtx_pace-second" nvtx_pace "${in[@]}" --name "$range" --filter-nvtx "$range/1"
    job "$jobs_file" "$label/nvtx_gpu_proj_pace" nvtx_gpu_proj_pace "${in[@]}" --name "$range"
    job "$jobs_file" "$label/nvtx_gpu_proj_pace-second" nvtx_gpu_proj_pace "${in[@]}" --name "$range" \
        --filter-nvtx "$range/1"
  fi
  kernel=$(delimiting_kernel "$sqlite" "$range")
  echo "$label delimiting kernel: $kernel"
  job "$jobs_file" "$label/cuda_gpu_kern_pace" cuda_gpu_kern_pace "${in[@]}" --name "$kernel"
  job "$jobs_file" "$label/cuda_gpu_kern_hist" cuda_gpu_kern_hist "${in[@]}"
  job "$jobs_file" "$label/cuda_gpu_time_util_map" cuda_gpu_time_util_map "${in[@]}"
  job "$jobs_file" "$label/cuda_gpu_time_util_map-12-cumulative" cuda_gpu_time_util_map "${in[@]}" \
      --bins 12 --cumulative
  if [ -n "$range" ]; then
    job "$jobs_file" "$label/cuda_gpu_kern_hist-second" cuda_gpu_kern_hist "${in[@]}" --filter-nvtx "$range/1"
    job "$jobs_file" "$label/cuda_gpu_time_util_map-steps" cuda_gpu_time_util_map "${in[@]}" \
        --filter-nvtx "$range"
  fi
  job "$jobs_file" "$label/nccl_gpu_time_util_map" nccl_gpu_time_util_map "${in[@]}"
  job "$jobs_file" "$label/nccl_gpu_time_util_map-12" nccl_gpu_time_util_map "${in[@]}" --bins 12
  job "$jobs_file" "$label/nvtx_cpu_topdown" nvtx_cpu_topdown "${in[@]}"
done

run_one() {  # run_one DIR RECIPE ARGS...
  local dir=$1 recipe=$2; shift 2
  mkdir -p "$OUTDIR/$dir"
  local work; work=$(mktemp -d /tmp/recipe.XXXXXX)
  printf '%q ' nsys recipe "$recipe" "$@" --output "$work/out" > "$OUTDIR/$dir/command.txt"
  timeout -k 10 "$LIMIT_S" nsys recipe "$recipe" "$@" --output "$work/out" > "$OUTDIR/$dir/stdout.txt" 2>&1
  echo $? > "$OUTDIR/$dir/exit_status.txt"
  if [ -d "$work/out" ]; then
    (cd "$work/out" && find . -type f ! -name '*.ipynb' ! -name '*.py' -print0 |
        xargs -0 -r cp --parents -t "$OUTDIR/$dir")
  fi
  rm -rf "$work"
  echo "RECIPE $dir exit $(cat "$OUTDIR/$dir/exit_status.txt"): $(cd "$OUTDIR/$dir" && find . -name '*.parquet' | tr '\n' ' ')"
}

run_file() {  # the jobs of one report, in order
  local line fields
  while IFS= read -r line; do
    IFS=$'\037' read -r -a fields <<< "$line"
    run_one "${fields[@]}"
  done < "$1"
}

for jobs_file in "$OUTDIR"/jobs/*.txt; do
  run_file "$jobs_file" &
done
wait

for spec in "${multi[@]}"; do
  label=${spec%%=*}; rest=${spec#*=}
  reports=${rest%%@*}; range=${rest#*@}
  IFS='+' read -r -a files <<< "$reports"
  in=(--input "${files[@]}")
  jobs_file="$OUTDIR/jobs/multi-$label.txt"; : > "$jobs_file"
  job "$jobs_file" "$label/nvtx_pace" nvtx_pace "${in[@]}" --name "$range"
  job "$jobs_file" "$label/nvtx_gpu_proj_pace" nvtx_gpu_proj_pace "${in[@]}" --name "$range"
  job "$jobs_file" "$label/cuda_gpu_kern_hist" cuda_gpu_kern_hist "${in[@]}"
  job "$jobs_file" "$label/cuda_gpu_time_util_map" cuda_gpu_time_util_map "${in[@]}"
  job "$jobs_file" "$label/cuda_gpu_time_util_map-unaligned" cuda_gpu_time_util_map "${in[@]}" --disable-alignment
  run_file "$jobs_file"
done
