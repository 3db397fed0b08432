#!/usr/bin/env bash
# nsysql's CUDA-graph fixtures, ON THE GPU MACHINE (device tool), from the repository root:
#
#   source .gpu/device-env.sh && bash scripts/capture_cuda_graphs.sh
#
# Runs scripts/capture_cuda_graphs.py under nsys four times and writes $OUT/graph-fixtures.tar holding one folder
# per fixture, laid out as fixtures/<name>/ (scripts/gpu_fixture.sh: export.sqlite.xz, nsys-stats_<report>.csv
# (the nine reports, then the others and the report arguments, as scripts/make_report_goldens.sh),
# nsys-analyze_<rule>.csv, capture.log with every command and its output).
#   cuda-graphs-graph   --cuda-graph-trace=graph (nsys's default): one GRAPH_TRACE row per replay, no kernels
#   cuda-graphs-node    --cuda-graph-trace=node: the kernels inside the graphs, with their graphNodeId
#   cuda-graphs-nonvtx  graph level, -t cuda,osrt, the program emits no NVTX
#   cuda-graphs-compile graph level, torch.compile(mode="reduce-overhead") inference (skipped if it fails)
set -uo pipefail
PROGRAM_SOURCE=scripts/capture_cuda_graphs.py
SUMMARY='^TABLE|^done|^torch|FAILED'
source "$(dirname "${BASH_SOURCE[0]}")/gpu_fixture.sh"
write_environment

capture_fixture cuda-graphs-graph cuda,nvtx,osrt --cuda-graph-trace=graph -- --warmup 2 --steps 5
capture_fixture cuda-graphs-node cuda,nvtx,osrt --cuda-graph-trace=node -- --warmup 2 --steps 5
capture_fixture cuda-graphs-nonvtx cuda,osrt --cuda-graph-trace=graph -- --warmup 2 --steps 5 --no-nvtx
capture_fixture cuda-graphs-compile cuda,nvtx,osrt --cuda-graph-trace=graph -- --warmup 3 --steps 5 --compile \
  || echo "compile capture failed"
tar -cf "$OUT/graph-fixtures.tar" -C "$WORK/out" .
ls -la "$OUT"
