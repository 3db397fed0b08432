"""Lay out the what-if captures (issue 34) as fixtures/whatif-cnn-<variant>/, from what scripts/capture_what_if.sh
returned from the GPU machine.

    python scripts/unpack_what_if.py DEVICE_DIR [--into fixtures]

DEVICE_DIR holds fixtures.tar (scripts/make_fixtures.sh: <name>/<name>.sqlite.xz and the nine <name>_<report>.csv),
goldens.tar.xz (scripts/make_report_goldens.sh: <folder>/nsys-stats_*.csv, nsys-analyze_*.csv, stats.log,
analyze.log) and make_fixtures.log. Each folder gets export.sqlite.xz, NVIDIA's CSVs (the nine from the capture, the
others from the goldens run; empty report CSVs dropped, as NVIDIA's log says which were empty; files over 100 kB
xz-compressed), nsys-stats-more.log and nsys-analyze.log with the machine's temporary paths written `<fixtures>`,
and capture.log: the environment and the fixture's part of make_fixtures.log, progress bars removed.
The nine CSVs of the capture must equal the goldens run's: both are `nsys stats` of the same file.
"""
from __future__ import annotations

import argparse
import lzma
import re
import shutil
import sys
import tarfile
import tempfile
from pathlib import Path

BIG = 100_000  # bytes: larger CSVs are stored xz-compressed, as the other fixtures
NAME = re.compile(r"^whatif_cnn_\w+$")


def unpack(device_dir: Path, into: Path) -> list[Path]:
    work = Path(tempfile.mkdtemp(prefix="whatif-"))
    with tarfile.open(device_dir / "fixtures.tar") as tar:
        tar.extractall(work / "fx", filter="data")
    with tarfile.open(device_dir / "goldens.tar.xz") as tar:
        tar.extractall(work / "gold", filter="data")
    log = (device_dir / "make_fixtures.log").read_text(errors="replace")
    environment = log.split("\n== fixture ", 1)[0].strip()
    made = []
    for fx in sorted(p for p in (work / "fx").iterdir() if NAME.match(p.name)):
        name, folder = fx.name, fx.name.replace("_", "-")
        gold = work / "gold" / folder
        out = into / folder
        out.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(fx / f"{name}.sqlite.xz", out / "export.sqlite.xz")
        nine = {p.name[len(name) + 1:-4]: p for p in fx.glob(f"{name}_*.csv")}
        for report, path in nine.items():
            other = gold / f"nsys-stats_{report}.csv"
            if other.read_bytes() != path.read_bytes():
                sys.exit(f"{folder}: the capture's {report} CSV differs from the goldens run's")
        for csv in sorted(gold.glob("nsys-*.csv")):
            if csv.stat().st_size == 0 and csv.name.startswith("nsys-stats_"):
                continue  # NVIDIA found no rows; nsys-stats-more.log says so
            if csv.stat().st_size > BIG:
                with lzma.open(out / f"{csv.name}.xz", "wb", preset=6) as dst:
                    dst.write(csv.read_bytes())
            else:
                shutil.copyfile(csv, out / csv.name)
        for src, dst in (("stats.log", "nsys-stats-more.log"), ("analyze.log", "nsys-analyze.log")):
            text = (gold / src).read_text()
            (out / dst).write_text(re.sub(r"/tmp/nsysql-goldens\.\w+/", "<fixtures>/", text))
        (out / "capture.log").write_text(capture_log(folder, name, environment, log))
        made.append(out)
    shutil.rmtree(work)
    return made


def capture_log(folder: str, name: str, environment: str, log: str) -> str:
    """The environment and this fixture's section of make_fixtures.log, without progress bars."""
    part = log.split(f"\n== fixture {name} [", 1)[1]
    part = re.split(r"\n== (?:fixture |fixtures\.tar)", part, maxsplit=1)[0]
    lines = [line for line in f"== fixture {name} [{part}".splitlines()
             if "\r" not in line and not re.match(r"^(\[\d/\d\] \[|Processing \d+ events)", line)]
    head = (f"# Capture log of fixtures/{folder} (from scripts/make_fixtures.sh's make_fixtures.log, run by "
            "scripts/capture_what_if.sh; progress bars removed)")
    return "\n".join([head, environment, "", *lines]).rstrip() + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("device_dir", type=Path)
    parser.add_argument("--into", type=Path, default=Path(__file__).resolve().parent.parent / "fixtures")
    args = parser.parse_args()
    for out in unpack(args.device_dir, args.into):
        size = (out / "export.sqlite.xz").stat().st_size
        print(f"{out}: export.sqlite.xz {size} bytes, {len(list(out.iterdir()))} files")


if __name__ == "__main__":
    main()
