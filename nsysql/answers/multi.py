"""Several exports at once (one per rank, or several runs): expand paths and globs, label each
export, and run one analysis over all of them into a single frame with `export` and `rank` columns."""
from __future__ import annotations

import glob
import os
import re
import sys
from pathlib import Path
from typing import Callable

import polars as pl

from nsysql.errors import MissingDataError, NsysqlError, cli_text
from nsysql.store import inputs
from nsysql.store.open_many import open_all

# rank in a file name: rank3, rank_3, rank-03, or r3 (r/rank not glued to a letter or digit before it)
_RANK = re.compile(r"(?:^|[^a-z0-9])(?:rank|r)[_-]?(\d+)(?:[^0-9]|$)", re.IGNORECASE)


def expand(paths: list[Path]) -> list[Path]:
    """Paths in the order given, with glob patterns (*, ?, [..]) expanded and sorted; duplicates dropped.
    A path that exists is literal, whatever its characters (`run[1].sqlite` next to `run1.sqlite` is itself);
    only a path that does not exist is taken as a pattern."""
    out: list[Path] = []
    for p in paths:
        text = str(p)
        if not os.path.lexists(p) and any(ch in text for ch in "*?["):
            matches = sorted(glob.glob(text))
            if not matches:
                raise NsysqlError(f"{inputs.text(p)}: no file matches this pattern")
            out.extend(Path(m) for m in matches)
        else:
            out.append(p)
    seen, unique = set(), []
    for p in out:
        key = inputs.real_path(p)  # never raises, even on a symlink loop
        if key not in seen:
            seen.add(key)
            unique.append(p)
    return unique


def label(path: Path) -> str:
    """The export's name in multi-export output: the file name without .sqlite/.xz (or .nsys-rep)."""
    name = path.name.removesuffix(".nsys-rep")
    for suffix in (".xz", ".sqlite"):
        name = name.removesuffix(suffix)
    return name


def labels(paths: list[Path]) -> list[str]:
    """Unique labels: file names; the folder names where every file has the same name (`run_a/export.sqlite`,
    `run_b/export.sqlite` -> run_a, run_b); else parent/file where two files share a name."""
    names = [label(p) for p in paths]
    if len(set(names)) == len(names):
        return names
    folders = [p.parent.name for p in paths]
    if len(set(names)) == 1 and len(set(folders)) == len(folders) and all(folders):
        return folders
    return [f"{p.parent.name}/{n}" for p, n in zip(paths, names)]


def rank_of(path: Path) -> int | None:
    """The rank a file name states (`rank3`, `rank_03`, `r3`), else None."""
    m = _RANK.search(label(path))
    return int(m.group(1)) if m else None


def gather(paths: list[Path], analysis: Callable, opener: Callable,
           on_skip: Callable[[str, str], None] | None = None) -> pl.DataFrame:
    """`analysis(export)` for each path. One path: its frame unchanged (so single-export output stays
    identical to `nsys stats`), and its error raised. Several: one frame, rows prefixed with `export` and `rank`;
    an export that fails to open or lacks the data the analysis needs (MissingDataError) is skipped and named through
    `on_skip(label, reason)` (by default `note: skipped <label>: <reason>` on stderr); it fails only when none
    succeeds."""
    if len(paths) == 1:
        with opener(paths[0]) as ex:
            return analysis(ex)
    frames, failed = [], []
    opened = []
    names = labels(paths)
    # opened several at a time (nsysql/store/open_many.py); one that cannot be opened (damaged, truncated, too old ...)
    # is named below
    for i, (path, name, ex) in enumerate(zip(paths, names, open_all(paths, names, opener))):
        if isinstance(ex, NsysqlError):
            failed.append((i, name, str(ex).removeprefix(f"{name}: ")))
        else:
            opened.append((i, path, name, ex))
    aligned = _link_job([ex for *_, ex in opened], [name for _, _, name, _ in opened])
    for i, path, name, ex in opened:
        try:
            with ex:
                df = analysis(ex)
        except MissingDataError as exc:  # other errors (a bad query or option) would fail every export alike
            failed.append((i, name, str(exc).removeprefix(f"{name}: ")))
            continue
        frames.append(_labelled(df, name, rank_of(path) if _rank_of_export(ex) is None else _rank_of_export(ex)))
    failures = [(name, reason) for _, name, reason in sorted(failed)]  # in the order the exports were given
    if frames:  # named once the answer stands; when none succeeds the one error line below names them all
        for name, reason in failures:
            (on_skip or note_skipped)(name, reason)
    else:
        reasons = {reason for _, reason in failures}
        if len(reasons) == 1:
            raise NsysqlError(f"every export failed: {reasons.pop()}")
        raise NsysqlError("every export failed: " + "; ".join(f"{name}: {reason}" for name, reason in failures))
    out = pl.concat(frames, how="diagonal_relaxed")
    if aligned:
        from nsysql.answers.job import restraggle
        out = restraggle(out)
    return out


def open_job(paths: list[Path], opener: Callable, *, strict: bool = False) -> tuple[list, list[str]] | None:
    """The exports at `paths` opened and linked (nsysql/answers/job.py) when they are the ranks of one job, with their
    labels; None (nothing left open) when they are not: separate runs, or one cannot be opened and not `strict` (the
    caller's own handling of several exports names it; `strict`: its error is raised, with the export's label)."""
    results = open_all(paths, labels(paths), opener)  # several at a time (nsysql/store/open_many.py)
    opened = [ex for ex in results if not isinstance(ex, NsysqlError)]
    failed = [(name, ex) for name, ex in zip(labels(paths), results) if isinstance(ex, NsysqlError)]
    if failed:
        for ex in opened:
            ex.close()
        if strict:
            name, exc = failed[0]
            raise NsysqlError(f"{name}: {str(exc).removeprefix(f'{name}: ')}")
        return None
    names = labels(paths)
    if _link_job(opened, names):
        return opened, names
    for ex in opened:
        ex.close()
    return None


def _labelled(df: pl.DataFrame, name: str, rank: int | None) -> pl.DataFrame:
    """`df` with `export` first, and `rank` (the export's, unless its rows number their ranks themselves)."""
    if "rank" in df.columns:
        return df.select(pl.lit(name).alias("export"), pl.all())
    return df.select(pl.lit(name).alias("export"), pl.lit(rank, dtype=pl.Int64).alias("rank"), pl.all())


def _rank_of_export(ex) -> int | None:
    """The RANK the export's process was launched as (one nsys per rank), else None."""
    try:
        return ex.sql("SELECT rank FROM session").item()
    except (NsysqlError, ValueError):
        return None


def _link_job(exports: list, names: list[str]) -> bool:
    """Match the collectives of exports that are the ranks of one job (nsysql/answers/job.py), saying so on stderr."""
    from nsysql.answers.job import link
    try:
        alignment = link(exports)
    except MissingDataError:
        return False
    if alignment is None:
        return False
    from nsysql.present.render import wrap_note
    print(wrap_note(alignment.line(names)), file=sys.stderr)
    return True


def note_skipped(name: str, reason: str) -> None:
    """The default note for an export left out of a several-export answer."""
    print(f"note: skipped {name}: {cli_text(reason)}", file=sys.stderr)
