"""A `.nsys-rep` given as an export: the user's own nsys exports it once into the cache, then it is read as any
SQLite export.

nsys is found where the user says (`--nsys PATH`, then `$NSYS`), else on PATH, else in the folders NVIDIA installs
it to. The export goes into the cache directory, never beside the report, keyed by the report (path, size,
mtime, its first and last 64 KiB) and by `nsys --version`, so a new report or another nsys exports again. It is
SQLite with `--include-blobs=true`, so NCCL's NVTX payloads come along: a parquetdir opens faster
(docs/performance.md, "First open by input format"), but nsys 2025.3 declares the payload column text in Parquet,
where its bytes cannot be read (nsysql/store/formats_in.py, BLOBS_AS_TEXT); Arrow keeps them but is copied into
memory table by table and its first open was not measured; and SQLite is one file, which the cache's size cap
counts and removes like an unpacked `.xz`. It is written under a `.building-` name in the cache and renamed only
when nsys succeeded: a failed or interrupted export leaves nothing (hygiene removes what a killed run left).
"""
from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from nsysql.core import progress
from nsysql.core.owner import owner_tag
from nsysql.errors import NsysqlError
from nsysql.store import inputs
from nsysql.store.cache import cache_key

NSYS_ENV = "NSYS"
SUFFIX = ".nsys-rep"
# where NVIDIA's installers put nsys: Nsight Systems, the CUDA toolkit, and the copy Nsight Compute carries
INSTALL_GLOBS = ("/opt/nvidia/nsight-systems*/bin/nsys", "/opt/nvidia/nsight-systems/*/bin/nsys",
                 "/usr/local/cuda*/bin/nsys", "/usr/local/cuda*/nsight-systems*/bin/nsys",
                 "/opt/nvidia/nsight-compute/*/host/target-linux-x64/nsys")
VERSION_TIMEOUT_S = 60

_chosen: str | None = None  # --nsys, set once by the command line


def choose(path: str | os.PathLike | None) -> None:
    """Use the nsys at `path` (the command line's `--nsys`) before $NSYS and PATH; also as $NSYS for the processes
    this one starts (the run that answers ahead opens the same .nsys-rep, nsysql/answers/ahead.py)."""
    global _chosen
    _chosen = os.fspath(path) if path else None
    if _chosen:
        os.environ[NSYS_ENV] = _chosen


def is_report(path: Path) -> bool:
    return path.name.endswith(SUFFIX)


def manual_command(report: Path) -> str:
    """The command that exports `report` by hand, as nsysql would."""
    out = report.name.removesuffix(SUFFIX) + ".sqlite"
    return f"nsys export --type sqlite --include-blobs=true -o {out} {inputs.text(report.name)}"


def find(explicit: str | None = None) -> Path | None:
    """The nsys to run: `explicit`, --nsys, $NSYS, PATH, then the usual install folders (newest name last)."""
    for given, source in ((explicit, "--nsys"), (_chosen, "--nsys"), (os.environ.get(NSYS_ENV), f"${NSYS_ENV}")):
        if given:
            path = Path(given).expanduser()
            if path.is_dir():
                path = path / "nsys"
            if not (path.is_file() and os.access(path, os.X_OK)):
                raise NsysqlError(f"{source} {inputs.text(given)}: no nsys program there; give the path of the nsys "
                                  "binary (e.g. /opt/nvidia/nsight-systems/2025.3.1/bin/nsys)")
            return path
    on_path = shutil.which("nsys")
    if on_path:
        return Path(on_path)
    for pattern in INSTALL_GLOBS:
        found = [p for p in sorted(glob.glob(pattern)) if os.access(p, os.X_OK)]
        if found:
            return Path(found[-1])
    return None


def version(nsys: Path) -> str:
    """`nsys --version`'s line, part of the cache key."""
    try:
        done = subprocess.run([str(nsys), "--version"], capture_output=True, text=True, errors="replace",
                              timeout=VERSION_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise NsysqlError(f"{nsys} --version failed ({exc}); give a working nsys with `nsys=PATH` or $NSYS") from None
    line = (done.stdout.strip() or done.stderr.strip()).splitlines()
    if done.returncode != 0 or not line:
        raise NsysqlError(f"{nsys} --version failed (exit {done.returncode}); give a working nsys with "
                          "`nsys=PATH` or $NSYS")
    return line[0]


def exported(report: Path, directory: Path) -> Path:
    """The SQLite export of `report` in the cache `directory`, made by nsys on first use."""
    inputs.regular_file(report)
    nsys = find()
    if nsys is None:
        raise NsysqlError(f"{inputs.text(report)} is an nsys report and no nsys was found (`nsys=PATH`, ${NSYS_ENV}, "
                          f"PATH, /opt/nvidia/nsight-systems*/bin); export it yourself: {manual_command(report)}")
    stem = inputs.safe_name(report.name.removesuffix(SUFFIX))
    target = directory / f"{stem}-{cache_key(report, 'nsys-rep ' + version(nsys))}.sqlite"
    if target.exists():
        return target
    scratch = Path(tempfile.mkdtemp(prefix=f".building-{owner_tag()}-", suffix=".nsys-export",
                                    dir=directory))
    try:
        out = scratch / "export.sqlite"
        command = [str(nsys), "export", "--type", "sqlite", "--include-blobs=true", "--force-overwrite=true",
                   "-o", str(out), str(report.resolve())]
        with progress.shown(f"exporting {inputs.text(report.name)} with nsys"), progress.stage("nsys export"):
            done = _run(command)
        if done.returncode != 0 or not out.is_file():
            said = [line.strip() for line in done.stdout.splitlines() if line.strip()]
            why = said[-1] if said else f"exit {done.returncode}"
            raise NsysqlError(f"{inputs.text(report)}: nsys could not export this report ({why}); check that it "
                              f"opens in Nsight Systems, or export it yourself: {manual_command(report)}")
        os.replace(out, target)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return target


def _run(command: list[str]) -> subprocess.CompletedProcess:
    """nsys export, its output kept for the error line; on an interrupt nsys is stopped before the scratch goes."""
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            text=True, errors="replace")
    try:
        stdout, _ = proc.communicate()
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    return subprocess.CompletedProcess(command, proc.returncode, stdout, "")
