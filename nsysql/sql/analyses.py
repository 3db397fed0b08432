"""Declared analyses: the one place that says, as data, which query files an analysis runs, its `--by` choices,
its parameters and how its table is shown. Each declaration becomes a table command (nsysql/cli/tables.py,
with the shared option groups); in the library `Export.analysis(name, by=..., **params)` runs it, through the
`Export` method of that name where there is one (`overhead`, `memcpy`, `efficiency` take their query from here).

Adding an analysis takes one SQL file (queries/analysis/NAME.sql, with its header). A header line
`-- command: NAME [(after COMMAND)]` declares it in the file itself: a table command with its purpose as help and
one option per header parameter. For `--by` choices, units shared by columns or columns a narrow table hides first,
declare it here instead:

    Analysis(
        name="busy_streams",                       # the command `nsysql busy_streams`; t.analysis("busy_streams")
        help="GPU busy time per stream.",          # the command's help; its first sentence lists it in --help
        queries={"": "analysis.busy_streams"},     # one query; several: {"stream": ..., "device": ...} = --by
    )

in DECLARED below, or `declare(...)` for one's own, with `catalog.add_queries(DIR)` for query files outside
queries/. A declaration names no Python function: the command gathers the rows of every export given and renders
them with the query's header (columns, types, units, decimals), so a renderer never looks a column up itself.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional

from nsysql.errors import NsysqlError
from nsysql.sql import catalog


class _FromHeader:
    def __repr__(self) -> str:
        return "FROM_HEADER"


FROM_HEADER = _FromHeader()  # a parameter's default is its $param's default in the query's header (divided by scale)


@dataclass(frozen=True)
class Param:
    """A parameter of an analysis: a keyword argument of `Export.analysis` (and of the Export method of the same
    name) and a command-line option (`--min-gap-us` for `min_gap_us`, or `flag`, e.g. `--calls/--no-calls`). It
    binds the $param `sql` (its own name when None) to round(value * scale) when `scale` is given, else to the
    value itself; its default FROM_HEADER is that $param's header default / scale, so a default is stated once.
    `min`: the lowest value taken. `selects`: a flag that, set, runs this query instead (`gaps --threads`:
    analysis.gaps_threads). A parameter named `top` is the command's own: each export's first N rows
    (`Analysis.top_by`)."""
    name: str
    type: Any
    default: Any
    help: str
    min: float | None = None
    flag: str | None = None
    show_default: bool = True
    sql: str | None = None
    selects: str | None = None
    scale: float | None = None
    what: str = ""  # how an error names it (`the minimum gap`); the name as `name=` where empty

    def bound(self, value: Any) -> Any:
        """The $param's value for `value` of this parameter."""
        return value if self.scale is None or value is None else round(value * self.scale)

    @property
    def option(self) -> str:
        return self.flag or "--" + self.name.replace("_", "-")


@dataclass(frozen=True)
class Empty:
    """What a command says of exports without rows: `missing` on stderr for each one skipped among several;
    `single` (with {export}, the file name) and `none` are the errors when the only one, or every one, is empty."""
    missing: str
    single: str
    none: str


@dataclass(frozen=True)
class Analysis:
    """One analysis, declared once.

    queries: `--by` choice -> query id, the default first; one query under the key "" (no `--by`).
    by_param: the queries are one file taking the choice as this $param (efficiency: `by`), not one file each.
    by_help: the `--by` option's help.
    params: the analysis's other parameters, in the order its options are listed.
    top_by: a `top` parameter keeps, of each export, the rows of the first N values of these columns (gaps: the N
      longest gaps, each with all its rows); by default the first N rows (the file's ORDER BY decides).
    conflicts: (values, message): the command refuses these parameter values together, with this message.
    empty: exports with no rows are skipped among several, and an error when none has any.
    title: the table's title, formatted with `by` and the params (`"Launch overhead by {by}"`).
    optional: columns a narrow table hides first (per variant when a dict: the `--by` choice, or the name of the
      `selects` flag that is set, else ""); `unit_groups`: duration columns shown in one shared unit; `text_min`:
      widths text columns keep before optional columns are hidden.
    rows_capped: table output shows the first 40 rows (unless `--top` is given); `more_hint` says how to see all.
    timestamps: the columns include `ns timestamp` instants, shown as ms since the capture's first event (tables).
    after: the command it follows in `nsysql --help` (new analyses: after the last command).
    """
    name: str
    help: str
    queries: Mapping[str, str]
    by_param: str | None = None
    by_help: str = ""
    params: tuple[Param, ...] = ()
    top_by: tuple[str, ...] = ()
    conflicts: tuple[tuple[Mapping[str, Any], str], ...] = ()
    empty: Empty | None = None
    title: str = ""
    optional: tuple | Mapping[str, tuple] = ()
    unit_groups: tuple[tuple[str, ...], ...] = ()
    text_min: Mapping[str, int] = field(default_factory=dict)
    rows_capped: bool = False
    more_hint: str | None = None
    timestamps: bool = False
    after: str | None = None
    before: Callable[[Any, str | None, dict], None] | None = None  # checks that need the export: (export, by, values)

    @property
    def choices(self) -> list[str]:
        """The `--by` choices, the default first; empty without `--by`."""
        return [c for c in self.queries if c]

    @property
    def default_by(self) -> str | None:
        return self.choices[0] if self.choices else None

    def variant(self, by: str | None = None, **params) -> str:
        """Which form of the analysis runs: the `selects` flag that is set, else the `--by` choice, else ""."""
        chosen = [p.name for p in self.params if p.selects and params.get(p.name)]
        return chosen[0] if chosen else (by or self.default_by or "")

    def query(self, by: str | None = None, **params) -> catalog.Query:
        """The query run for `by` (the default choice when None) and `params` (a `selects` flag set); an unknown
        choice is one clear error."""
        for p in self.params:
            if p.selects and params.get(p.name):
                return catalog.get(p.selects)
        if not self.choices:
            return catalog.get(self.queries[""])
        by = self.default_by if by is None else by
        if by is None or by not in self.queries:
            raise NsysqlError(f"{self.name} by {by!r}? choose one of: {', '.join(self.choices)}")
        return catalog.get(self.queries[by])

    def columns(self, by: str | None = None, **params) -> tuple[catalog.Column, ...]:
        """The result's header: its columns with type, unit and decimals, from the query file."""
        return self.query(by, **params).columns

    def hidden_first(self, by: str | None = None, **params) -> tuple:
        if isinstance(self.optional, Mapping):
            return tuple(self.optional[self.variant(by, **params)])
        return tuple(self.optional)

    def check(self, **params) -> None:
        """The declared conflicts between parameter values (each one line for the command line)."""
        for values, message in self.conflicts:
            if all(params.get(k) == v for k, v in values.items()):
                raise NsysqlError(message)

    def default(self, p: Param) -> Any:
        """`p`'s default: as declared, or (FROM_HEADER) its $param's default in the header of this analysis's query."""
        if p.default is not FROM_HEADER:
            return p.default
        q = catalog.get(next(iter(self.queries.values())))
        declared = q.param(p.sql or p.name)
        if declared is None or not declared.has_default:
            raise NsysqlError(f"{self.name}: {q.id} states no default for ${p.sql or p.name}")  # a bad declaration
        value = declared.default
        return p.type(value / p.scale) if p.scale and isinstance(value, (int, float)) else value

    def caption(self, by: str | None = None, **params) -> str | None:
        return self.title.format(by=by, **params) if self.title else None


def run(export, analysis: Analysis, by: str | None = None, **params):
    """`analysis` on `export`, by its declaration: the parameters checked (known, at least their `min`, the declared
    conflicts, the analysis's own `before` check), each left out or None at its default, then bound to the $params
    of the query that `by` and the `selects` flags pick. The Export methods of declared analyses call this."""
    own = [p for p in analysis.params if p.name != "top"]
    unknown = set(params) - {p.name for p in own}
    if unknown:
        takes = ", ".join(p.name for p in own) or "none"
        raise NsysqlError(f"{analysis.name} has no parameter {sorted(unknown)[0]!r}; it takes: {takes}")
    values = {p.name: analysis.default(p) if params.get(p.name) is None else params[p.name] for p in own}
    for p in own:
        value = values[p.name]
        if p.min is not None and value is not None and value < p.min:
            what = p.what or f"`{p.name}=`"
            raise NsysqlError(f"{what} must be {p.min:g} or more, not {value:g}")
    analysis.check(**values)
    if by is not None and analysis.choices and by not in analysis.choices:
        analysis.query(by)  # one clear error naming the choices
    if analysis.before is not None:
        analysis.before(export, by, values)
    bound = {p.sql or p.name: p.bound(values[p.name]) for p in own if not p.selects}
    if analysis.by_param:
        bound[analysis.by_param] = by or analysis.default_by
    return export.run(analysis.query(by, **values).id, **bound)


def _nvtx_for_ranges(export, by: str | None, values: dict) -> None:
    """overhead by range (its default) reads NVTX ranges: without them, say which groupings work."""
    from nsysql.errors import MissingDataError
    if (by or "range") == "range" and export.has("kernel") and not export.has("nvtx_range"):
        raise MissingDataError(f"{export.path.name} has no NVTX_EVENTS, which overhead per NVTX range (the default) "
                               "needs; per launching thread (`by='thread'`) or per kernel (`by='kernel'`) works "
                               "without NVTX; capture with --trace=nvtx for ranges")


def _windows_not_too_many(export, by: str | None, values: dict) -> None:
    """A window count over a million is a typo, not a question."""
    window_ms = values["window_ms"]
    window_ns = round(window_ms * 1_000_000)  # what binds $window_ns: a window that rounds to 0 ns is none
    if window_ns <= 0:
        raise NsysqlError(f"the window must be longer than 0 ms, not {window_ms:g}")
    span = export.run("analysis.export_totals")["gpu_span_ns"][0] or 0
    if span // window_ns > 1_000_000:
        raise NsysqlError(f"{window_ms:g} ms windows cut the {span / 1e6:.0f} ms of GPU activity into more than "
                          "a million; choose a longer `window_ms=`")


NO_SHAPES_HINT = "capture under torch.autograd.profiler.emit_nvtx(record_shapes=True) (nsysql capture does)"
NO_STEPS_HINT = ("name each iteration's NVTX range like step_N or profiled_step (or choose a level with --step-range), "
                 "or repeat the same GPU work every iteration")
_SHAPED = "kernels inside PyTorch op markers with recorded shapes"
_ALL_ROWS = "--top N, or -f csv / -f parquet -o FILE for all"
_LAUNCH_STATS = ("mean_api_ns", "mean_queue_ns", "p95_api_ns", "p95_queue_ns", "kernel_ns", "shorter_than_launch")
_COPY = ("avg_bytes", "src_kind", "dst_kind", "sync_api_ns", "gb_per_s", "total_bytes")

# In the order of `nsysql --help` (each `after` the command before it).
DECLARED: list[Analysis] = [
    Analysis(
        name="steps", after="layers",
        help="""Steps (iterations): wall time, GPU busy time, fprop/bprop/optimizer/communication split, kernels.

    Steps are the instances of the NVTX range level that is the program's step: step-named ranges at any depth (profiled_step, step_N, ProfilerStep#N, iteration N), else decode steps, else the outermost level that repeats and tiles the thread's work (`request/decode_step`); warm-up ranges are left out of the level's path and their steps out of the analysis. Without such a level, each repetition of the first repeating top-level range starts one; without NVTX steps, the iterations of the repeating GPU op sequence are steps (source kernel-pattern or graph-launch). --candidates lists the levels considered, with their scores and the one chosen; --step-range LEVEL chooses another. docs/steps.md has the rules.

    A step's GPU work includes ops launched by other threads of its process while it runs (PyTorch's autograd thread). Those ops may run past the step's end (kernels queued behind a slow one, NCCL kernels waiting for a late rank): overrun_ns is that part, and the only way gpu_busy_pct exceeds 100 %. period_ns is the step on the GPU's clock (from when the GPU had finished the work launched before it to the end of its own): when the CPU runs ahead of the GPU, that is the step's time everywhere else (`nsysql overview`, summarize).

    Table and markdown show times in ms (start: ms since the capture's first event, as `nsysql plot`); csv, json and parquet keep the exact nanoseconds (start_ns/end_ns on the export's clock).

    With several exports, those without steps are skipped (named on stderr).
    """,
        queries={"": "analysis.steps"},
        params=(Param("candidates", bool, False, "List the NVTX range levels considered as the step, with their "
                      "scores, the one chosen and why, instead of the steps.", selects="analysis.step_candidates"),),
        empty=Empty("no steps", f"{{export}} has no steps: {NO_STEPS_HINT}",
                    f"none of the exports has steps: {NO_STEPS_HINT}"),
        title="Steps", timestamps=True,
        optional={
            "": ("range_id", "source", "level", "period_ops", "gpu_end_ns", "pid", "tid", "end_ns", "gpu_ops",
                 "off_thread_ops", "other_ns", "kernels", "comm_ns", "recompute_ns", "start_ns", "period_ns"),
            "candidates": ("pid", "tid", "cv", "median_ns", "instances", "close", "depth"),
        },
        unit_groups=(("wall_ns", "period_ns", "gpu_busy_ns", "fprop_ns", "bprop_ns", "optim_ns", "comm_ns", "other_ns",
                      "overrun_ns", "recompute_ns"),),
        text_min={"level": 36},  # a candidate level is read whole before its scores
    ),
    Analysis(
        name="requests", after="steps",
        help="""Inference requests: prefill, time to first token (TTFT), decode steps, time per output token, tokens/s.

    A request is an instance of the level that holds the decode steps (`request` for `request/decode_step`, docs/steps.md); its prefill is its child range named prefill. Without NVTX, a request is one iteration of the repeating per-request op sequence, its prefill the ops before its run of decode steps. ttft runs from the request's start to the latest GPU end of the work launched in the prefill; tpot is a decode step's time on its clock (its period on the GPU's clock when the CPU runs ahead); tokens_per_s = decode steps / their total time (one token per sequence of the batch a step). Warm-up requests are listed with warmup true.

    Table and markdown show times in ms or µs; csv, json and parquet keep the exact nanoseconds.
    """,
        queries={"": "analysis.requests"},
        empty=Empty("no requests", "{export} has no requests: its steps are not decode steps inside requests "
                    "(docs/steps.md; --step-range chooses the step level)",
                    "none of the exports has requests (docs/steps.md)"),
        title="Requests", timestamps=True,
        optional=("pid", "start_ns", "decode_ns", "tpot_p99_ns", "prefill_ns"),
        unit_groups=(("wall_ns", "prefill_ns", "ttft_ns", "decode_ns"), ("tpot_mean_ns", "tpot_p50_ns", "tpot_p99_ns")),
    ),
    Analysis(
        name="efficiency", after="plot",
        help="""Achieved TFLOP/s of matmuls/convolutions and GB/s of elementwise ops, and the tensor-core share of matmul time.

    FLOPs and bytes come from the input shapes PyTorch's op markers record (emit_nvtx(record_shapes=True)); only kernels launched inside op markers count. The header of queries/analysis/efficiency.sql has every formula and the tensor-core name pattern.

    Table output shows the first 40 rows (--top N shows N of each export); table and markdown show times in ms or µs, csv, json and parquet the exact nanoseconds.

    With several exports, those without such kernels are skipped (named on stderr).
    """,
        queries={"op": "analysis.efficiency", "layer": "analysis.efficiency"}, by_param="by",
        by_help="op: per direction, op and input shapes; layer: per direction and layer.",
        params=(Param("top", Optional[int], None, "Only the N rows with the most kernel time (of each export).",
                      min=1, show_default=False),),
        empty=Empty(f"no {_SHAPED}", f"{{export}} has no {_SHAPED}; {NO_SHAPES_HINT}",
                    f"none of the exports has {_SHAPED}; {NO_SHAPES_HINT}"),
        title="Efficiency by {by}", rows_capped=True, more_hint=_ALL_ROWS,
        optional=("flop_ns", "byte_ns", "instances", "gflop", "bytes", "kernels", "params"),
        unit_groups=(("kernel_ns", "flop_ns", "byte_ns"),), text_min={"name": 16, "params": 16},
    ),
    Analysis(
        name="overhead", after="parquet",
        help="""Kernel launch overhead in the analysed steps (--all: the whole capture): API time, queue time (kernel
    start - call end) and kernel time per launch, summed up with mean/median/p95, GPU busy time (union) and a
    launch_bound flag.

    --by range: per user NVTX range path (PyTorch op-marker ranges roll up into their user range), CPU time =
    the range's duration; launch_bound = the GPU sat idle more than half the range while the thread kept
    launching. --by kernel: per kernel name. --by thread: per launching thread.

    Table and markdown show times in ms or µs (the unit under each column); csv, json and parquet keep nanoseconds.
    """,
        queries={"range": "analysis.overhead_by_range", "kernel": "analysis.overhead_by_kernel",
                 "thread": "analysis.overhead_by_thread"},
        by_help="Group launches per user NVTX range path, kernel name or launching thread.",
        params=(Param("every", bool, False, "Every launch of the capture (start-up and warm-up too), not only the "
                      "analysed steps'.", flag="--all"),),
        title="Launch overhead by {by}", before=_nvtx_for_ranges,
        optional={
            "range": ("pid", "depth", "instances", *_LAUNCH_STATS, "launch_span_ns", "tid", "median_queue_ns",
                      "gpu_idle_ns", "median_api_ns"),
            "kernel": (*_LAUNCH_STATS, "median_queue_ns", "cpu_ns"),
            "thread": ("pid", *_LAUNCH_STATS, "launch_span_ns", "median_queue_ns", "gpu_idle_ns"),
        },
        unit_groups=(("cpu_ns", "gpu_busy_ns", "gpu_idle_ns", "launch_span_ns", "kernel_ns"),
                     ("mean_api_ns", "median_api_ns", "p95_api_ns", "mean_queue_ns", "median_queue_ns",
                      "p95_queue_ns")),
        text_min={"range_path": 30, "kernel_name": 30},
    ),
    Analysis(
        name="memcpy", after="overhead",
        help="""Memory copies and memsets: count, bytes, GPU time, achieved GB/s, pageable vs pinned host memory,
    and synchronous copies (the launching call blocked: cudaMemcpy rather than cudaMemcpyAsync, or the
    call returned only once the copy had ended).

    Table and markdown show sizes in KB/MB/GB and times in ms or µs; csv, json and parquet keep bytes and ns.
    """,
        queries={"kind": "analysis.memcpy", "range": "analysis.memcpy_by_range",
                 "stream": "analysis.memcpy_by_stream"},
        by_help="Group per copy/memory kind, per user NVTX range path and kind, or per device, stream and kind.",
        title="Memory copies and sets by {by}", optional=_COPY, unit_groups=(("total_ns", "sync_api_ns"),),
        text_min={"range_path": 30},
    ),
    Analysis(
        name="gaps", after="memcpy",
        help="""GPU idle gaps (no kernel, copy or set running on the device) in the analysed steps (--all: the whole
    capture), longest first, with what the CPU was doing: the step and what its thread was inside at the gap's
    middle (step_thread_range), the thread that launched the op ending the gap, how late that launch came
    (launch_offset_ns), that thread's innermost user NVTX range when the gap began, and its longest CUDA API and
    OS runtime calls in the gap.

    Table output shows the first 40 rows (--top N shows N gaps); table and markdown show gap_start as ms since the
    capture's first event (as `nsysql plot`) and lengths in ms or µs. csv, json and parquet keep the exact nanoseconds
    (gap_start_ns/gap_end_ns on the export's clock).
    """,
        queries={"": "analysis.gaps"},
        params=(Param("min_gap_us", float, FROM_HEADER, "Shortest idle gap shown, in µs.", min=0, sql="min_gap_ns",
                      scale=1000, what="the minimum gap (µs)"),
                Param("threads", bool, False, "One row per gap and CPU thread, instead of the thread that launched "
                      "the work ending the gap.", selects="analysis.gaps_threads"),
                Param("top", Optional[int], None, "Only the N longest gaps.", min=1, show_default=False),
                Param("calls", bool, True, "Find each thread's longest CUDA API and OS runtime call in the gap "
                      "(reads every call).", flag="--calls/--no-calls", sql="with_calls"),
                Param("every", bool, False, "Every gap of the capture (start-up and warm-up too), not only those "
                      "in the analysed steps.", flag="--all")),
        top_by=("device_id", "gap_start_ns"),
        conflicts=(({"threads": True, "calls": False}, "--threads shows each thread's calls; drop --no-calls"),),
        title="GPU idle gaps of {min_gap_us:g} µs or more", timestamps=True, rows_capped=True, more_hint=_ALL_ROWS,
        optional={
            "": ("gap_end_ns", "pid", "cuda_calls_started", "cuda_call_ns", "os_call_ns", "before_op", "launch_api",
                 "thread_name", "device_id", "after_op", "os_call", "tid", "cuda_call", "range_path"),
            "threads": ("gap_end_ns", "pid", "cuda_calls_started", "cuda_call_ns", "os_call_ns", "device_id",
                        "launched_next", "os_call", "thread_name"),
        },
        unit_groups=(("gap_ns", "launch_offset_ns", "cuda_call_ns", "os_call_ns"),),
    ),
    Analysis(
        name="utilization", after="gaps",
        help="""GPU utilization over time: per device and fixed window (from the first GPU op to the last), the busy
    time (union of kernels, copies and sets), its share of the window and the ops started in it.

    Table output shows the first 40 windows; table and markdown show window starts as ms since the capture's first event
    (as `nsysql plot`), csv, json and parquet the exact nanoseconds on the export's clock.""",
        queries={"": "analysis.utilization"},
        params=(Param("window_ms", float, FROM_HEADER, "Window length in ms (> 0).", sql="window_ns",
                      scale=1_000_000),),
        before=_windows_not_too_many,
        title="GPU utilization per {window_ms:g} ms window", timestamps=True, rows_capped=True,
        more_hint="a longer --window-ms, or -f csv / -f parquet -o FILE for all",
        optional=("window_end_ns", "window_index"),
    ),
]


def declare(analysis: Analysis) -> Analysis:
    """Add (or replace) a declaration: the extension point for one's own analyses (with `catalog.add_queries`).
    The command appears in apps built afterwards (`nsysql.cli.app.make_app()`)."""
    for q in analysis.queries.values():
        catalog.get(q)  # a declaration naming a query that does not exist fails here, not when run
    DECLARED[:] = [a for a in DECLARED if a.name != analysis.name] + [analysis]
    return analysis


_PY_TYPES: dict[str, Any] = {"BIGINT": int, "INTEGER": int, "DOUBLE": float, "VARCHAR": str, "BOOLEAN": bool}


def from_header(q: catalog.Query) -> Analysis:
    """The declaration an analysis file makes of itself with `-- command: NAME [(after COMMAND)]`: a table command
    named NAME, its help the file's purpose, one option per header parameter (its type, its default, its help)."""
    m = catalog.COMMAND_LINE.fullmatch(q.meta["command"].strip())
    assert m is not None  # the header parser checked it
    params = []
    for p in q.params:
        kind = _PY_TYPES.get(p.type, str)
        dashed = p.name.replace("_", "-")
        params.append(Param(p.name, kind if p.has_default else Optional[kind], FROM_HEADER if p.has_default else None,
                            p.help or p.name, flag=f"--{dashed}/--no-{dashed}" if kind is bool else None,
                            show_default=p.has_default))
    return Analysis(name=m["name"], help=q.purpose, queries={"": q.id}, params=tuple(params),
                    title=re.split(r"\. | \(", q.purpose)[0].rstrip("."), after=m["after"])


def declared() -> list[Analysis]:
    """Every declared analysis: those above (and `declare`d), then the files that declare themselves (`command:`)."""
    own = {a.name for a in DECLARED}
    found = [from_header(q) for q in catalog.group("analysis") if "command" in q.meta]
    return DECLARED + [a for a in found if a.name not in own]


def get(name: str) -> Analysis:
    every = declared()
    for a in every:
        if a.name == name:
            return a
    raise NsysqlError(f"no analysis named {name!r}; declared: {', '.join(a.name for a in every)}")
