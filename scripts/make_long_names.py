#!/usr/bin/env python3
"""An export whose NVTX range names are very long: a copy of a fixture whose `forward_pass` ranges (three in
gpt-tiny-train-annotated) are renamed to `length` characters of text (1 MiB by default). A synthetic edge case:
a real program can push such a name, and no command may then hang on per-character work over it.

Library use (tests/test_long_names.py):  path = build(out_dir)
CLI:  python scripts/make_long_names.py OUTDIR [--fixture X.sqlite.xz] [--length N]
"""
from __future__ import annotations

import argparse
import lzma
import shutil
import sqlite3
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "fixtures" / "gpt-tiny-train-annotated" / "export.sqlite.xz"
RENAMED = "forward_pass"


def long_name(length: int) -> str:
    """`length` characters that look like a name (letters, digits, separators an NVTX name may hold)."""
    unit = "forward_pass/layer_3.block-7#x "
    return (unit * (length // len(unit) + 1))[:length]


def build(out_dir: Path, fixture_xz: Path = FIXTURE, length: int = 1 << 20) -> Path:
    """Writes OUT_DIR/long-names.sqlite and returns its path; every `forward_pass` range gets the long name."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "long-names.sqlite"
    with lzma.open(fixture_xz) as src, path.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    con = sqlite3.connect(path)
    try:
        name = long_name(length)
        renamed = con.execute("UPDATE NVTX_EVENTS SET text = ? WHERE text = ?", (name, RENAMED)).rowcount
        ids = [r[0] for r in con.execute("SELECT id FROM StringIds WHERE value = ?", (RENAMED,))]
        for i in ids:  # a name stored through textId
            renamed += con.execute("UPDATE NVTX_EVENTS SET textId = ? WHERE textId = ?", (i, i)).rowcount
            con.execute("UPDATE StringIds SET value = ? WHERE id = ?", (name, i))
        if not renamed:
            raise SystemExit(f"{fixture_xz}: no `{RENAMED}` range to rename")
        con.commit()
    finally:
        con.close()
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--fixture", type=Path, default=FIXTURE)
    ap.add_argument("--length", type=int, default=1 << 20)
    args = ap.parse_args()
    print(build(args.out_dir, args.fixture, args.length))


if __name__ == "__main__":
    main()
