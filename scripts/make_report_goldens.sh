#!/usr/bin/env bash
# NVIDIA's CSVs for every `nsys stats` report and `nsys analyze` rule, from the fixtures already in the repo,
# ON THE GPU MACHINE (device tool), from the repository root:
#
#   source .gpu/device-env.sh && bash scripts/make_report_goldens.sh
#
# For each fixtures/<name>/export.sqlite.xz (not the NOT_GOLDEN ones): unpack it, run `nsys stats` with every
# report of queries/reports/ (`-f csv`, the report arguments of their headers such as
# cuda_gpu_kern_sum:base included) and `nsys analyze` with every rule, fixtures in parallel, and write
# $OUT/goldens.tar.xz holding <name>/nsys-stats_<report>.csv, <name>/nsys-analyze_<rule>.csv (the file names
# nsys gives them) and the logs. ONLY="name ..." does only those fixture folders.
set -uo pipefail
: "${OUT:?set OUT to the folder to write into}"
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK=$(mktemp -d /tmp/nsysql-goldens.XXXXXX)
# every report of queries/reports/ (one SQL file each), with each NVIDIA report argument its header's `args:` line
# names (cuda_gpu_kern_sum:base, ...); nccl_gpu_overlap_trace is a recipe's output, not `nsys stats`
REPORTS=()
for sql in "$REPO"/queries/reports/*.sql; do
  name=$(basename "$sql" .sql)
  [ "$name" = nccl_gpu_overlap_trace ] && continue
  REPORTS+=("$name")
  for arg in $(sed -n 's/^-- args: //p' "$sql" | tr ';' '\n' | sed -n 's/^ *\([a-z-]*\) *->.*/\1/p'); do
    REPORTS+=("$name:$arg")
  done
done
RULES=($(for sql in "$REPO"/queries/rules/*.sql; do basename "$sql" .sql; done))
echo "== $(date -u +%Y-%m-%dT%H:%M:%SZ) $(nsys --version)"
one_fixture() {  # all reports in one `nsys stats` call, all rules in one `nsys analyze` call
  local dir=$1 name out
  name=$(basename "$dir"); out="$WORK/$name"; mkdir -p "$out"
  xz -dc "$dir/export.sqlite.xz" > "$out/export.sqlite"
  timeout 500 nsys stats -r "$(IFS=,; echo "${REPORTS[*]}")" -f csv -o "$out/nsys-stats" --force-overwrite true \
    "$out/export.sqlite" > "$out/stats.log" 2>&1
  timeout 300 nsys analyze -r "$(IFS=,; echo "${RULES[*]}")" -f csv -o "$out/nsys-analyze" --force-overwrite true \
    "$out/export.sqlite" > "$out/analyze.log" 2>&1
  rm -f "$out"/export.sqlite*
  echo "$name: $(ls "$out" | grep -c '\.csv$') CSVs"
}
for dir in "$REPO"/fixtures/*/; do
  [ -f "$dir/NOT_GOLDEN" ] && continue
  [ -n "${ONLY:-}" ] && case " $ONLY " in *" $(basename "$dir") "*) ;; *) continue ;; esac
  [ -f "$dir/export.sqlite.xz" ] || continue
  one_fixture "$dir" &
done
wait
tar -cJf "$OUT/goldens.tar.xz" -C "$WORK" .
ls -la "$OUT"
