"""Declared analyses: the one place that says, as data, which query files an analysis runs, its `--by` choices,
its parameters and how its table is shown. Each declaration becomes a table command (nsysql/commands/tables.py,
with the shared option groups) and is what the `Export` method of the same name runs (`analyses.run`).

Adding an analysis takes one SQL file (queries/analysis/NAME.sql, with its header) and one declaration:

    declare(Analysis(
        name="busy_streams",                       # the command `nsysql busy_streams`; Export.busy_streams()
        help="GPU busy time per stream.",          # the command's help; its first sentence lists it in --help
        queries={"": "analysis.busy_streams"},     # one query; several: {"stream": ..., "device": ...} = --by
    ))

Queries from outside queries/ join the catalog with `catalog.add_queries(DIR)`. A declaration names no Python
function: the command gathers the rows of every export given and renders them with the query's header (columns,
types, units, decimals), so a renderer never looks a column up itself.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from . import catalog
from .errors import NsysqlError


@dataclass(frozen=True)
class Param:
    """A parameter of an analysis: a keyword argument of its Export method and a command-line option
    (`--min-gap-us` for `min_gap_us`, or `flag`). `sql` names the $param it binds when the analysis has no
    Export method of its own (the value passes unchanged)."""
    name: str
    type: type
    default: Any
    help: str
    min: float | None = None
    flag: str | None = None
    show_default: bool = True
    sql: str | None = None

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
    top: the help of a `--top N` option keeping each export's first N rows (the file's ORDER BY decides).
    empty: exports with no rows are skipped among several, and an error when none has any.
    title: the table's title, formatted with `by` and the params (`"Launch overhead by {by}"`).
    optional: columns a narrow table hides first (per `--by` choice when a dict); `unit_groups`: duration columns
      shown in one shared unit; `text_min`: widths text columns keep before optional columns are hidden.
    rows_capped: table output shows the first 40 rows (unless `--top` is given); `more_hint` says how to see all.
    timestamps: the columns include `ns timestamp` instants, shown as ms since the capture start (tables).
    after: the command it follows in `nsysql --help` (new analyses: after the last command).
    """
    name: str
    help: str
    queries: Mapping[str, str]
    by_param: str | None = None
    by_help: str = ""
    params: tuple[Param, ...] = ()
    top: str | None = None
    empty: Empty | None = None
    title: str = ""
    optional: tuple | Mapping[str, tuple] = ()
    unit_groups: tuple[tuple[str, ...], ...] = ()
    text_min: Mapping[str, int] = field(default_factory=dict)
    rows_capped: bool = False
    more_hint: str | None = None
    timestamps: bool = False
    after: str | None = None

    @property
    def choices(self) -> list[str]:
        """The `--by` choices, the default first; empty without `--by`."""
        return [c for c in self.queries if c]

    @property
    def default_by(self) -> str | None:
        return self.choices[0] if self.choices else None

    def query(self, by: str | None = None) -> catalog.Query:
        """The query run for `by` (the default choice when None); an unknown choice is one clear error."""
        if not self.choices:
            return catalog.get(self.queries[""])
        by = self.default_by if by is None else by
        if by is None or by not in self.queries:
            raise NsysqlError(f"{self.name} by {by!r}? choose one of: {', '.join(self.choices)}")
        return catalog.get(self.queries[by])

    def columns(self, by: str | None = None) -> tuple[catalog.Column, ...]:
        """The result's header: its columns with type, unit and decimals, from the query file."""
        return self.query(by).columns

    def hidden_first(self, by: str | None = None) -> tuple:
        if isinstance(self.optional, Mapping):
            return tuple(self.optional[by or self.default_by or ""])
        return tuple(self.optional)

    def caption(self, by: str | None = None, **params) -> str | None:
        return self.title.format(by=by, **params) if self.title else None


def run(export, analysis: Analysis, by: str | None = None, **params):
    """`analysis` on `export`: its Export method when it has one (which checks the arguments), else its query with
    the params (their declared defaults where left out) as the $params they bind."""
    method = getattr(type(export), analysis.name, None)
    if callable(method):
        return method(export, **({"by": by} if analysis.choices else {}), **params)
    unknown = set(params) - {p.name for p in analysis.params}
    if unknown:
        takes = ", ".join(p.name for p in analysis.params) or "none"
        raise NsysqlError(f"{analysis.name} has no parameter {sorted(unknown)[0]!r}; it takes: {takes}")
    bound = {p.sql or p.name: params.get(p.name, p.default) for p in analysis.params}
    if analysis.by_param:
        bound[analysis.by_param] = by or analysis.default_by
    return export.run(analysis.query(by).id, **bound)


NO_SHAPES_HINT = "capture under torch.autograd.profiler.emit_nvtx(record_shapes=True) (nsysql capture does)"
NO_STEPS_HINT = ("name each iteration's top-level NVTX range like step_N or profiled_step, or repeat the same "
                 "top-level ranges every iteration")
_SHAPED = "kernels inside PyTorch op markers with recorded shapes"
_ALL_ROWS = "--top N, or -f csv / -f parquet -o FILE for all"
_LAUNCH_STATS = ("mean_api_ns", "mean_queue_ns", "p95_api_ns", "p95_queue_ns", "kernel_ns", "shorter_than_launch")
_COPY = ("avg_bytes", "src_kind", "dst_kind", "sync_api_ns", "gb_per_s", "total_bytes")

# In the order of `nsysql --help` (each `after` the command before it).
DECLARED: list[Analysis] = [
    Analysis(
        name="steps", after="layers",
        help="""Steps (iterations): wall time, GPU busy time, fprop/bprop/optimizer split, kernels.

    Steps are the top-level NVTX ranges named like profiled_step, step_N, ProfilerStep#N or iteration N; without any, each repetition of the first repeating top-level range (forward_pass, backward_pass, ..., forward_pass) starts one.

    A step's GPU work includes ops launched by other threads of its process while it runs (PyTorch's autograd thread).

    Table and markdown show times in ms (start: ms since the capture start, as `nsysql plot`); csv, json and parquet keep the exact nanoseconds (start_ns/end_ns on the export's clock).

    With several exports, those without steps are skipped (named on stderr).
    """,
        queries={"": "analysis.steps"},
        empty=Empty("no steps", f"{{export}} has no steps: {NO_STEPS_HINT}",
                    f"none of the exports has steps: {NO_STEPS_HINT}"),
        title="Steps", timestamps=True,
        optional=("range_id", "source", "pid", "tid", "end_ns", "gpu_ops", "off_thread_ops", "other_ns", "kernels",
                  "start_ns"),
        unit_groups=(("wall_ns", "gpu_busy_ns", "fprop_ns", "bprop_ns", "optim_ns", "other_ns"),),
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
        top="Only the N rows with the most kernel time (of each export).",
        empty=Empty(f"no {_SHAPED}", f"{{export}} has no {_SHAPED}; {NO_SHAPES_HINT}",
                    f"none of the exports has {_SHAPED}; {NO_SHAPES_HINT}"),
        title="Efficiency by {by}", rows_capped=True, more_hint=_ALL_ROWS,
        optional=("flop_ns", "byte_ns", "instances", "gflop", "bytes", "kernels", "params"),
        unit_groups=(("kernel_ns", "flop_ns", "byte_ns"),), text_min={"name": 16, "params": 16},
    ),
    Analysis(
        name="overhead", after="parquet",
        help="""Kernel launch overhead: API time, queue time (kernel start - call end) and kernel time per launch,
    summed up with mean/median/p95, GPU busy time (union) and a launch_bound flag.

    --by range: per user NVTX range path (PyTorch op-marker ranges roll up into their user range), CPU time =
    the range's duration; launch_bound = the GPU sat idle more than half the range while the thread kept
    launching. --by kernel: per kernel name. --by thread: per launching thread.

    Table and markdown show times in ms or µs (the unit under each column); csv, json and parquet keep nanoseconds.
    """,
        queries={"range": "analysis.overhead_by_range", "kernel": "analysis.overhead_by_kernel",
                 "thread": "analysis.overhead_by_thread"},
        by_help="Group launches per user NVTX range path, kernel name or launching thread.",
        title="Launch overhead by {by}",
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
        name="utilization", after="gaps",
        help="""GPU utilization over time: per device and fixed window (from the first GPU op to the last), the busy
    time (union of kernels, copies and sets), its share of the window and the ops started in it.

    Table output shows the first 40 windows; table and markdown show window starts as ms since the capture start
    (as `nsysql plot`), csv, json and parquet the exact nanoseconds on the export's clock.""",
        queries={"": "analysis.utilization"},
        params=(Param("window_ms", float, 10.0, "Window length in ms (> 0)."),),
        title="GPU utilization per {window_ms:g} ms window", timestamps=True, rows_capped=True,
        more_hint="a longer --window-ms, or -f csv / -f parquet -o FILE for all",
        optional=("window_end_ns", "window_index"),
    ),
]


def declare(analysis: Analysis) -> Analysis:
    """Add (or replace) a declaration: the extension point for one's own analyses (with `catalog.add_queries`).
    The command appears in apps built afterwards (`nsysql.cli.make_app()`)."""
    for q in analysis.queries.values():
        catalog.get(q)  # a declaration naming a query that does not exist fails here, not when run
    DECLARED[:] = [a for a in DECLARED if a.name != analysis.name] + [analysis]
    return analysis


def get(name: str) -> Analysis:
    for a in DECLARED:
        if a.name == name:
            return a
    raise NsysqlError(f"no analysis named {name!r}; declared: {', '.join(a.name for a in DECLARED)}")
