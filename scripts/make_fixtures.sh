#!/usr/bin/env bash
# Capture the fixture set ON THE GPU MACHINE (device tool), from the repository root:
#
#   source .gpu/device-env.sh && bash scripts/make_fixtures.sh
#
# For each fixture: nsys profile + nsys export (SQLite) + nsys stats (9 reports, CSV), all
# through capture.runner (the code behind `nsysql capture`), then `nsys analyze` of the
# expert rules in ANALYZE_RULES (reference CSVs; ANALYZE=0 skips them). Writes into $OUT:
#   fixtures.tar             <name>/<name>.sqlite.xz, <name>/<name>_<report>.csv and
#                            <name>/<name>_analyze_<rule>.csv for every fixture (one file,
#                            since a device call returns at most 8); in fixtures/<folder>/
#                            they become export.sqlite.xz, nsys-stats_<report>.csv and
#                            nsys-analyze_<rule>.csv
# KEEP_REPORTS=DIR keeps each fixture's .nsys-rep and .sqlite in DIR (for scripts/make_recipe_goldens.sh).
# ONLY="name ..." captures only those fixtures of the list; EXTRA_FIXTURES="entry;entry"
# adds entries of the list's form (e.g. variants to choose from); SKIP_CHECKS=1 skips the
# last steps (CLI check, GPU test).
#   make_fixtures.log        this script's whole output: versions, exact commands, sizes,
#                            and the 2.7B GPT nvtx_sum / cuda_gpu_kern_sum heads
# Then (unless SKIP_BIG=1), guarded so that a failure cannot lose the fixtures, the 2.7B GPT of seed 003
# (ctx 512, batch 4, fp32, 1 warm-up + 1 profiled step, no op ranges as in the seed) in
# forward, backward and train, each under a timeout; only its stats heads are kept.
# Last, with time left, `nsysql capture` itself and tests/test_capture_gpu.py (each only if
# its packages import here). Every step runs under a timeout that ends by BUDGET_S seconds
# into the script (default 430), so the whole run stays under about 7.5 minutes.
set -uo pipefail

: "${OUT:?set OUT to the folder to write into}"
BUDGET_S=${BUDGET_S:-430}
PY=${PYTHON:-python3}
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)  # works from any directory (captures run from /tmp)
export PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
WORK=$(mktemp -d /tmp/nsysql-fixtures.XXXXXX)
mkdir -p "$OUT" "$WORK/stats" "$WORK/big" "$WORK/analyze"

# name | workload options (python -m capture MODEL ...) [| VAR=value ... for the capture]
FIXTURES=(
  "gpt_tiny_train_fp32|gpt --size tiny --mode train --dtype fp32 --batch 4 --seq 128 --warmup 1 --steps 1 --op-ranges --no-annotate"
  "gpt_tiny_train_bf16|gpt --size tiny --mode train --dtype bf16 --batch 4 --seq 128 --warmup 1 --steps 1 --op-ranges --no-annotate"
  "gpt_tiny_forward|gpt --size tiny --mode forward --dtype fp32 --batch 4 --seq 128 --warmup 1 --steps 1 --op-ranges --no-annotate"
  "bert_2layer_train|bert --layers 2 --mode train --dtype fp32 --batch 4 --seq 128 --warmup 1 --steps 1 --op-ranges --no-annotate"
  "ncf_train|ncf --mode train --dtype fp32 --users 2000 --items 1000 --batch 8192 --warmup 1 --steps 1 --op-ranges --no-annotate"
  "dlrm_train|dlrm --mode train --dtype fp32 --rows 1000 --rows-step 10 --batch 2048 --warmup 1 --steps 1 --op-ranges --no-annotate"
  "gpt_tiny_train_noops|gpt --size tiny --mode train --dtype fp32 --batch 4 --seq 128 --warmup 1 --steps 1 --no-op-ranges --no-annotate"
  "gpt_tiny_train_w18s3|gpt --size tiny --mode train --dtype fp32 --batch 4 --seq 128 --warmup 18 --steps 3 --op-ranges --no-annotate"
  # the default capture since issue 16: nsysql.annotate's module ranges, no op markers
  "gpt_tiny_train_annotated|gpt --size tiny --mode train --dtype fp32 --batch 4 --seq 128 --warmup 1 --steps 3"
  # ResNet-18 (CIFAR) fed by a DataLoader: the unhealthy loop (CPU augmentation in the step's
  # thread, pageable copies, a synchronize per phase and a loss.item() per step, fp32 without
  # TF32, a checkpoint every 4 steps) and its healthy counterpart (8 workers, pinned memory,
  # non_blocking copies, nothing synchronizing, bf16 autocast, channels-last, a batch large
  # enough that the GPU is the bottleneck); the same healthy loop at batch 512 is CPU-bound
  # (the GPU waits for the launches of about 25 ms of CPU work per step)
  "cnn_dataloader_train|cnn --mode train --dtype fp32 --no-tf32 --batch 32 --source-size 512 --dataloader --workers 0 --no-pin-memory --sync --log-every 1 --checkpoint-every 4 --warmup 2 --steps 8 --no-op-ranges --no-annotate"
  "cnn_pinned_train|cnn --mode train --dtype bf16 --channels-last --batch 4096 --dataloader --workers 8 --pin-memory --no-sync --warmup 3 --steps 8 --no-op-ranges --no-annotate"
  "cnn_pinned_launch_bound|cnn --mode train --dtype bf16 --channels-last --batch 512 --dataloader --workers 4 --pin-memory --no-sync --warmup 3 --steps 8 --no-op-ranges --no-annotate"
  # gradients averaged through NCCL in a world of one (NCCL's one-rank reduce kernel)
  "cnn_nccl_1gpu|cnn --mode train --dtype bf16 --channels-last --batch 128 --allreduce --warmup 2 --steps 3 --no-op-ranges --no-annotate"
  # issue 16: plain forward ranges in two profiled steps, op markers in the third (--op-ranges-last):
  # the same step with and without them, the ground truth of backward inference
  # (bench/bench_backward_inference.py); the Hugging Face GPT-2 gets its forward ranges from
  # nsysql.annotate without the backward ones, as a user's forward hooks give
  "bwdtruth_gpt_tiny|gpt --size tiny --mode train --dtype fp32 --batch 4 --seq 128 --warmup 1 --steps 3 --op-ranges-last --no-annotate"
  "bwdtruth_gpt_small|gpt --size small --mode train --dtype fp32 --batch 2 --seq 128 --warmup 1 --steps 3 --op-ranges-last --no-annotate"
  "bwdtruth_bert|bert --layers 2 --mode train --dtype fp32 --batch 4 --seq 128 --warmup 1 --steps 3 --op-ranges-last --no-annotate"
  "bwdtruth_resnet18|cnn --mode train --dtype fp32 --batch 32 --warmup 1 --steps 3 --op-ranges-last --no-annotate"
  "bwdtruth_hf_gpt2|hf --mode train --dtype fp32 --batch 2 --seq 128 --warmup 1 --steps 3 --op-ranges-last --annotate --no-annotate-backward"
  # LLM inference with a static KV cache (--mode decode): eager decode steps under their model ranges,
  # one CUDA graph replay per decode step (the CPU runs ahead of the GPU), and the eager run without
  # any NVTX range; then a training step of activation checkpointing (blocks re-run in the backward
  # without their layer_N range) and gradient accumulation (micro_batch_1..4 per step)
  "gpt_decode_eager|gpt --size small --mode decode --dtype fp32 --tf32 --batch 4 --prompt 256 --tokens 24 --warmup 1 --steps 2 --no-op-ranges --no-annotate"
  "gpt_decode_graphs|gpt --size small --mode decode --dtype bf16 --batch 4 --prompt 256 --tokens 64 --graphs --warmup 1 --steps 3 --no-op-ranges --no-annotate"
  "gpt_decode_nonvtx|gpt --size small --mode decode --dtype fp32 --tf32 --batch 4 --prompt 256 --tokens 24 --warmup 1 --steps 2 --no-nvtx --no-op-ranges --no-annotate"
  "gpt_train_ckpt_accum|gpt --size tiny --mode train --dtype bf16 --batch 4 --seq 128 --checkpoint --accum 4 --warmup 1 --steps 2 --no-op-ranges --no-annotate"
)
if [ -n "${EXTRA_FIXTURES:-}" ]; then
  IFS=';' read -r -a _extra <<< "$EXTRA_FIXTURES"
  FIXTURES+=("${_extra[@]}")
fi
ANALYZE_RULES=${ANALYZE_RULES:-cuda_memcpy_async,cuda_memcpy_sync,cuda_memset_sync,cuda_api_sync,gpu_gaps,gpu_time_util}

elapsed() { echo "[t=${SECONDS}s]"; }

time_left() {  # seconds a step may take: at most $1, and none past BUDGET_S
  local left=$((BUDGET_S - SECONDS - 10))
  echo $(( left < $1 ? left : $1 ))
}

environment() {
  echo "== environment $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || echo "nvidia-smi failed"
  "$PY" - <<'EOF' || echo "torch check failed"
import platform, sys
import torch
print(f"python {platform.python_version()} ({sys.executable})")
print(f"torch {torch.__version__} cuda {torch.version.cuda} cudnn {torch.backends.cudnn.version()}")
print(f"device {torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'NO CUDA'}")
EOF
  echo "nsys: $(command -v nsys || echo 'not on PATH')"
  nsys --version || echo "nsys --version failed"
  echo "kernel $(uname -r)"
}

wanted() {  # wanted NAME: in $ONLY, or ONLY unset
  [ -z "${ONLY:-}" ] && return 0
  case " $ONLY " in *" $1 "*) return 0 ;; esac
  return 1
}

analyze_fixture() {  # nsys analyze's expert rules on the export, as CSVs beside the stats
  local name=$1 sqlite=$2
  local limit; limit=$(time_left 60)
  if [ "$limit" -lt 15 ]; then echo "SKIPPED: nsys analyze $name (no time left)"; return 0; fi
  echo "\$ timeout $limit nsys analyze -r $ANALYZE_RULES -f csv -o $WORK/analyze/$name/$name $sqlite"
  mkdir -p "$WORK/analyze/$name"
  timeout -k 10 "$limit" nsys analyze -r "$ANALYZE_RULES" -f csv -o "$WORK/analyze/$name/$name" \
      "$sqlite" > "$WORK/analyze/$name/stdout.txt" 2>&1
  echo "nsys analyze $name exit status: $?"
  tail -n 20 "$WORK/analyze/$name/stdout.txt"
  local csv rule
  for csv in "$WORK/analyze/$name/$name"_*.csv; do
    [ -f "$csv" ] || continue
    rule=${csv##*/"$name"_}
    cp "$csv" "$WORK/stats/$name/${name}_analyze_$rule"
  done
  echo "ANALYZE $name: $(cd "$WORK/analyze/$name" && ls | tr '\n' ' ')"
}

capture_fixture() {
  local name=$1 options=$2 env_vars=${3:-}
  local model=${options%% *} rest=${options#* }
  echo
  echo "== fixture $name $(elapsed)"
  case $model in
    ncf)  echo "NOTE ncf_train is reduced to keep the export small: 2000 users x 1000 items (seed: 138493 x 26744), batch 8192 (seed: 1048576); model widths as the seed." ;;
    dlrm) echo "NOTE dlrm_train is reduced to keep the export small: 26 tables of 1000 + 10*i rows (seed: 100000 + 100*i), batch 2048 (seed: 32768); dims/MLPs as the seed. 26 embeddings give many kernels (forward, backward, SGD per table)." ;;
    bert) echo "NOTE bert_2layer_train uses the seed's sizes (hidden 1024, 16 heads, 4096, vocab 30522, batch 4, seq 128); AdamW stands in for the seed's LAMB." ;;
  esac
  local limit; limit=$(time_left 120)
  if [ "$limit" -lt 30 ]; then echo "FAILED: fixture $name skipped, no time left"; return 1; fi
  echo "nsysql equivalent: ${env_vars:+$env_vars }nsysql capture $options -o $name --stats"
  echo "\$ ${env_vars:+env $env_vars }timeout $limit $PY -m capture.runner $options -o $WORK/$name/$name --stats"
  # shellcheck disable=SC2086  # options and variables are words on purpose
  if ! env $env_vars timeout -k 10 "$limit" "$PY" -m capture.runner $model $rest -o "$WORK/$name/$name" --stats
  then
    echo "FAILED: fixture $name"
    return 1
  fi
  local sqlite="$WORK/$name/$name.sqlite"
  mkdir -p "$WORK/stats/$name"
  xz -T0 -9 -c "$sqlite" > "$WORK/stats/$name/$name.sqlite.xz"
  local raw xzd
  raw=$(stat -c %s "$sqlite"); xzd=$(stat -c %s "$WORK/stats/$name/$name.sqlite.xz")
  echo "SIZE $name: sqlite ${raw} bytes, xz ${xzd} bytes"
  if [ "$xzd" -gt $((5 * 1024 * 1024)) ]; then echo "WARNING: $name.sqlite.xz is over 5 MB"; fi
  cp "$WORK/$name/${name}"_*.csv "$WORK/stats/$name/" 2>/dev/null
  echo "CSV $name: $(ls "$WORK/stats/$name" | tr '\n' ' ')"
  "$PY" - "$sqlite" <<'EOF' || true
import sqlite3, sys
db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
count = lambda t: db.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
print("ROWS " + ", ".join(f"{t}={count(t)}" for t in (
    "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_MEMCPY",
    "CUPTI_ACTIVITY_KIND_MEMSET", "NVTX_EVENTS", "OSRT_API") if t in tables))
EOF
  if [ "${ANALYZE:-1}" = 1 ]; then analyze_fixture "$name" "$sqlite"; fi
  if [ -n "${KEEP_REPORTS:-}" ]; then
    mkdir -p "$KEEP_REPORTS" && cp "$WORK/$name/$name.nsys-rep" "$sqlite" "$KEEP_REPORTS/"
  fi
}

capture_big() {
  local mode=$1
  local limit; limit=$(time_left 150)
  echo
  echo "== gpt 2.7B ctx512 batch4 fp32 $mode $(elapsed)"
  if [ "$limit" -lt 60 ]; then
    echo "SKIPPED: gpt 2.7B $mode (only ${limit}s of the ${BUDGET_S}s budget left)"
    return 0
  fi
  local out="$WORK/big/gpt_2.7B_ctx512_$mode"
  local options="gpt --size 2.7B --mode $mode --dtype fp32 --batch 4 --seq 512 --warmup 1 --steps 1 --no-op-ranges --no-annotate"
  echo "nsysql equivalent: nsysql capture $options -o gpt_2.7B_ctx512_$mode --stats (here only 2 reports)"
  echo "\$ timeout $limit $PY -m capture.runner $options -o $out --stats --reports nvtx_sum,cuda_gpu_kern_sum"
  # shellcheck disable=SC2086
  timeout -k 10 "$limit" "$PY" -m capture.runner $options -o "$out" --stats \
      --reports nvtx_sum,cuda_gpu_kern_sum
  local status=$?
  if [ $status -ne 0 ]; then echo "FAILED: gpt 2.7B $mode (exit $status; 124 = timeout)"; fi
  for report in nvtx_sum cuda_gpu_kern_sum; do
    if [ -f "${out}_${report}.csv" ]; then
      echo "-- gpt 2.7B $mode $report (head)"
      head -n 16 "${out}_${report}.csv"
    fi
  done
  if [ -f "${out}_nvtx_sum.csv" ]; then
    echo "-- gpt 2.7B $mode phase rows"
    grep -E ',:?(warmup|profiled_step|forward_pass|loss_computation|backward_pass|optimizer_step)$' \
        "${out}_nvtx_sum.csv" || true
  fi
  rm -f "$out.nsys-rep" "$out.sqlite"  # too large to keep
}

ready() {  # ready LABEL PY_MODULE: time and the module are there for an optional last step
  local limit; limit=$(time_left 90)
  if [ "$limit" -lt 45 ]; then echo "SKIPPED: $1 (no time left)"; return 1; fi
  if ! "$PY" -c "import $2" 2>/dev/null; then echo "SKIPPED: $1 ($2 does not import here)"; return 1; fi
  echo "$limit"
}

cli_check() {
  echo
  echo "== nsysql capture gpt --size tiny --mode train -o $WORK/cli/x --stats $(elapsed)"
  local limit; limit=$(ready "nsysql CLI check" nsysql.cli.app) || { echo "$limit"; return 0; }
  timeout -k 10 "$limit" "$PY" -c 'import sys; from nsysql.cli.app import main; sys.argv[0] = "nsysql"; sys.exit(main())' \
      capture gpt --size tiny --mode train -o "$WORK/cli/x" --stats
  echo "nsysql capture exit status: $?"
  ls -l "$WORK/cli" 2>/dev/null
}

gpu_test() {
  echo
  echo "== pytest tests/test_capture_gpu.py $(elapsed)"
  local limit; limit=$(ready "GPU test" pytest) || { echo "$limit"; return 0; }
  timeout -k 10 "$limit" "$PY" -m pytest -q -p no:cacheprovider "$REPO/tests/test_capture_gpu.py" -rs
  echo "GPU test exit status: $?"
}

main() {
  local info
  info=$(environment 2>&1)
  echo "$info"
  local failed=0 entry name options env_vars
  for entry in "${FIXTURES[@]}"; do
    IFS='|' read -r name options env_vars <<< "$entry"
    wanted "$name" || continue
    capture_fixture "$name" "$options" "$env_vars" || failed=$((failed + 1))
  done
  echo
  echo "== fixtures.tar $(elapsed)"
  tar -cf "$OUT/fixtures.tar" -C "$WORK/stats" . && ls -l "$OUT"
  echo "fixtures failed: $failed"

  # The 2.7B captures come last and are guarded: none of them can remove the fixtures.
  if [ "${SKIP_BIG:-0}" = 1 ]; then
    echo "SKIPPED: 2.7B captures (SKIP_BIG=1)"
  else
    ( for mode in forward backward train; do capture_big "$mode"; done ) || echo "FAILED: 2.7B block"
  fi

  # With time left: the issue's CLI check and the GPU test, where their packages exist here.
  if [ "${SKIP_CHECKS:-0}" = 1 ]; then
    echo "SKIPPED: CLI check and GPU test (SKIP_CHECKS=1)"
  else
    cli_check || echo "FAILED: nsysql capture check"
    gpu_test || echo "FAILED: GPU test"
  fi

  echo
  echo "== summary $(elapsed)"
  echo "$info"
  ls -l "$OUT"
  grep -h '^SIZE\|^FAILED\|^WARNING\|^SKIPPED\|exit status' "$OUT/make_fixtures.log" 2>/dev/null || true
}

main 2>&1 | tee "$OUT/make_fixtures.log"
