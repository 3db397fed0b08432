#!/usr/bin/env bash
# nsysql's MPI fixture, ON THE GPU MACHINE (device tool), from the repository root:
#
#   source .gpu/device-env.sh && bash scripts/capture_mpi.sh
#
# Runs scripts/capture_mpi.py on 2 ranks (`mpirun --allow-run-as-root --oversubscribe -np 2`, Open MPI over shared
# memory) under `nsys profile -t cuda,nvtx,osrt,mpi --mpi-impl=openmpi`, from /tmp with a small environment, then
# `nsys export`, `nsys stats` (the MPI reports, the nine, the others and the report arguments, as
# scripts/make_report_goldens.sh) and `nsys analyze`; writes $OUT/mpi-fixtures.tar (mpi-2rank/ laid out as
# fixtures/<name>/) and $OUT/mpi-reference.tar (`nsys profile --help`, and from `nsys export --lazy=false` of the
# same capture the CREATE TABLE statements and enum rows of the MPI, OpenMP and OpenACC tables, for reference).
set -uo pipefail
: "${OUT:?set OUT to the folder to write into}"
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK=$(mktemp -d /tmp/nsysql-mpi.XXXXXX)
cp "$REPO/scripts/capture_mpi.py" "$WORK/mpi_workload.py"
PY=$(command -v python3); NSYS=$(command -v nsys); MPIRUN=$(command -v mpirun)
NINE=nvtx_sum,nvtx_gpu_proj_sum,nvtx_kern_sum,cuda_api_sum,cuda_gpu_kern_sum,cuda_kern_exec_sum,cuda_gpu_mem_time_sum,cuda_gpu_mem_size_sum,osrt_sum
MORE=cuda_api_gpu_sum,cuda_api_trace,cuda_gpu_kern_gb_sum,cuda_gpu_sum,cuda_gpu_trace,cuda_kern_exec_trace,nvtx_gpu_proj_trace,nvtx_pushpop_sum,nvtx_pushpop_trace,nvtx_startend_sum,cuda_gpu_kern_sum:base,cuda_gpu_kern_sum:mangled,cuda_gpu_kern_sum:nvtx-name,cuda_kern_exec_sum:base,cuda_kern_exec_sum:mangled
MPI=mpi_event_sum,mpi_event_trace,mpi_msg_size_sum
RULES=cuda_api_sync,cuda_memcpy_async,cuda_memcpy_sync,cuda_memset_sync,gpu_gaps,gpu_time_util
# Open MPI as root in a container: shared memory only, no single-copy (CMA needs ptrace rights), no UCX. mpirun
# wants an rsh agent that exists even when every rank is local and there is no ssh: the first launcher setting
# with which a 2-rank mpi4py barrier runs is used (logged in capture.log).
OMPI=(OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader
      OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_hwloc_base_binding_policy=none)
for launcher in OMPI_MCA_plm_rsh_agent=/bin/false OMPI_MCA_plm=isolated OMPI_MCA_plm_rsh_agent=sh; do
  ranks=$(cd /tmp && timeout 60 env -i PATH="$PATH" LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}" HOME=/tmp "${OMPI[@]}" "$launcher" \
          "$MPIRUN" --allow-run-as-root --oversubscribe -np 2 "$PY" -c \
          'from mpi4py import MPI; MPI.COMM_WORLD.Barrier(); print("rank", MPI.COMM_WORLD.Get_rank())' 2>&1)
  echo "== mpirun with $launcher: $(echo "$ranks" | tr '\n' ' ' | cut -c1-300)" | tee -a "$WORK/launcher.log"
  if [ "$(echo "$ranks" | grep -c '^rank [01]$')" = 2 ]; then OMPI+=("$launcher"); break; fi
done
mkdir -p "$WORK/reference"
"$NSYS" profile --help > "$WORK/reference/profile-help.txt" 2>&1
{
  echo "== environment $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  "$PY" -c 'import sys,torch,mpi4py,numpy; from mpi4py import MPI; print("python", sys.version.split()[0], sys.executable); print("torch", torch.__version__, "cuda", torch.version.cuda); print("mpi4py", mpi4py.__version__, "numpy", numpy.__version__); print(MPI.Get_library_version().strip().rstrip(chr(0)))'
  echo "mpirun: $MPIRUN $("$MPIRUN" --version 2>&1 | head -1)"
  echo "nsys: $NSYS"; "$NSYS" --version; echo "kernel $(uname -r)"
} > "$WORK/environment.log" 2>&1
cat "$WORK/environment.log"
echo "== mpi in profile --help:"; grep -n -i -E 'mpi' "$WORK/reference/profile-help.txt" | head -20

name=mpi-2rank; d="$WORK/out/$name"; t="$WORK/tmp/$name"; mkdir -p "$d" "$t"
{
  cat "$WORK/environment.log" "$WORK/launcher.log"; echo; echo "== fixture $name"
  cmd=("$NSYS" profile -t cuda,nvtx,osrt,mpi --mpi-impl=openmpi -s none --cpuctxsw=none --python-sampling=false
       -o "$t/$name" -f true "$MPIRUN" --allow-run-as-root --oversubscribe -np 2 "$PY" "$WORK/mpi_workload.py")
  echo "\$ (cd /tmp && env -i PATH=... LD_LIBRARY_PATH=... HOME=/tmp ${OMPI[*]} ${cmd[*]})"
  (cd /tmp && timeout 240 env -i PATH="$PATH" LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}" HOME=/tmp "${OMPI[@]}" "${cmd[@]}") \
    || echo "FAILED profile"
  echo "\$ nsys export --type sqlite -f true -o $t/$name.sqlite $t/$name.nsys-rep"
  "$NSYS" export --type sqlite -f true -o "$t/$name.sqlite" "$t/$name.nsys-rep" 2>&1 | tr '\r' '\n' | grep -v '^Processing [0-9]* events' || true
  echo "\$ nsys stats -r $MPI,$NINE,$MORE -f csv -o $t/nsys-stats $t/$name.sqlite"
  timeout 240 "$NSYS" stats -r "$MPI,$NINE,$MORE" -f csv -o "$t/nsys-stats" --force-overwrite true "$t/$name.sqlite" 2>&1 | grep -v '^$'
  echo "\$ nsys analyze -r $RULES -f csv -o $t/nsys-analyze $t/$name.sqlite"
  timeout 200 "$NSYS" analyze -r "$RULES" -f csv -o "$t/nsys-analyze" --force-overwrite true "$t/$name.sqlite" > "$d/nsys-analyze.log" 2>&1
  "$PY" - "$t/$name.sqlite" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
for (t,) in c.execute("select name from sqlite_master where type='table' and (name like 'MPI%' or name like 'CUPTI_ACTIVITY_KIND_%' or name = 'NVTX_EVENTS' or name = 'PROCESSES') order by 1"):
    n = c.execute(f"select count(*) from {t}").fetchone()[0]
    cols = [r[1] for r in c.execute(f"pragma table_info({t})")]
    print(f"TABLE {t}: {n} rows; columns {', '.join(cols)}")
for row in c.execute("select * from MPI_RANKS"):
    print("MPI_RANKS", row)
PY
  echo "\$ nsys export --type sqlite --lazy=false -f true -o $t/full.sqlite $t/$name.nsys-rep  (reference only)"
  "$NSYS" export --type sqlite --lazy=false -f true -o "$t/full.sqlite" "$t/$name.nsys-rep" 2>&1 | tr '\r' '\n' | grep -v '^Processing [0-9]* events' | tail -3
  "$PY" - "$t/full.sqlite" "$WORK/reference" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
pattern = ("name like 'MPI%' or name like 'OPENMP%' or name like 'CUPTI_ACTIVITY_KIND_OPENACC%' or name like 'ENUM_OPENMP%' "
           "or name like 'ENUM_OPENACC%' or name = 'ENUM_NSYS_EVENT_CLASS' or name = 'META_DATA_EXPORT'")
with open(f"{sys.argv[2]}/schema.sql", "w") as f:
    for name, sql in c.execute(f"select name, sql from sqlite_master where type='table' and ({pattern}) order by rowid"):
        f.write(sql + ";\n")
with open(f"{sys.argv[2]}/enums.txt", "w") as f:
    for (t,) in c.execute(f"select name from sqlite_master where type='table' and name like 'ENUM_%' and ({pattern}) order by 1"):
        for row in c.execute(f"select * from {t}"):
            f.write(f"{t}\t{row}\n")
    for row in c.execute("select * from META_DATA_EXPORT"):
        f.write(f"META_DATA_EXPORT\t{row}\n")
print("reference: schema.sql and enums.txt written")
PY
} > "$d/capture.log" 2>&1
for f in "$t"/nsys-stats_*.csv "$t"/nsys-analyze_*.csv; do
  [ -s "$f" ] || continue
  if [ "$(stat -c %s "$f")" -gt 100000 ]; then xz -T0 -c "$f" > "$d/$(basename "$f").xz"; else cp "$f" "$d/"; fi
done
[ -f "$t/$name.sqlite" ] && xz -T0 -9 -c "$t/$name.sqlite" > "$d/export.sqlite.xz" &&
  echo "SIZE $name: sqlite $(stat -c %s "$t/$name.sqlite") bytes, xz $(stat -c %s "$d/export.sqlite.xz") bytes" | tee -a "$d/capture.log"
grep -a -E '^TABLE|^MPI_RANKS|^rank|FAILED|SKIPPED|rror' "$d/capture.log" | head -60
tar -cf "$OUT/mpi-fixtures.tar" -C "$WORK/out" .
tar -cf "$OUT/mpi-reference.tar" -C "$WORK" reference
ls -la "$OUT"
