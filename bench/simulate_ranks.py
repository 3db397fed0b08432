"""N simulated per-rank exports of one DDP job, from the real per-rank pair (fixtures/ddp-2gpu-rank0, -rank1).

    python bench/simulate_ranks.py OUT_DIR --ranks 64 [--late 37] [--no-osrt] [--rank0 R0.sqlite --rank1 R1.sqlite]

Writes OUT_DIR/rank_00000.sqlite ... (one nsys SQLite export per rank, as one nsys per rank on separate machines
writes them) and OUT_DIR/ranks.json (what was planted). Every row is one of nsys's own rows of the pair; nothing
is invented but the identity and the clock of each copy:

- rank `--late` (default N // 3) is a copy of rank 1's export: the rank that slept 25 ms inside `dataloader` of
  profiled step 2 and arrives late at every step's first all-reduce (docs/commands/comm.md); every other rank is a
  copy of rank 0's, the rank that waited for it. The collectives of the pair end together (one run, one host), so
  every copy of rank 0 waits for the late rank exactly as rank 0 did.
- each rank its own identity: the profiled process's pid (in every globalTid/globalPid, the CUDA tables' process
  ids, PROCESSES; its main thread's tid with it), the host name (`sim-node-<rank // 8>`: 8 GPUs a host) and the
  environment torchrun gave it (RANK, LOCAL_RANK, WORLD_SIZE, GROUP_RANK).
- each rank its own clock: its session started `d` earlier than the pair's (every timestamp of the export + d,
  ANALYSIS_DETAILS' times with them; the UTC session start - d), and its host clock is off by `e` (UTC session
  start + e; |e| <= 1 ms, as NTP keeps hosts apart): what nsysql's alignment must undo (nsysql/answers/job.py).

Deterministic (the same N gives the same bytes' worth of rows), and fast: the two bases are prepared once, then
each rank is a file copy and a few UPDATEs. The inputs are read-only; `.sqlite.xz` inputs are decompressed first.
"""
from __future__ import annotations

import argparse
import json
import lzma
import shutil
import sqlite3
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
PID_BITS = 1 << 24  # globalTid = ... | pid << 24 | tid (nsys's serialized ids; normalize.nsys3.thread)
PID_BASE = 100_000  # simulated pids: PID_BASE + rank (distinct across the job, as check_pids needs)
TIMED_COLUMNS = ("start", "end", "timestamp")  # event times, in ns since the export's session start
ID_COLUMNS = ("globalTid", "globalPid", "endGlobalTid")
PROCESS_COLUMNS = {"TARGET_INFO_CUDA_DEVICE": "pid", "TARGET_INFO_CUDA_CONTEXT_INFO": "processId",
                   "TARGET_INFO_CUDA_STREAM": "processId", "PROCESSES": "pid"}


def session_offset_ns(rank: int) -> int:
    """How much earlier than the pair's this rank's session started (0 .. 49.9 ms, deterministic)."""
    return (rank * 7919) % 500 * 100_000


def clock_error_ns(rank: int) -> int:
    """This rank's host clock error (-1 .. +1 ms, deterministic; rank 0 has none)."""
    return 0 if rank == 0 else ((rank * 104_729) % 2001 - 1000) * 1000


def _plain(path: Path, scratch: Path, name: str) -> Path:
    if path.suffix != ".xz":
        return path
    out = scratch / f"{name}.sqlite"
    with lzma.open(path) as src, out.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    return out


def _columns(db: sqlite3.Connection) -> dict[str, list[str]]:
    tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    return {t: [r[1] for r in db.execute(f'PRAGMA table_info("{t}")')] for t in tables}


def profiled_pid(db: sqlite3.Connection) -> int:
    """The pid of the process that made the CUDA calls (one per export with one nsys per rank)."""
    pids = [r[0] for r in db.execute("SELECT DISTINCT (globalTid >> 24) & 16777215 FROM CUPTI_ACTIVITY_KIND_RUNTIME")]
    if len(pids) != 1:
        raise SystemExit(f"expected one process with CUDA calls, found {pids}")
    return pids[0]


def without_osrt(base: Path, out: Path) -> Path:
    """`base` as a capture without OS runtime tracing (`nsys profile -t cuda,nvtx`) gives it: OSRT_API and
    OSRT_CALLCHAINS empty (nsys leaves out tables without rows; empty ones read the same). Less of the cache
    build and the dataset of each rank, for the tests."""
    shutil.copyfile(base, out)
    db = sqlite3.connect(out)
    db.execute("DELETE FROM OSRT_API")
    db.execute("DELETE FROM OSRT_CALLCHAINS")
    db.commit()
    db.execute("VACUUM")
    db.close()
    return out


def make_rank(base: Path, out: Path, rank: int, ranks: int) -> None:
    """Copy `base` to `out` and give it rank `rank`'s identity and clock."""
    shutil.copyfile(base, out)
    db = sqlite3.connect(out)
    cols = _columns(db)
    old = profiled_pid(db)
    new = PID_BASE + rank
    shift = session_offset_ns(rank)
    pid_delta = (new - old) * PID_BITS
    for table, names in cols.items():
        sets = [f'"{c}" = "{c}" + {shift}' for c in names if c in TIMED_COLUMNS]
        for c in names:
            if c in ID_COLUMNS:  # the pid bits, and the tid bits of the main thread (tid = pid)
                sets.append(f'"{c}" = CASE WHEN ("{c}" >> 24) & 16777215 = {old} THEN "{c}" + {pid_delta} '
                            f'+ CASE WHEN "{c}" & 16777215 = {old} THEN {new - old} ELSE 0 END ELSE "{c}" END')
        if table in PROCESS_COLUMNS:
            c = PROCESS_COLUMNS[table]
            sets.append(f'"{c}" = CASE WHEN "{c}" = {old} THEN {new} ELSE "{c}" END')
        if sets:
            db.execute(f'UPDATE "{table}" SET {", ".join(sets)}')
    db.execute("UPDATE ANALYSIS_DETAILS SET startTime = startTime + ?, stopTime = stopTime + ?", (shift, shift))
    db.execute("UPDATE TARGET_INFO_SESSION_START_TIME SET utcEpochNs = utcEpochNs - ? + ?",
               (shift, clock_error_ns(rank)))
    host = f"sim-node-{rank // 8:04d}"
    db.execute("UPDATE TARGET_INFO_SYSTEM_ENV SET value = ? WHERE name = 'Hostname'", (host,))
    env = {"RANK": rank, "GROUP_RANK": rank // 8, "LOCAL_RANK": rank % 8, "WORLD_SIZE": ranks,
           "ROLE_RANK": rank, "ROLE_WORLD_SIZE": ranks, "LOCAL_WORLD_SIZE": 8}
    for key, value in env.items():
        db.execute("UPDATE META_DATA_CAPTURE SET value = ? WHERE name = 'PROCESS_0:ENVIRONMENT_VARIABLE' "
                   "AND value LIKE ?", (f'{key}="{value}"', f"{key}=%"))
    db.commit()
    db.close()


def simulate(out_dir: Path, ranks: int, late: int, rank0: Path, rank1: Path, *, osrt: bool = True) -> dict:
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="nsysql-sim-") as tmp:
        bases = [_plain(rank0, Path(tmp), "rank0"), _plain(rank1, Path(tmp), "rank1")]
        if not osrt:
            bases = [without_osrt(b, Path(tmp) / f"bare{i}.sqlite") for i, b in enumerate(bases)]
        for r in range(ranks):
            make_rank(bases[1] if r == late else bases[0], out_dir / f"rank_{r:05d}.sqlite", r, ranks)
    facts = {"ranks": ranks, "late_rank": late, "pids": {str(r): PID_BASE + r for r in range(ranks)},
             "session_offset_ns": {str(r): session_offset_ns(r) for r in range(ranks)},
             "clock_error_ns": {str(r): clock_error_ns(r) for r in range(ranks)},
             "from": {"late": str(rank1), "others": str(rank0)}, "osrt": osrt}
    (out_dir / "ranks.json").write_text(json.dumps(facts, indent=1) + "\n")
    return facts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("--late", type=int, help="the planted late rank [default: ranks // 3]")
    ap.add_argument("--rank0", type=Path, default=FIXTURES / "ddp-2gpu-rank0" / "export.sqlite.xz")
    ap.add_argument("--rank1", type=Path, default=FIXTURES / "ddp-2gpu-rank1" / "export.sqlite.xz")
    ap.add_argument("--no-osrt", action="store_true", help="as captured without OS runtime tracing (smaller, faster)")
    args = ap.parse_args()
    if args.ranks < 2:
        ap.error("--ranks must be 2 or more")
    late = args.ranks // 3 if args.late is None else args.late
    if not 0 <= late < args.ranks:
        ap.error(f"--late must be a rank of the job (0 .. {args.ranks - 1})")
    simulate(args.out, args.ranks, late, args.rank0, args.rank1, osrt=not args.no_osrt)
    print(f"wrote {args.ranks} exports to {args.out} (late rank {late})")


if __name__ == "__main__":
    main()
