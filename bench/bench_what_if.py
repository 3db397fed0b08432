"""What-if's predicted step times against the step times of the changed programs, captured again (issue 34,
"Predictions checked by re-capture").

    python bench/bench_what_if.py [--fixtures DIR] [--reruns DIR] [--markdown]

The captures (fixtures/whatif-cnn-*, fixtures/README.md; made by scripts/capture_what_if.sh) are one baseline
program, a DataLoader-fed ResNet-18 training loop whose steps are CPU data loading, synchronization and fp32 GPU
compute, and programs that differ from it in one thing. For each change the script runs

    nsysql what-if fixtures/whatif-cnn-base/export.sqlite.xz --scale SPEC ... -f csv

(columns step, measured_ns, predicted_ns: one row per analysed step of the baseline) and compares the mean
predicted step with the mean wall time of the changed capture's analysed steps (`analysis.steady_steps`):
error = (predicted - measured) / measured.

| change | the changed program | scales |
|---|---|---|
| workers | `--workers 8 --pin-memory` | `range:dataloader=0` |
| nosync | `--no-sync` | `sync:*=0` |
| bf16 | `--dtype bf16` | `kernel:GLOB=R` for each GLOB of GEMM_GLOBS that matches a baseline kernel (what-if refuses one that matches nothing) |
| all | the three | the three |
| repeat | none: the baseline captured again | `kernel:*=1` (the replay must give the capture back) |

R is measured here, from the two captures: the time of the GEMM/convolution kernels (demangled name matching one of
GEMM_GLOBS, as the scale matches them) per analysed step of the bf16 capture, over the same in the baseline.

The measured side is read twice: the analysed steps from nsysql (`analysis.steady_steps`), and, by a plain sqlite3
walk of the raw export, the `profiled_step` NVTX ranges with the same start and end (the script stops if one is
missing), the `dataloader` ranges, the kernels and R, and the time of the four phase ranges (forward_pass,
loss_computation, backward_pass, optimizer_step) outside cudaDeviceSynchronize: the step thread's CPU work and
launches, which the replay keeps as measured. Per analysed step, means. Without `nsysql what-if` the predicted
column says why it is empty.

Captures of the same program differ from one run to the next on the GPU machine (the step thread's CPU work most):
with --reruns DIR (default ../shared/samples/whatif-cnn-reruns when it exists), the exports there, named
<change>-r<N>.sqlite[.xz] (base-r1, workers-r1, ...: scripts/capture_what_if.sh with RERUNS=N), add the range of
the measured means over every capture of each program.
"""
from __future__ import annotations

import argparse
import csv
import fnmatch
import io
import lzma
import os
import platform
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

BASE = "whatif-cnn-base"
DEFAULT_RERUNS = REPO.parent / "shared" / "samples" / "whatif-cnn-reruns"
# GEMM and convolution kernels by demangled name, case-sensitive as what-if's kernel globs: cuBLAS/cuDNN xmma
# kernels, CUTLASS (also cuDNN's conv::ImplicitGemmConvolution), cuDNN's implicit/precomputed convolve_sgemm,
# winograd, FFT convolutions (fft2d_* and their pointwise complex product, flip_filter), fprop/dgrad/wgrad engines,
# cuBLASLt split-K reductions: the classes of findings.fp32_gemm's name rule plus the FFT convolution's helpers
GEMM_GLOBS = ("*gemm*", "*Gemm*", "*xmma*", "*cutlass*", "*splitKreduce*", "*convolve*", "*winograd*", "*fft2d*",
              "*pointwise_mult_and_sum_complex*", "*flip_filter*", "*fprop*", "*dgrad*", "*wgrad*")
STEP_RANGE, DATA_RANGE = "profiled_step", "dataloader"
PHASES = ("forward_pass", "loss_computation", "backward_pass", "optimizer_step")


@dataclass
class Capture:
    """One export's measured side: its analysed steps and what a raw walk of the export finds in them."""
    path: Path
    steps: list[tuple[int, int, int]]  # (step, start_ns, end_ns) of the analysed steps
    excluded: int  # steps left out as warm-up
    data_ns: float = 0.0  # mean `dataloader` range time per analysed step (raw walk)
    kernel_ns: float = 0.0  # mean kernel time per analysed step (kernels that start in the step)
    gemm_ns: float = 0.0  # the part of kernel_ns in GEMM/convolution kernels (GEMM_GLOBS)
    phase_cpu_ns: float = 0.0  # mean time of the PHASES ranges outside cudaDeviceSynchronize: CPU work and launches
    gemm_globs: list[str] = field(default_factory=list)  # the GEMM_GLOBS matching one of its kernels at least
    environment: dict[str, str] = field(default_factory=dict)

    @property
    def mean_ns(self) -> float:
        return statistics.fmean(end - start for _, start, end in self.steps)


@dataclass
class Change:
    name: str
    folder: str
    scales: list[str]
    reach: str  # why the change is or is not in the model's reach (one line; docs/what-if-recapture.md says more)


def plain_sqlite(path: Path, scratch: Path) -> Path:
    """The export as a plain .sqlite file (an .xz one decompressed into `scratch`)."""
    if path.suffix != ".xz":
        return path
    target = scratch / f"{path.parent.name}-{path.stem}"
    with lzma.open(path) as src, target.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    return target


def analysed_steps(path: Path) -> tuple[list[tuple[int, int, int]], int]:
    import nsysql

    with nsysql.open(path) as ex:
        df = ex.run("analysis.steady_steps")
    rows = df.to_dicts()
    return ([(r["step"], r["start_ns"], r["end_ns"]) for r in rows if r["analysed"]],
            sum(1 for r in rows if not r["analysed"]))


def nvtx_ranges(db: sqlite3.Connection, text: str) -> list[tuple[int, int]]:
    sql = ("SELECT e.start, e.end FROM NVTX_EVENTS AS e LEFT JOIN StringIds AS s ON s.id = e.textId "
           "WHERE COALESCE(e.text, s.value) = ? AND e.end IS NOT NULL ORDER BY e.start")
    return [(int(a), int(b)) for a, b in db.execute(sql, (text,))]


def is_gemm(name: str) -> bool:
    return any(fnmatch.fnmatchcase(name, glob) for glob in GEMM_GLOBS)


def measure(path: Path, scratch: Path) -> Capture:
    steps, excluded = analysed_steps(path)
    if not steps:
        sys.exit(f"{path}: no analysed step")
    capture = Capture(path, steps, excluded, environment=environment(path.parent / "capture.log"))
    db = sqlite3.connect(f"file:{plain_sqlite(path, scratch)}?mode=ro", uri=True)
    raw = set(nvtx_ranges(db, STEP_RANGE))
    missing = [step for step, start, end in steps if (start, end) not in raw]
    if missing:  # the two readings must be the same ranges on the same clock
        sys.exit(f"{path}: analysed steps {missing} are no `{STEP_RANGE}` range of the raw export")
    windows = [(start, end) for _, start, end in steps]

    def inside(t: int) -> bool:
        return any(start <= t < end for start, end in windows)

    data = [end - start for start, end in nvtx_ranges(db, DATA_RANGE) if inside(start)]
    kernels = db.execute("SELECT k.start, k.end, s.value FROM CUPTI_ACTIVITY_KIND_KERNEL AS k "
                         "JOIN StringIds AS s ON s.id = k.demangledName").fetchall()
    in_steps = [(end - start, name) for start, end, name in kernels if inside(start)]
    syncs = db.execute("SELECT r.start, r.end FROM CUPTI_ACTIVITY_KIND_RUNTIME AS r JOIN StringIds AS s "
                       "ON s.id = r.nameId WHERE s.value LIKE 'cudaDeviceSynchronize%'").fetchall()
    phases = [(a, b) for phase in PHASES for a, b in nvtx_ranges(db, phase) if inside(a)]
    db.close()
    n = len(steps)
    capture.phase_cpu_ns = sum((b - a) - sum(max(0, min(b, e) - max(a, s)) for s, e in syncs)
                               for a, b in phases) / n
    capture.data_ns = sum(data) / n
    capture.kernel_ns = sum(d for d, _ in in_steps) / n
    capture.gemm_ns = sum(d for d, name in in_steps if is_gemm(name)) / n
    names = {name for _, _, name in kernels}
    capture.gemm_globs = [glob for glob in GEMM_GLOBS if any(fnmatch.fnmatchcase(name, glob) for name in names)]
    return capture


def environment(log: Path) -> dict[str, str]:
    """Capture date, GPU, driver, torch and nsys from a fixture's capture.log (scripts/make_fixtures.sh's header)."""
    if not log.exists():
        return {}
    text = log.read_text(errors="replace")
    found = {}
    for key, pattern in (("date", r"== environment (\S+)"), ("gpu", r"\n([^,\n]+), (\d[\d.]+), \d+ MiB"),
                         ("torch", r"\ntorch (\S+)"), ("nsys", r"Nsight Systems version (\S+)")):
        m = re.search(pattern, text)
        if m:
            found[key] = m.group(1) if key != "gpu" else f"{m.group(1)} (driver {m.group(2)})"
    return found


def what_if(base: Path, scales: list[str]) -> tuple[list[dict[str, int]] | None, str]:
    """what-if's rows for the baseline with these scales, or None and the reason there are none."""
    cmd = [sys.executable, "-m", "nsysql", "what-if", str(base)]
    for spec in scales:
        cmd += ["--scale", spec]
    done = subprocess.run(cmd + ["-f", "csv"], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        lines = [line for line in (done.stderr or done.stdout).splitlines() if line.strip()]
        reason = lines[-1].strip(" │╭╰─") if lines else f"exit status {done.returncode}"
        return None, re.sub(r"\s+", " ", reason)
    rows = list(csv.DictReader(io.StringIO(done.stdout)))
    return [{k: int(v) for k, v in r.items() if k in ("step", "pid", "measured_ns", "predicted_ns")} for r in rows], ""


def reruns_of(directory: Path | None, change: str) -> list[Path]:
    if directory is None or not directory.is_dir():
        return []
    return sorted(p for p in directory.iterdir() if re.fullmatch(rf"{re.escape(change)}-r\d+\.sqlite(\.xz)?", p.name))


def ms(ns: float) -> str:
    return f"{ns / 1e6:,.1f} ms"


def pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x * 100:+.1f} %"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fixtures", type=Path, default=REPO / "fixtures")
    parser.add_argument("--reruns", type=Path, default=DEFAULT_RERUNS if DEFAULT_RERUNS.is_dir() else None,
                        help="exports <change>-r<N>.sqlite[.xz] of the same programs, for the run-to-run range")
    parser.add_argument("--markdown", action="store_true", help="the table as markdown, for the docs")
    args = parser.parse_args(argv)

    scratch = Path(tempfile.mkdtemp(prefix="bench-what-if-"))
    try:
        return run(args, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def run(args: argparse.Namespace, scratch: Path) -> int:
    def fixture(folder: str) -> Path:
        path = args.fixtures / folder / "export.sqlite.xz"
        if not path.exists():
            sys.exit(f"{path} is missing: the what-if fixtures come with the repository (fixtures/README.md)")
        return path

    base = measure(fixture(BASE), scratch)
    bf16 = measure(fixture("whatif-cnn-bf16"), scratch)
    ratio = bf16.gemm_ns / base.gemm_ns
    r = f"{ratio:.4g}"
    gemm = [f"kernel:{glob}={r}" for glob in base.gemm_globs]  # a glob matching nothing is what-if's error
    changes = [
        Change("workers", "whatif-cnn-workers", ["range:dataloader=0"],
               "data loading leaves the step's thread; the workers' CPU load and pinned copies are not modelled"),
        Change("nosync", "whatif-cnn-nosync", ["sync:*=0"],
               "the synchronize calls stop waiting; the CPU then runs one step ahead at most (pageable copy)"),
        Change("bf16", "whatif-cnn-bf16", gemm,
               "GEMM/conv time x R; autocast's casts, other kernels' dtype and its CPU dispatch are not modelled"),
        Change("all", "whatif-cnn-all", ["range:dataloader=0", "sync:*=0", *gemm],
               "the three at once; the CPU-bound result depends on CPU work the model keeps as measured"),
        Change("repeat", "whatif-cnn-base-repeat", ["kernel:*=1"],
               "no change: the replay gives the capture back; the difference is run-to-run spread"),
    ]

    rows = []
    for change in changes:
        measured = measure(fixture(change.folder), scratch)
        predicted, why = what_if(base.path, change.scales)
        note = why
        mean_pred = None
        if predicted is not None:
            want = {row["step"] for row in predicted}
            if want != {step for step, _, _ in base.steps}:
                note = f"what-if's steps {sorted(want)} are not the analysed steps"
            walls = {step: end - start for step, start, end in base.steps}
            off = [row["step"] for row in predicted if row["measured_ns"] != walls.get(row["step"])]
            if off:
                note = f"what-if's measured_ns differ from the steps' wall time on steps {off}"
            mean_pred = statistics.fmean(row["predicted_ns"] for row in predicted)
        spread = [measured.mean_ns]
        rerun_name = "base" if change.name == "repeat" else change.name
        for path in reruns_of(args.reruns, rerun_name):
            spread.append(measure(path, scratch).mean_ns)
        error = None if mean_pred is None else (mean_pred - measured.mean_ns) / measured.mean_ns
        errors = [] if mean_pred is None else [(mean_pred - m) / m for m in spread]
        rows.append((change, measured, mean_pred, error, spread, errors, note))

    repeat = next(r[1] for r in rows if r[0].name == "repeat")
    base_spread = [base.mean_ns, repeat.mean_ns] + [measure(p, scratch).mean_ns
                                                     for p in reruns_of(args.reruns, "base")]
    emit = markdown if args.markdown else text
    emit(base, bf16, ratio, rows, base_spread)
    return 0


def header_lines(base: Capture, bf16: Capture, ratio: float, base_spread: list[float]) -> list[str]:
    env = base.environment
    import nsysql

    lines = [
        f"bench_what_if {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, {platform.node()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}, nsysql {nsysql.__version__}",
        f"captures: {env.get('date', '?')} on {env.get('gpu', '?')}, torch {env.get('torch', '?')}, "
        f"nsys {env.get('nsys', '?')}",
        f"baseline {BASE}: {len(base.steps)} analysed steps, mean {ms(base.mean_ns)} "
        f"(dataloader {ms(base.data_ns)}, phases without synchronize {ms(base.phase_cpu_ns)}, "
        f"kernels {ms(base.kernel_ns)}, GEMM/conv {ms(base.gemm_ns)})",
        f"R = bf16/fp32 GEMM/conv kernel time per step = {ms(bf16.gemm_ns)} / {ms(base.gemm_ns)} = {ratio:.4g}",
    ]
    if len(base_spread) > 1:
        lines.append(f"baseline over {len(base_spread)} captures: {ms(min(base_spread))} to {ms(max(base_spread))}")
    return lines


def spread_text(spread: list[float]) -> str:
    if len(spread) < 2:
        return "-"
    return f"{min(spread) / 1e6:,.1f}-{max(spread) / 1e6:,.1f} ({len(spread)})"


def error_range(errors: list[float]) -> str:
    if len(errors) < 2:
        return "-"
    return f"{min(errors) * 100:+.1f} to {max(errors) * 100:+.1f} %"


def text(base: Capture, bf16: Capture, ratio: float, rows: list, base_spread: list[float]) -> None:
    for line in header_lines(base, bf16, ratio, base_spread):
        print(textwrap.fill(line, 80, subsequent_indent="  "))
    print()
    print(f"{'change':<8} {'predicted':>10} {'measured':>10} {'error':>8}  {'re-captures, ms (n)':<19} error range")
    for change, measured, pred, error, spread, errors, _ in rows:
        print(f"{change.name:<8} {'n/a' if pred is None else ms(pred):>10} {ms(measured.mean_ns):>10} "
              f"{pct(error):>8}  {spread_text(spread):<19} {error_range(errors)}".rstrip())
    print()
    for change, measured, _, _, _, _, note in rows:
        scales = shown_scales(change, ratio)
        print(f"{change.name}: {' '.join(scales)}")
        print(textwrap.fill(f"  {measured.path.parent.name}: {len(measured.steps)} analysed steps, dataloader "
                            f"{ms(measured.data_ns)}, phases without synchronize {ms(measured.phase_cpu_ns)}, "
                            f"kernels {ms(measured.kernel_ns)}, GEMM/conv {ms(measured.gemm_ns)}", 80,
                            subsequent_indent="    "))
        if note:
            line = f"  no prediction: {note}" if pred_missing(rows, change) else f"  note: {note}"
            print(textwrap.fill(line, 80, subsequent_indent="    "))
    print(textwrap.fill(f"GEMM_GLOBS: {' '.join(GEMM_GLOBS)}", 80, subsequent_indent="  ",
                        break_long_words=False, break_on_hyphens=False))


def shown_scales(change: Change, ratio: float) -> list[str]:
    """The change's scales, its GEMM globs' as one: `kernel:GEMM_GLOBS=R`."""
    gemm = [s for s in change.scales if s.startswith("kernel:") and s.endswith(f"={ratio:.4g}")]
    rest = [s for s in change.scales if s not in gemm]
    return rest + [f"kernel:GEMM_GLOBS={ratio:.4g}"] if gemm else rest


def pred_missing(rows: list, change: Change) -> bool:
    return next(r[2] for r in rows if r[0] is change) is None


def markdown(base: Capture, bf16: Capture, ratio: float, rows: list, base_spread: list[float]) -> None:
    for line in header_lines(base, bf16, ratio, base_spread):
        print(f"{line}  ")
    print()
    print("| change | scales | baseline | predicted | re-captured | error | re-captures, ms (n) | error over them | reach |")
    print("|---|---|---|---|---|---|---|---|---|")
    for change, measured, pred, error, spread, errors, note in rows:
        scales = shown_scales(change, ratio)
        shown = "<br>".join(f"`{s}`" for s in scales)
        predicted = ms(pred) if pred is not None else f"n/a ({note})"
        print(f"| {change.name} | {shown} | {ms(base.mean_ns)} | {predicted} | {ms(measured.mean_ns)} | {pct(error)} "
              f"| {spread_text(spread)} | {error_range(errors)} | {change.reach} |")
    print()
    print("| capture | analysed steps | mean step | dataloader | phases without synchronize | kernels | GEMM/conv |")
    print("|---|---|---|---|---|---|---|")
    for c in [base] + [row[1] for row in rows]:
        print(f"| `{c.path.parent.name}` | {len(c.steps)} | {ms(c.mean_ns)} | {ms(c.data_ns)} | {ms(c.phase_cpu_ns)} "
              f"| {ms(c.kernel_ns)} | {ms(c.gemm_ns)} |")
    print()
    print(f"GEMM_GLOBS (demangled kernel names): {', '.join(f'`{g}`' for g in GEMM_GLOBS)}")


if __name__ == "__main__":
    sys.exit(main())
