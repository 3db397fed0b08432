"""The events of a time window, for one export or the ranks of one job on one clock: NVTX ranges, CUDA API calls and
GPU ops with their attribution and launching call (the catalog's analysis._trace_* queries), and the steps around
them. Read by nsysql/answers/perfetto.py (a trace file) and nsysql/answers/html_report.py (the report's timeline).

Times stay in nanoseconds on the first export's clock: a job's other exports are shifted by what nsysql/answers/job.py found
(`clock_shift_ns`, set when it linked them; 0 for one export)."""
from __future__ import annotations

import re
from dataclasses import dataclass

import polars as pl

from nsysql.errors import NsysqlError


@dataclass(frozen=True)
class Window:
    lo: int  # absolute ns, first export's clock
    hi: int
    origin: int  # the first export's first event: times people see are ms since it
    what: str  # words for the window: "analysed steps 1-3", "steps 3-5", "120.0 to 180.0 ms"


def shift_of(ex) -> int:
    return int(getattr(ex, "clock_shift_ns", 0))


def parse_steps(text: str) -> tuple[int, int]:
    """`3-5` or `4` -> (first, last), 1-based as `nsysql steps` numbers them."""
    m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+))?\s*", text)
    if not m:
        raise NsysqlError(f"`steps={text.strip()}`: give a step or a range of steps, e.g. `steps=3` or `steps=3-5`")
    first, last = int(m[1]), int(m[2] or m[1])
    if first < 1 or last < first:
        raise NsysqlError(f"`steps={text.strip()}`: steps count from 1, and the range must not run backwards")
    return first, last


def parse_window(text: str) -> tuple[float, float]:
    """`120-180` (ms since the capture's first event) -> (120.0, 180.0)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d*)?)\s*[-:,]\s*(\d+(?:\.\d*)?)\s*", text)
    if not m or float(m[2]) <= float(m[1]):
        raise NsysqlError(f"`window={text.strip()}`: give START-END in ms since the capture's first event, "
                          "END after START, e.g. `window=120-180`")
    return float(m[1]), float(m[2])


def steps_on_clock(exports: list) -> pl.DataFrame:
    """analysis.steady_steps of every export, on the first export's clock, with the export's index (`source`)."""
    frames = []
    for i, ex in enumerate(exports):
        df = ex.run("analysis.steady_steps")
        sh = shift_of(ex)
        frames.append(df.select(pl.lit(i, pl.Int64).alias("export"), "step", "name", "pid", "tid",
                                (pl.col("start_ns") + sh).alias("start_ns"), (pl.col("end_ns") + sh).alias("end_ns"),
                                "wall_ns", "analysed", pl.col("source")))
    return pl.concat(frames)


def origin_of(ex) -> int:
    """The export's time origin (its stored fact, Queries.time_origin); an export without events is one line."""
    origin = ex.time_origin()
    if origin is None:
        raise NsysqlError(f"{ex.path.name} holds no NVTX ranges, API calls or GPU ops")
    return int(origin)


def choose(exports: list, *, steps: str | None = None, window: str | None = None) -> Window:
    """The window to show: --window (ms since the first export's first event), --steps (those steps of every
    process), or by default the analysed (steady-state) steps, or the GPU's active span where there are none."""
    if steps and window:
        raise NsysqlError("give `steps=` or `window=`, not both")
    origin = origin_of(exports[0])
    if window:
        a, b = parse_window(window)
        return Window(origin + int(a * 1e6), origin + int(b * 1e6), origin, f"{a:g} to {b:g} ms")
    table = steps_on_clock(exports)
    if steps:
        first, last = parse_steps(steps)
        has_steps = table.filter(pl.col("source") != "gpu_span")
        if has_steps.is_empty():
            raise NsysqlError(f"{exports[0].path.name} has no steps (see `nsysql steps`); give a window, `window=START-END`")
        chosen = has_steps.filter(pl.col("step").is_between(first, last))
        if chosen.is_empty():
            last_step = int(has_steps["step"].max())  # type: ignore[arg-type]
            raise NsysqlError(f"`steps={steps}`: the steps are numbered 1 to {last_step} "
                              "(see `nsysql steps`)")
        what = f"step {first}" if first == last else f"steps {first}-{last}"
    else:
        chosen = table.filter(pl.col("analysed"))
        if chosen.is_empty():
            chosen = table
        if chosen.is_empty():
            win = exports[0].run("analysis._plot_window", start_ms=None, end_ms=None).row(0, named=True)
            return Window(int(win["from_ns"]), int(win["to_ns"]), origin, "the whole capture")
        numbers = sorted(set(chosen["step"].to_list()))
        what = ("the GPU's active span" if chosen["source"][0] == "gpu_span" else
                f"analysed steps {numbers[0]}-{numbers[-1]}" if len(numbers) > 1 else f"analysed step {numbers[0]}")
    return Window(int(chosen["start_ns"].min()), int(chosen["end_ns"].max()), origin, what)  # type: ignore[arg-type]


@dataclass
class Events:
    """One export's events overlapping a window, times on the first export's clock."""
    ranges: pl.DataFrame  # analysis._trace_ranges
    calls: pl.DataFrame  # analysis._trace_calls
    ops: pl.DataFrame  # analysis._trace_ops


def gather(ex, lo: int, hi: int) -> Events:
    sh = shift_of(ex)
    times = [pl.col("start_ns") + sh, pl.col("end_ns") + sh]
    params = dict(from_ns=lo - sh, to_ns=hi - sh)
    ranges = _run_or_empty(ex, "analysis._trace_ranges", "nvtx_range", params)
    calls = _run_or_empty(ex, "analysis._trace_calls", "runtime", params)
    ops = _run_or_empty(ex, "analysis._trace_ops", ("gpu_op", "runtime"), params)
    return Events(ranges.with_columns(times), calls.with_columns(times), ops.with_columns(times))


def _run_or_empty(ex, query_id: str, tables: str | tuple[str, ...], params: dict) -> pl.DataFrame:
    """The query's rows, or none (with its columns) where the export lacks what it reads (a CPU-only capture has no
    CUDA tables, a CUDA program may have no NVTX)."""
    if all(ex.has(t) for t in ((tables,) if isinstance(tables, str) else tables)):
        return ex.run(query_id, **params)
    from nsysql.sql import catalog
    q = catalog.get(query_id)
    return pl.DataFrame(schema={c.name: _POLARS[c.type] for c in q.columns})


_POLARS = {"BIGINT": pl.Int64, "VARCHAR": pl.Utf8, "BOOLEAN": pl.Boolean, "DOUBLE": pl.Float64}
