#!/usr/bin/env bash
# The multi-GPU fixtures, ON A MACHINE OF 2 GPUs (device tool, nvidia-h100-x2), from the repository root:
#
#   source .gpu/device-env.sh && bash scripts/capture_multi_gpu.sh
#
# Each fixture is `python3 -m capture.runner MODEL --nproc 2 [--per-rank] [--fsdp] ... --stats` (the code of
# `nsysql capture`): torchrun starts two ranks (DDP or FSDP2 over NCCL), nsys profiles the job (one export) or
# each rank (one export per rank), then `nsys export`, `nsys stats` (the nine reports) and NVIDIA's NCCL recipes
# (nccl_sum, nccl_gpu_overlap_trace, nccl_gpu_proj_sum, --csv) over the job's report(s); then
# scripts/make_report_goldens.sh's other reports and expert rules on every export. Writes into $OUT:
#   multi_gpu.tar.xz         one folder per fixture, laid out as fixtures/<folder>/: export.sqlite.xz,
#                            nsys-stats_<report>.csv, nsys-analyze_<rule>.csv, recipes/<recipe>/*.csv (the job's),
#                            capture.log (the exact commands and output), nsys-stats-more.log, nsys-analyze.log
#   capture_multi_gpu.log    this script's whole output: versions, commands, sizes, row counts
# ONLY="name ..." captures only those fixtures; DRY_RUN=1 prints the runner's commands (anywhere, no GPU).
# Every step runs under a timeout that ends by BUDGET_S seconds into the script (default 540).
set -uo pipefail

: "${OUT:?set OUT to the folder to write into}"
BUDGET_S=${BUDGET_S:-540}
PY=${PYTHON:-python3}
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
# NVLink multicast stays off on shared GPU hosts (the runner sets these for the ranks too)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
WORK=$(mktemp -d /tmp/nsysql-multigpu.XXXXXX)
mkdir -p "$OUT" "$WORK/out" "$WORK/golden/fixtures" "$WORK/golden/scripts"

GPT="gpt --size tiny --mode train --dtype fp32 --batch 4 --seq 128 --warmup 2 --steps 4 --dataloader"
# name | runner options (ranks) | workload options | fixture folders (the exports', in rank order)
FIXTURES=(
  # DDP, one export for the job; rank 1 sleeps 25 ms in profiled step 2's `dataloader`
  "ddp_2gpu_torchrun|--nproc 2|$GPT --straggle-rank 1 --straggle-ms 25 --straggle-step 2|ddp-2gpu-torchrun"
  # the same job, one nsys and one export per rank
  "ddp_2gpu|--nproc 2 --per-rank|$GPT --straggle-rank 1 --straggle-ms 25 --straggle-step 2|ddp-2gpu-rank0 ddp-2gpu-rank1"
  # FSDP2, one export; rank 1 late by 20 ms in every profiled step
  "fsdp_2gpu_torchrun|--nproc 2 --fsdp|$GPT --straggle-rank 1 --straggle-ms 20|fsdp-2gpu-torchrun"
)

elapsed() { echo "[t=${SECONDS}s]"; }

time_left() {  # seconds a step may take: at most $1, and none past BUDGET_S
  local left=$((BUDGET_S - SECONDS - 10))
  echo $(( left < $1 ? left : $1 ))
}

wanted() {
  [ -z "${ONLY:-}" ] && return 0
  case " $ONLY " in *" $1 "*) return 0 ;; esac
  return 1
}

environment() {
  echo "== environment $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader || echo "nvidia-smi failed"
  nvidia-smi topo -m 2>/dev/null | head -n 4 || true
  "$PY" - <<'EOF' || echo "torch check failed"
import platform, sys
import torch
print(f"python {platform.python_version()} ({sys.executable})")
print(f"torch {torch.__version__} cuda {torch.version.cuda} nccl {'.'.join(map(str, torch.cuda.nccl.version()))}")
print(f"gpus {torch.cuda.device_count()}: {[torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]}")
for name in ("duckdb", "polars", "typer", "pandas", "pyarrow"):
    try:
        module = __import__(name)
        print(f"{name} {getattr(module, '__version__', '?')}")
    except ImportError:
        print(f"{name} missing")
EOF
  echo "torchrun: $(ls "$(dirname "$(command -v "$PY")")"/torchrun 2>/dev/null || command -v torchrun || echo 'not found')"
  echo "nsys: $(command -v nsys || echo 'not on PATH')"
  nsys --version || echo "nsys --version failed"
  nsys recipe --help 2>&1 | grep -i -E '^\s*nccl' || echo "(no nccl recipes listed by nsys recipe --help)"
  env | grep -E '^(NCCL_NVLS_ENABLE|TORCH_SYMM_MEM_DISABLE_MULTICAST|NVSHMEM_DISABLE_NVLS)=' | sort
}

row_counts() {  # row counts of an export, per process where several
  "$PY" - "$1" <<'EOF' || true
import sqlite3, sys
db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
count = lambda t: db.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
print("ROWS " + ", ".join(f"{t}={count(t)}" for t in (
    "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_MEMCPY",
    "CUPTI_ACTIVITY_KIND_MEMSET", "NVTX_EVENTS", "OSRT_API") if t in tables))
print("KERNELS per (pid, device): " + str(db.execute(
    "SELECT globalPid / 16777216 % 16777216, deviceId, count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL "
    "GROUP BY 1, 2 ORDER BY 1, 2").fetchall()))
print("NCCL kernels: " + str(db.execute(
    "SELECT s.value, count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL AS k JOIN StringIds AS s ON s.id = k.shortName "
    "WHERE s.value LIKE 'nccl%' GROUP BY 1 ORDER BY 2 DESC").fetchall()))
EOF
}

capture_fixture() {
  local name=$1 ranks=$2 options=$3 folders=$4
  local model=${options%% *} rest=${options#* }
  echo
  echo "== fixture $name $(elapsed)"
  local limit; limit=$(time_left 220)
  if [ "$limit" -lt 60 ]; then echo "FAILED: fixture $name skipped, no time left"; return 1; fi
  mkdir -p "$WORK/$name"
  local log="$WORK/$name/capture.log"
  {
    echo "nsysql equivalent: nsysql capture $options $ranks -o $name --stats"
    echo "\$ timeout $limit $PY -m capture.runner $options $ranks -o $WORK/$name/$name --stats"
  } | tee "$log"
  local dry=()
  [ "${DRY_RUN:-0}" = 1 ] && dry=(--dry-run)
  # shellcheck disable=SC2086  # options are words on purpose
  (cd /tmp && timeout -k 10 "$limit" "$PY" -m capture.runner $model $rest $ranks -o "$WORK/$name/$name" --stats \
      "${dry[@]}") 2>&1 | tee -a "$log"
  local status=${PIPESTATUS[0]}
  echo "capture.runner exit status: $status" | tee -a "$log"
  [ "${DRY_RUN:-0}" = 1 ] && return 0
  # the exports in rank order: NAME.sqlite for the job, else NAME_rank0.sqlite, NAME_rank1.sqlite
  local sqlites=() folder i=0
  if [ -f "$WORK/$name/$name.sqlite" ]; then sqlites=("$WORK/$name/$name"); else
    sqlites=("$WORK/$name/${name}_rank0" "$WORK/$name/${name}_rank1"); fi
  if [ "$status" -ne 0 ]; then  # keep what was exported (a timeout in the recipes, say)
    echo "FAILED: fixture $name (capture.runner exit $status; 124 = timeout)"
    [ -f "${sqlites[-1]}.sqlite" ] || return 1
  fi
  for folder in $folders; do
    local base=${sqlites[$i]} dest="$WORK/out/$folder"
    [ -f "$base.sqlite" ] || { echo "FAILED: no $base.sqlite"; return 1; }
    mkdir -p "$dest"
    xz -T0 -9 -c "$base.sqlite" > "$dest/export.sqlite.xz"
    local raw xzd csv
    raw=$(stat -c %s "$base.sqlite"); xzd=$(stat -c %s "$dest/export.sqlite.xz")
    echo "SIZE $folder: sqlite $raw bytes, xz $xzd bytes"
    [ "$xzd" -gt $((5 * 1024 * 1024)) ] && echo "WARNING: $folder export.sqlite.xz is over 5 MB"
    for csv in "$base"_*.csv; do
      [ -f "$csv" ] || continue
      cp "$csv" "$dest/nsys-stats_${csv#"$base"_}"
    done
    row_counts "$base.sqlite"
    cp "$dest/export.sqlite.xz" "$WORK/golden/fixtures/$folder.sqlite.xz"
    i=$((i + 1))
  done
  # the job's recipes (over both ranks) and its log go with the first folder of the job
  local first=${folders%% *} recipe
  for recipe in "$WORK/$name/${name}"_nccl_*/; do
    [ -d "$recipe" ] || continue
    local rname; rname=$(basename "$recipe"); rname=${rname#"${name}_"}
    mkdir -p "$WORK/out/$first/recipes/$rname"
    cp "$recipe"/*.csv "$WORK/out/$first/recipes/$rname/" 2>/dev/null
    echo "RECIPE $rname: $(cd "$recipe" && ls | tr '\n' ' ')"
  done
  cp "$log" "$WORK/out/$first/capture.log"
}

more_reports() {  # scripts/make_report_goldens.sh's other reports and rules, on the new exports
  echo
  echo "== other nsys stats reports and nsys analyze rules $(elapsed)"
  local limit; limit=$(time_left 120)
  if [ "$limit" -lt 30 ]; then echo "SKIPPED: other reports (no time left)"; return 0; fi
  local f names=()
  for f in "$WORK/golden/fixtures"/*.sqlite.xz; do
    [ -f "$f" ] || continue
    local n; n=$(basename "$f" .sqlite.xz)
    mkdir -p "$WORK/golden/fixtures/$n"; mv "$f" "$WORK/golden/fixtures/$n/export.sqlite.xz"; names+=("$n")
  done
  [ ${#names[@]} -gt 0 ] || return 0
  cp "$REPO/scripts/make_report_goldens.sh" "$WORK/golden/scripts/"
  mkdir -p "$WORK/golden/out"
  OUT="$WORK/golden/out" timeout -k 10 "$limit" bash "$WORK/golden/scripts/make_report_goldens.sh"
  echo "make_report_goldens.sh exit status: $?"
  mkdir -p "$WORK/golden/csv" && tar -xJf "$WORK/golden/out/goldens.tar.xz" -C "$WORK/golden/csv" || return 0
  local n
  for n in "${names[@]}"; do
    [ -d "$WORK/golden/csv/$n" ] || continue
    cp -n "$WORK/golden/csv/$n"/*.csv "$WORK/out/$n/" 2>/dev/null
    cp "$WORK/golden/csv/$n/stats.log" "$WORK/out/$n/nsys-stats-more.log" 2>/dev/null
    cp "$WORK/golden/csv/$n/analyze.log" "$WORK/out/$n/nsys-analyze.log" 2>/dev/null
  done
}

gpu_test() {  # the 2-GPU test of tests/test_capture_gpu.py, with time left and pytest here
  echo
  echo "== pytest tests/test_capture_gpu.py -k ranks $(elapsed)"
  local limit; limit=$(time_left 120)
  if [ "$limit" -lt 60 ]; then echo "SKIPPED: GPU test (no time left)"; return 0; fi
  "$PY" -c "import pytest" 2>/dev/null || { echo "SKIPPED: GPU test (no pytest)"; return 0; }
  (cd "$REPO" && timeout -k 10 "$limit" "$PY" -m pytest -q -p no:cacheprovider tests/test_capture_gpu.py -k ranks -rs)
  echo "GPU test exit status: $?"
}

main() {
  environment 2>&1
  local failed=0 entry name ranks options folders
  for entry in "${FIXTURES[@]}"; do
    IFS='|' read -r name ranks options folders <<< "$entry"
    wanted "$name" || continue
    capture_fixture "$name" "$ranks" "$options" "$folders" || failed=$((failed + 1))
  done
  [ "${DRY_RUN:-0}" = 1 ] && return 0
  more_reports || echo "FAILED: other reports"
  echo
  echo "== multi_gpu.tar.xz $(elapsed)"
  tar -cf - -C "$WORK/out" . | xz -T0 -6 > "$OUT/multi_gpu.tar.xz"
  if [ "$(stat -c %s "$OUT/multi_gpu.tar.xz")" -gt $((15 * 1024 * 1024)) ]; then  # a device call returns files of 16 MiB at most
    split -b 15M -d "$OUT/multi_gpu.tar.xz" "$OUT/multi_gpu.tar.xz.part" && rm "$OUT/multi_gpu.tar.xz"
  fi
  ls -l "$OUT"
  (cd "$WORK/out" && find . -type f | sort | xargs ls -l)
  echo "fixtures failed: $failed"
  [ "${SKIP_TEST:-0}" = 1 ] || gpu_test || echo "FAILED: GPU test"
  echo
  echo "== summary $(elapsed)"
  grep -h '^SIZE\|^FAILED\|^WARNING\|^SKIPPED\|^RECIPE\|exit status' "$OUT/capture_multi_gpu.log" 2>/dev/null || true
}

main 2>&1 | tee "$OUT/capture_multi_gpu.log"
