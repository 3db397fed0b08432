"""The query API: an opened export's catalogued queries, reports, rules and ad-hoc SQL, returned as Polars frames.
It holds a Store (nsysql/store/store.py), which owns everything about the cache; this module only asks it for a
connection with the tables a query reads, and for the answers it keeps."""
from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path

import duckdb
import polars as pl

from nsysql.core import progress
from nsysql.errors import NsysqlError
from nsysql.sql import analyses, catalog
from nsysql.sql.engine import error_line, quote_ident, to_polars
from nsysql.store.store import Store, damaged_file

# an input analysis with at most this many rows is stored as an answer when another query computes it
INPUT_ANSWER_ROWS = 50_000


def report_defaults(q: catalog.Query) -> dict:
    """A report's $params at their header defaults (every report parameter has one)."""
    return dict(q.defaults())


class Queries:
    """One nsys export, opened read-only, as the query API: every method runs one catalogued query (a report, a
    rule, a declared analysis) or the user's SQL. Users get its subclass `nsysql.Export` (nsysql/api.py) from
    `nsysql.open(path)`, which adds the answers that combine several queries (nsysql/answers/)."""

    def __init__(self, path: str | os.PathLike, *, cache_dir: str | os.PathLike | None = None,
                 use_cache: bool = True, build_all: bool = False, busy_mark: bool = False):
        self.store = Store(path, cache_dir=cache_dir, use_cache=use_cache, build_all=build_all, busy_mark=busy_mark)
        # called before a query is computed (not when its answer is read): the background run that answers ahead
        # waits there while a command works on the same cache (nsysql/answers/ahead.py)
        self.before_compute: Callable[[], None] | None = None
        # input analyses given from outside (an export of a multi-export job reads the job's analysis.comm_waits,
        # nsysql/answers/job.py): read in place of its own, and no answer is stored or read while any is given
        self._injected: dict[str, Path] = {}
        self._inject_dir: tempfile.TemporaryDirectory | None = None
        # bumped by each inject: what answers kept on this object (not in the store) are keyed by
        self.inputs_version = 0

    # what users and the answers read of the store
    path = property(lambda self: self.store.path)
    source = property(lambda self: self.store.source, doc="The SQLite file read (an .xz export unpacked).")
    cache_path = property(lambda self: self.store.cache_path)
    cache_hit = property(lambda self: self.store.cache_hit)

    @property
    def on_notice(self) -> Callable[[str], None]:
        return self.store.on_notice

    @on_notice.setter
    def on_notice(self, tell: Callable[[str], None]) -> None:
        self.store.on_notice = tell

    @property
    def con(self) -> duckdb.DuckDBPyConnection:
        """The cached DuckDB file, read-only, with nsysql's macros (queries/macros/: the shared interval routines
        some queries call) and every normalized table (those built on first use are built first)."""
        return self.store.full_connection()

    @con.setter
    def con(self, con: duckdb.DuckDBPyConnection) -> None:  # tests put a recording connection in its place
        self.store._con = con

    def inject(self, name: str, frame: pl.DataFrame) -> None:
        """Read `frame` wherever a query reads the input analysis `name` (analysis.<name>), instead of computing it
        from this export alone; stored answers are neither read nor written from then on."""
        if self._inject_dir is None:
            self._inject_dir = tempfile.TemporaryDirectory(prefix="nsysql-inject-")
        path = Path(self._inject_dir.name) / f"{name}.parquet"
        frame.write_parquet(path)
        self._injected[name] = path
        self.store.temp_tables.discard(name)
        self.inputs_version += 1

    def choose_step_level(self, level: str) -> None:
        """Make the instances of the NVTX range level `level` the steps, whatever the rules would choose: a level of
        analysis.step_candidates (`request/decode_step`, digits as N or as written) or its last components
        (`decode_step`). One line naming the levels there are when none matches (the rules' choice then stands)."""
        levels = self.run("analysis.step_candidates").sort("steady", descending=True)["level"].unique(maintain_order=True)
        self.inject("_step_override", pl.DataFrame({"level": [level]}, schema={"level": pl.String}))
        # which levels the name matches is step_candidates' own rule: it says whether the override took
        if level.strip() and (self.run("analysis.step_candidates")["rule"] == "override").any():
            return
        self.inject("_step_override", pl.DataFrame({"level": []}, schema={"level": pl.String}))
        known = ", ".join(levels.head(8).to_list()) or "none (no NVTX ranges of the user's)"
        more = f" and {len(levels) - 8} more" if len(levels) > 8 else ""
        raise NsysqlError(f"{self.path.name} has no NVTX range level {level!r}; its levels, most instances first: "
                          f"{known}{more} (steps(candidates=True) lists them)")

    @property
    def _answers_kept(self) -> bool:
        """Whether answers are stored and read: with a cache, and nothing injected."""
        return self.store.keeps_answers and not self._injected

    # -- plumbing ---------------------------------------------------------------------------
    def release(self) -> None:
        """Close the DuckDB connection, opened again on next use (its TEMP inputs made again): a job of thousands
        of ranks keeps one connection open at a time, not one per rank (~12 MB each; nsysql/answers/job.py)."""
        self.store.close_connection()

    def close(self) -> None:
        self.store.close()
        if self._inject_dir is not None:
            self._inject_dir.cleanup()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self) -> str:
        return f"<nsysql.Export {self.path}>"

    def has(self, table: str) -> bool:
        """Whether the export holds the raw data behind a normalized table."""
        return self.store.has(table)

    def require(self, tables, purpose: str) -> None:
        """Raise MissingDataError unless every requirement holds; `a|b` needs at least one of a, b."""
        self.store.require(tables, purpose)

    def sql(self, sql: str, params: dict | None = None, *, prepare: Callable[[], object] | None = None) -> pl.DataFrame:
        """Run SQL against the normalized tables and return a Polars frame. `prepare()` runs first on the same
        connection (the TEMP views `nsysql sql` adds), again when a damaged cache was built again."""
        store = self.store

        def answer() -> pl.DataFrame:
            if prepare is not None:
                prepare()
            return store.built_for(_words(sql), lambda: to_polars(store.connection().sql(sql, params=params or {})))
        try:
            return store.rebuilt_once(answer)
        except duckdb.Error as exc:
            raise NsysqlError(error_line(exc)) from None

    def run(self, query_id: str, **params) -> pl.DataFrame:
        q = catalog.get(query_id)
        if q.id.startswith("analysis.") and q.name in self._injected:  # the job's rows (nsysql/answers/job.py)
            return pl.read_parquet(self._injected[q.name])
        # first, even with an answer stored: an input analysis is stored as an answer without this check
        # (_keep_input_answer), and has() reads the raw tables kept beside the cache, not DuckDB
        self.require(q.requires, q.id)
        bound = q.bound_params({**q.stated_defaults(), **params})  # a parameter left out takes its header default
        stored = self.store.load_answer(q, bound) if self._answers_kept else None
        if stored is not None:  # computed by an earlier command on this export (nsysql/store/stored.py)
            return stored
        if self.before_compute is not None:
            self.before_compute()
        with progress.shown("building tables on first use"):  # its own line, unless a command's line is up
            try:
                self.store.rebuilt_once(lambda: self.store.ensure_built(tables_read(q)))
            except duckdb.Error as exc:
                raise NsysqlError(error_line(exc)) from None
        with progress.shown("computing"), progress.stage(q.id):
            try:
                df = self.store.rebuilt_once(lambda: self._compute(q, bound))
            except duckdb.Error as exc:
                raise NsysqlError(error_line(exc)) from None
        if q.columns and list(df.columns) != [c.name for c in q.columns]:
            raise NsysqlError(f"{q.path}: columns {df.columns} differ from its header")  # a bug, not user error
        if self._answers_kept:
            self.store.store_answer(q, bound, df)
        return df

    def _compute(self, q: catalog.Query, bound: dict) -> pl.DataFrame:
        """The query's rows, its input analyses made first; DuckDB's errors come out as they are."""
        def compute() -> pl.DataFrame:
            self._materialize_inputs(q)
            return to_polars(self.store.connection().sql(q.sql, params=bound))
        return self.store.built_for(tables_read(q), compute)

    def make_inputs(self, q: catalog.Query) -> None:
        """`q`'s input analyses as TEMP tables named after them (a stored answer read where one is kept), as run()
        makes them, for SQL that reads `q`'s view (nsysql sql)."""
        store = self.store
        try:
            store.rebuilt_once(lambda: store.built_for(tables_read(q), lambda: self._materialize_inputs(q)))
        except duckdb.Error as exc:
            raise NsysqlError(error_line(exc)) from None

    def build_tables_for(self, q: catalog.Query) -> None:
        """Build the normalized tables `q` reads that the cache file lacks (tables built on first use), for a
        reader of the file itself (nsysql.answers.diff attaches two caches to one connection)."""
        self.store.rebuilt_once(lambda: self.store.ensure_built(tables_read(q)))

    def _materialize_inputs(self, q: catalog.Query) -> None:
        """Analyses that read another analysis (`requires: analysis.steps`) find it as a TEMP table named after
        it, computed once per connection; in `nsysql db` files the same name is that analysis's view."""
        con = self.store.connection()
        made = self.store.temp_tables
        for requirement in q.requires:
            if not requirement.startswith("analysis."):
                continue
            name = requirement.split(".", 1)[1]
            if name in made:
                continue
            inner = catalog.get(requirement)
            if name in self._injected:  # the job's rows (nsysql/answers/job.py)
                con.execute(f"CREATE OR REPLACE TEMP TABLE {quote_ident(name)} AS "
                            "SELECT * FROM read_parquet($file)", {"file": str(self._injected[name])})
                made.add(name)
                continue
            # no require() here: without its raw data an input analysis is empty (the stub tables are), and
            # the reader decides what that means, e.g. steady_steps falls back to the span of GPU activity
            stored = self.store.answer_file(inner, {}) if self._answers_kept else None
            if stored is None:
                self._materialize_inputs(inner)
            try:
                if stored is None:
                    con.execute(f"CREATE TEMP TABLE {quote_ident(name)} AS {inner.sql.rstrip().rstrip(';')}")
                    stored = self._keep_input_answer(inner, name)
                if stored is not None:  # a small input is read as its own command reads it (the same types)
                    con.execute(f"CREATE OR REPLACE TEMP TABLE {quote_ident(name)} AS "
                                "SELECT * FROM read_parquet($file)", {"file": str(stored)})
            except duckdb.Error as exc:
                if damaged_file(exc):
                    raise  # the caller builds the cache again (Store.rebuilt_once)
                if isinstance(exc, duckdb.CatalogException) and "does not exist" in str(exc):
                    raise  # a table built on first use that no word named: Store.built_for builds it and retries
                raise NsysqlError(f"{inner.id}: {str(exc).splitlines()[0]}") from None
            made.add(name)

    def _keep_input_answer(self, inner: catalog.Query, name: str) -> Path | None:
        """Store a small input analysis (`analysis.steps` under summarize) as its own answer, so the command
        that shows it (`nsysql steps`) reads it back; big intermediate tables (a row per GPU op) are not kept."""
        if not self._answers_kept or inner.param_names:
            return None
        con = self.store.connection()
        rows = con.execute(f"SELECT COUNT(*) FROM {quote_ident(name)}").fetchone()
        if rows is None or rows[0] > INPUT_ANSWER_ROWS:
            return None
        self.store.store_answer(inner, {}, to_polars(con.table(quote_ident(name))))
        return self.store.answer_file(inner, {})

    def time_origin(self) -> int | None:
        """The capture's first event on the export's clock (ns): where `ns timestamp` columns count from in tables
        and markdown, and the zero of `nsysql plot timeline`. A fact of the export, computed once and kept beside
        its cache (analysis._plot_window). None without events."""
        return self.store.fact("time_origin", lambda: self.run(
            "analysis._plot_window", start_ms=None, end_ms=None)["origin_ns"][0])

    def info(self) -> dict[str, str]:
        rows = self.store.rebuilt_once(lambda: self.store.connection().execute(
            "SELECT key, value FROM export_info UNION ALL SELECT key, value FROM nsysql_meta").fetchall())
        return dict(rows)

    # -- reports and building blocks -----------------------------------------------------------
    def report(self, name: str, **params) -> pl.DataFrame:
        """An `nsys stats`-identical report, or a recipe's (nccl_gpu_overlap_trace; see `nsysql.reports()`).
        NVIDIA's report arguments go after the name as in `nsys stats -r` (`report("cuda_gpu_kern_sum:base:nvtx-name")`)
        or as the $params they set (`report("cuda_gpu_kern_sum", name_form="base", nvtx_name=True)`); unset $params
        take their header defaults."""
        q = catalog.report_query(name)
        values = report_defaults(q)
        values.update(catalog.report_params(q, catalog.split_report_spec(name)[1]))
        catalog.check_report_params(q, params, values)
        values.update(params)
        return self.run(q.id, **values)

    def analyze(self, rule: str, **options) -> pl.DataFrame:
        """An `nsys analyze`-identical expert rule (see `nsysql rules`); `options` are the rule's own, by
        NVIDIA's names (gap=500 for gpu_gaps, rows=50, ...), NVIDIA's defaults where left out."""
        from nsysql.sql import rules
        return self.run(rules.query(rule).id, **rules.params(rule, options))

    def kernels(self) -> pl.DataFrame:
        """Every kernel with its launching API call (correlationId and process), in GPU start order."""
        return self.run("analysis.kernels")

    def kernel_table(self) -> pl.DataFrame:
        """Every GPU op charged to direction (fprop/bprop/optim/comm/other), layer, op, input shapes, seq."""
        return self.run("analysis.kernel_table")

    def layers(self, depth: int = 0, merge_repeats: bool = False, step: int = 0, pid: int | None = None,
               analysed: bool = True, fold: bool = True) -> pl.DataFrame:
        """Kernel time per layer path split fprop/bprop/recompute/optim/comm; `depth` keeps N path components;
        `step` (of process `pid`, as pyprof_table chooses it): only that step's kernels (0 = every kernel);
        `analysed`: only the kernels of the analysed steps (the steady state); `fold`: micro-batches and other
        numbered repeats of the step's work as one path (`micro_batch_*`)."""
        if depth < 0:
            raise NsysqlError(f"depth must be 0 (whole path) or more, not {depth}")
        if pid is not None and not step:
            raise NsysqlError("`pid=` picks the process of `step=`; give both")
        process = self._step_process(step, pid)
        return self.run("analysis.layers", depth=depth, merge_repeats=merge_repeats, step=step, process=process,
                        analysed=analysed, fold=fold)

    def attribution_coverage(self) -> dict:
        """Kernel time with a known layer, per direction and per way the layer was found."""
        return self.run("analysis.attribution_coverage").row(0, named=True)

    def pyprof_table(self, step: int | None = None, pid: int | None = None) -> pl.DataFrame:
        """The seed tables' layout (Idx, Direction, Layer, Op, Params, Kernel) for step range `step` of process
        `pid`, numbered within each process (1 = its first in time); `pid` is needed only when several processes
        have that step. Step 0 gives every kernel; no step: the first one, or every kernel of an export without
        step ranges (a step asked for by number must exist)."""
        if step is None:
            step = 1 if self._step_counts() else 0
        process = self._step_process(step, pid)
        return self.run("analysis.kernel_table_pyprof", step=step, process=process)

    def _step_counts(self) -> dict[int, int]:
        """pid -> how many top-level step ranges it has."""
        return dict(self.store.rebuilt_once(lambda: self.con.execute(
            "SELECT pid, count(*) FROM user_range WHERE is_step GROUP BY pid").fetchall()))

    def _step_process(self, step: int, pid: int | None) -> int | None:
        """The process whose step `step` (numbered within each process, 1 = its first) a command reads: `pid`, or
        the only process with that step; None for step 0 (every kernel). One clear error when there is none,
        or when several processes have it and `pid` does not say which."""
        if step < 0:
            raise NsysqlError(f"`step={step}`: steps count from 1 (0 = all kernels)")
        if step == 0:
            return None
        per_pid = self._step_counts()
        if not per_pid:
            raise NsysqlError(f"`step={step}`: {self.path.name} has no step ranges (see `nsysql steps`); "
                              "`step=0` gives every kernel")
        if pid is not None and pid not in per_pid:
            have = ", ".join(str(p) for p in sorted(per_pid))
            raise NsysqlError(f"{self.path.name}: process {pid} has no step ranges; processes with steps: {have}")
        candidates = [p for p, n in sorted(per_pid.items()) if n >= step and pid in (None, p)]
        if not candidates:
            last = per_pid[pid] if pid is not None else max(per_pid.values())
            where = f" in process {pid}" if pid is not None else ""
            raise NsysqlError(f"{self.path.name} has {last} step range(s){where}; choose `step=1..{last}` "
                              "(0 = all kernels)")
        if len(candidates) > 1:
            raise NsysqlError(f"{self.path.name}: {len(candidates)} processes have step {step} "
                              f"({', '.join(map(str, candidates))}); choose one with `pid=`")
        return candidates[0]

    def ranges(self) -> pl.DataFrame:
        """NVTX ranges with depth, parent, full path and thread."""
        return self.run("analysis.ranges")

    def gpu_time_by_range(self) -> pl.DataFrame:
        """Per range name: NVIDIA's projected time, inclusive and exclusive GPU busy time, kernels."""
        return self.run("analysis.gpu_time_by_range")

    def launch_overhead(self) -> pl.DataFrame:
        """Per kernel launch: API, queue and kernel time."""
        return self.run("analysis.launch_overhead")

    # the declared analyses (nsysql/sql/analyses.py): each method runs its declaration, which checks the arguments
    # and holds the defaults (None: the declared default)
    def memcpy(self, by: str = "kind") -> pl.DataFrame:
        """Copies and memsets per copy/memory kind (`by="kind"`), per user NVTX range and kind (`"range"`) or
        per device, stream and kind (`"stream"`): count, bytes, time, GB/s, pageable/pinned, synchronous."""
        return self.analysis("memcpy", by)

    def overhead(self, by: str = "range", every: bool = False) -> pl.DataFrame:
        """Kernel launch overhead per user NVTX range (`by="range"`), kernel name (`"kernel"`) or launching
        thread (`"thread"`): launches, CPU and GPU busy time, API/queue time mean/median/p95, launch_bound; in the
        analysed steps, or over the whole capture with `every=True`."""
        return self.analysis("overhead", by, every=every)

    def gaps(self, min_gap_us: float | None = None, threads: bool = False, calls: bool = True,
             every: bool = False) -> pl.DataFrame:
        """GPU idle gaps of at least `min_gap_us` (None: 100 µs, the header's default), longest first, with the
        launching thread's CPU context and what the step's thread was inside; `threads=True` gives one row per gap
        and thread instead; `calls=False` skips the CUDA/OS call columns (reading every call is the costly part on
        a big export); `every=False`: only the gaps in the analysed steps (`nsysql gaps` without `--all`)."""
        return self.analysis("gaps", min_gap_us=min_gap_us, threads=threads, calls=calls, every=every)

    def utilization(self, window_ms: float | None = None) -> pl.DataFrame:
        """GPU busy share per device in fixed windows of `window_ms` (None: 10 ms) from the first GPU op to the last."""
        return self.analysis("utilization", window_ms=window_ms)

    def comm(self) -> pl.DataFrame:
        """Communication against compute per rank (rank, pid, device_id) and step: compute_ns, comm_ns, overlap_ns,
        exposed_comm_ns (each a union of intervals; overlap + exposed = comm), memory_ns, communication split into
        wait_ns (spinning until the collective's last rank arrives) and transfer_ns, their exposed parts, late_ns
        and per step the `straggler`: the rank the others wait for (analysis.comm)."""
        return self.run("analysis.comm")

    def steps(self, candidates: bool = False) -> pl.DataFrame:
        """Training/inference steps (the program's step level of NVTX ranges, else a repeating top-level pattern,
        else iterations of the GPU op sequence): wall, period, GPU busy, split; `candidates=True`: the NVTX range
        levels considered as the step, with their scores and the one chosen (docs/steps.md)."""
        return self.analysis("steps", candidates=candidates)

    def requests(self) -> pl.DataFrame:
        """Per inference request: prefill, TTFT, decode steps, time per output token (mean, p50, p99), tokens/s and
        the decode steps' GPU idle share (analysis.requests); empty when the steps are no decode steps in requests."""
        return self.analysis("requests")

    def structure(self) -> pl.DataFrame:
        """The program's structure as read, one row per process: step source, level and rule, warm-up left out,
        the clock (range, or period when the CPU runs ahead), program kind (analysis.structure)."""
        return self.run("analysis.structure")

    def efficiency(self, by: str = "op") -> pl.DataFrame:
        """Achieved TFLOP/s (matmul, conv) and GB/s (elementwise) per op and input shapes (`by="op"`) or per
        layer (`"layer"`), from the shapes PyTorch's op markers recorded, with the tensor-core share of matmul time."""
        return self.analysis("efficiency", by)

    def analysis(self, name: str, by: str | None = None, **params) -> pl.DataFrame:
        """A declared analysis by name (nsysql/sql/analyses.py), also one declared outside nsysql, run by its
        declaration with `params`; `by` picks its grouping (its first by default)."""
        return analyses.run(self, analyses.get(name), by, **params)


def tables_read(q: catalog.Query) -> set[str]:
    """The words of `q`'s SQL and of the analyses and macros it requires at any depth: a superset of the relations
    it reads (a header's `requires` names what the query needs the export to hold, not every table it joins)."""
    words: set[str] = set()
    seen: set[str] = set()
    pending = [q]
    while pending:
        query = pending.pop()
        if query.id in seen:
            continue
        seen.add(query.id)
        words.update(_words(catalog.strip_comments(query.sql)))
        pending += [catalog.get(r) for r in query.requires
                    if r.startswith(("analysis.", "findings.", "macros.")) and r in catalog.all_queries()]
    return words


def _words(sql: str) -> set[str]:
    return set(re.findall(r"[A-Za-z_]\w*", sql))


