#!/usr/bin/env bash
# The captures of issue 34's "Predictions checked by re-capture", ON THE GPU MACHINE (device tool), from the
# repository root:
#
#   source .gpu/device-env.sh && bash scripts/capture_what_if.sh            # fixtures/whatif-cnn-*
#   source .gpu/device-env.sh && RERUNS=2 bash scripts/capture_what_if.sh   # and 2 more rounds, exports only
#
# 1. scripts/what_if_calibrate.py (no nsys) picks the source size: one DataLoader batch of 256 on the step's thread
#    takes about as long as the fp32 training step on the GPU (SOURCE=N skips it).
# 2. scripts/make_fixtures.sh captures, with capture.runner (the code of `nsysql capture`) and the nine `nsys stats`
#    CSVs: the baseline (fp32 without TF32, batch 256, DataLoader without workers, pageable copies, a synchronize
#    ending each phase) and the programs that differ from it in one thing (workers, nosync, bf16), the three together
#    (all), and the baseline again (base_repeat): $OUT/fixtures.tar, $OUT/make_fixtures.log.
# 3. scripts/make_report_goldens.sh (a copy, over the captures laid out as fixtures/) makes NVIDIA's other report and
#    rule CSVs: $OUT/goldens.tar.xz. On the development machine, scripts/unpack_what_if.py lays all of it out as
#    fixtures/whatif-cnn-<variant>/.
# 4. With RERUNS=N: N more rounds of the five programs, interleaved, export only ($OUT/reruns.tar), for the
#    run-to-run spread bench/bench_what_if.py reports (keep them outside the repository, e.g. ../shared/samples/).
set -uo pipefail
: "${OUT:?set OUT to the folder to write into}"
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO" || exit 1
export PYTHONPATH=$REPO PYTHONUNBUFFERED=1
echo "== calibrate $(date -u +%FT%TZ)"
if [ -z "${SOURCE:-}" ]; then
  timeout 90 python3 scripts/what_if_calibrate.py | tee "$OUT/calibrate.log"
  SOURCE=$(tail -n 1 "$OUT/calibrate.log")
fi
case $SOURCE in ''|*[!0-9]*) SOURCE=128; echo "calibration failed: source size $SOURCE" ;; esac
echo "source size: $SOURCE"
B="cnn --mode train --dtype fp32 --no-tf32 --batch 256 --source-size $SOURCE --dataloader"
BF=${B/--dtype fp32/--dtype bf16}
declare -A PROGRAM=(
  [base]="$B --workers 0 --no-pin-memory --sync"
  [workers]="$B --workers 8 --pin-memory --sync"
  [nosync]="$B --workers 0 --no-pin-memory --no-sync"
  [bf16]="$BF --workers 0 --no-pin-memory --sync"
  [all]="$BF --workers 8 --pin-memory --no-sync"
)
STEPS="--warmup 3 --steps 8"
E="whatif_cnn_base|${PROGRAM[base]} $STEPS"
for v in workers nosync bf16 all; do E+=";whatif_cnn_$v|${PROGRAM[$v]} $STEPS"; done
E+=";whatif_cnn_base_repeat|${PROGRAM[base]} $STEPS"
NAMES="whatif_cnn_base whatif_cnn_workers whatif_cnn_nosync whatif_cnn_bf16 whatif_cnn_all whatif_cnn_base_repeat"
EXTRA_FIXTURES="$E" ONLY="$NAMES" SKIP_BIG=1 SKIP_CHECKS=1 ANALYZE=0 BUDGET_S=${BUDGET_S:-330} \
  bash scripts/make_fixtures.sh > /dev/null 2>&1
grep -h '^SIZE\|^FAILED\|^WARNING\|^SKIPPED\|^ROWS\|^== fixture' "$OUT/make_fixtures.log"

echo "== goldens $(date -u +%FT%TZ)"
G=$(mktemp -d /tmp/recap-goldens.XXXXXX)
mkdir -p "$G/repo/scripts" "$G/fx" "$G/out"
cp scripts/make_report_goldens.sh "$G/repo/scripts/"
ln -s "$REPO/queries" "$G/repo/queries"
tar -xf "$OUT/fixtures.tar" -C "$G/fx"
for d in "$G"/fx/*/; do
  n=$(basename "$d"); f=${n//_/-}
  [ -f "$d/$n.sqlite.xz" ] || continue
  mkdir -p "$G/repo/fixtures/$f"; cp "$d/$n.sqlite.xz" "$G/repo/fixtures/$f/export.sqlite.xz"
done
( cd "$G/repo" && OUT="$G/out" timeout 200 bash scripts/make_report_goldens.sh )
cp "$G/out/goldens.tar.xz" "$OUT/"

if [ "${RERUNS:-0}" -gt 0 ]; then
  echo "== reruns $(date -u +%FT%TZ)"
  W=$(mktemp -d /tmp/recap-rerun.XXXXXX)
  start=$SECONDS
  for round in $(seq 1 "$RERUNS"); do
    for v in base workers nosync bf16 all; do
      [ $((SECONDS - start)) -gt "${RERUN_BUDGET_S:-240}" ] && { echo "SKIPPED $v round $round (time)"; continue; }
      echo "== $v round $round python3 -m capture.runner ${PROGRAM[$v]} $STEPS"
      # shellcheck disable=SC2086  # the options are words on purpose
      timeout 90 python3 -m capture.runner ${PROGRAM[$v]} $STEPS -o "$W/$v-r$round" > "$W/$v-r$round.log" 2>&1 \
        || { echo "FAILED $v round $round"; tail -5 "$W/$v-r$round.log"; continue; }
      xz -T0 -9 -c "$W/$v-r$round.sqlite" > "$W/$v-r$round.sqlite.xz"
      echo "SIZE $v-r$round $(stat -c %s "$W/$v-r$round.sqlite.xz")"
    done
  done
  (cd "$W" && tar -cf "$OUT/reruns.tar" ./*.sqlite.xz ./*.log)
fi
ls -l "$OUT"
echo "== done $(date -u +%FT%TZ)"
