"""Which steps' timelines the HTML report carries (nsysql/answers/html_report.py), and how they travel in the page.

By default the median analysed step (by wall time, the mean over processes; the lower middle of an even count,
ties by step number) and then the other analysed steps by number, while their compressed timelines fit BUDGET; the
steps left out are listed on the page with the `--steps` that brings them. `--steps 3,5-7` or `--steps all`
(every step, warm-up ones too) carries exactly those, whatever their size: the command warns past PAGE_LIMIT.

Each carried step's timeline is its own block in the page, gzip-compressed and base64-encoded: the browser
inflates the first one to draw it and the others when they are picked, so a step's ops cost nothing at load.
"""
from __future__ import annotations

import base64
import gzip
import json
import re

import polars as pl

from nsysql.errors import NsysqlError

MAX_DEFAULT = 8  # timelines carried by default, at most (the median first)
BUDGET = 2_000_000  # base64 characters of the default choice's blocks: with Plotly (1.9 MB) the page stays < 5 MB
PAGE_LIMIT = 5_000_000  # bytes: past this the command warns that a browser may take long to open the page
MAX_BARS = 10_000  # events drawn of one step (Plotly draws ~10k SVG bars in seconds; 30k froze the tab for a minute
# on a loaded 2-core machine): past this the timeline is cut at a time, and the page says where


def parse(spec: str | None) -> list[int] | str | None:
    """`3,5-7` -> [3, 5, 6, 7] (sorted, once each); `all` -> "all"; None or empty -> None (the default choice)."""
    if spec is None or not spec.strip():
        return None
    text = re.sub(r"\s+", "", spec)
    if text.lower() == "all":
        return "all"
    out: set[int] = set()
    for part in text.split(","):
        m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+))?\s*", part)
        if not m:
            raise NsysqlError(f"`steps={text}`: give step numbers and ranges, e.g. `steps=3,5-7`, or `steps=all`")
        first, last = int(m[1]), int(m[2] or m[1])
        if first < 1 or last < first:
            raise NsysqlError(f"`steps={text}`: steps count from 1 (as `nsysql steps` numbers them), and a range "
                              "must not run backwards")
        out.update(range(first, last + 1))
    return sorted(out)


def median_step(per_step: pl.DataFrame) -> int | None:
    """The step drawn first by default: among the analysed steps (all of them where none is), ordered by wall time
    then number, the lower middle one."""
    pool = per_step.filter(pl.col("analysed")) if per_step["analysed"].any() else per_step
    if pool.is_empty():
        return None
    by_wall = pool.sort("wall", "step")
    return int(by_wall["step"][(by_wall.height - 1) // 2])


def candidates(per_step: pl.DataFrame, chosen: list[int] | str | None) -> tuple[list[int], int | None]:
    """The steps to carry in the order they are considered (the one drawn first, first) and the median step.
    `per_step`: a row per step number with `wall` and `analysed`."""
    median = median_step(per_step)
    numbers = per_step["step"].to_list()
    if chosen is None:
        pool = per_step.filter(pl.col("analysed")) if per_step["analysed"].any() else per_step
        others = [s for s in pool["step"].to_list() if s != median]
        return ([median] if median is not None else []) + others[:MAX_DEFAULT - 1], median
    if chosen == "all":
        picked = list(numbers)
    else:
        assert isinstance(chosen, list)
        missing = [s for s in chosen if s not in set(numbers)]
        if missing:
            have = f"{min(numbers)} to {max(numbers)}" if numbers else "none"
            raise NsysqlError(f"`steps={ranges(chosen)}`: no step {ranges(missing)} in this capture (its steps: "
                              f"{have}; see `nsysql steps`)")
        picked = list(chosen)
    first = median if median in picked else picked[0] if picked else None
    return ([first] if first is not None else []) + [s for s in picked if s != first], median


def clip(step: dict, limit: int | None = None) -> dict:
    """A step of more than `limit` events cut to those that start before the `limit`th start (so one step's
    timeline stays drawable and its block bounded): `clipped` says at what time (ns from the step's start) and how
    many events it had; the critical path's items past the cut go too."""
    limit = MAX_BARS if limit is None else limit
    bars = step["bars"]
    total = len(bars["s"])
    if total <= limit:
        return step
    cut = sorted(bars["s"])[limit]
    keep = [i for i, s in enumerate(bars["s"]) if s < cut]
    step["bars"] = {k: [v[i] for i in keep] for k, v in bars.items()}
    step["clipped"] = {"at_ns": cut, "events": total, "kept": len(keep)}
    kinds = step["bars"]["kind"]
    step["gpu_ops"] = sum(1 for k in kinds if k not in ("range", "marker", "api"))
    path = step.get("path")
    if path:
        for key in ("bars", "marks"):
            part = path[key]
            keep = [i for i, s in enumerate(part["s"]) if s < cut]
            path[key] = {k: [v[i] for i in keep] for k, v in part.items()}
    return step


def pack(step: dict) -> str:
    """A step's timeline as its page block: compact JSON, gzip, base64."""
    raw = json.dumps(step, separators=(",", ":"), default=str).encode("utf-8")
    return base64.b64encode(gzip.compress(raw, compresslevel=6, mtime=0)).decode("ascii")


def unpack(block: str) -> dict:
    return json.loads(gzip.decompress(base64.b64decode(block)))


def ranges(numbers: list[int]) -> str:
    """[3, 5, 6, 7] -> "3,5-7": how `--steps` is written."""
    out: list[str] = []
    for n in sorted(set(numbers)):
        if out and int(out[-1].split("-")[-1]) == n - 1:
            out[-1] = f"{out[-1].split('-')[0]}-{n}"
        else:
            out.append(str(n))
    return ",".join(out)

