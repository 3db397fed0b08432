"""An opened export: normalized tables in a cached DuckDB file, queries returning Polars."""
from __future__ import annotations

import functools
import os
import re
import shutil
import tempfile
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import TypeVar

import duckdb
import polars as pl

from . import analyses, answers, catalog, formats_in, hygiene, importer, inputs, macros, nsys_rep, progress, views
from .cache import cache_file, cache_key, default_cache_dir
from .engine import connect, error_line, quote_ident
from .errors import MissingDataError, NsysqlError

# normalized table -> (raw nsys table it comes from, nsys flag that produces it); a table read from several raw
# tables names them with a wildcard (MPI_*_EVENTS): any one of them present is data
SOURCES = {
    "kernel": ("CUPTI_ACTIVITY_KIND_KERNEL", "--trace=cuda"),
    "runtime": ("CUPTI_ACTIVITY_KIND_RUNTIME", "--trace=cuda"),
    "memcpy": ("CUPTI_ACTIVITY_KIND_MEMCPY", "--trace=cuda (the program made no memory copies?)"),
    "memset": ("CUPTI_ACTIVITY_KIND_MEMSET", "--trace=cuda (the program made no memsets?)"),
    "graph_trace": ("CUPTI_ACTIVITY_KIND_GRAPH_TRACE",
                    "--trace=cuda (the program launched no CUDA graph, or nsys traced them with --cuda-graph-trace=node)"),
    "sync": ("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "--trace=cuda"),
    "nvtx_range": ("NVTX_EVENTS", "--trace=nvtx"),
    "osrt": ("OSRT_API", "--trace=osrt"),
    "gpu": ("TARGET_INFO_GPU", "--trace=cuda"),
    "um_migration": ("CUPTI_ACTIVITY_KIND_MEMCPY", "--trace=cuda (the program made no memory copies?)"),
    "um_cpu_page_fault": ("CUDA_UM_CPU_PAGE_FAULT_EVENTS", "--cuda-um-cpu-page-faults=true"),
    "um_gpu_page_fault": ("CUDA_UM_GPU_PAGE_FAULT_EVENTS", "--cuda-um-gpu-page-faults=true"),
    "syscall": ("SYSCALL", "--syscall=process-tree (experimental in Nsight Systems 2025.3)"),
    "mpi_event": ("MPI_*_EVENTS", "--trace=mpi (and --mpi-impl=openmpi or mpich)"),
    "openmp_event": ("OPENMP_EVENT_KIND_*", "--trace=openmp (of a program whose OpenMP runtime has OMPT, e.g. LLVM's "
                     "libomp; GCC's libgomp has none)"),
    "openacc_event": ("CUPTI_ACTIVITY_KIND_OPENACC_*", "--trace=openacc"),
}


# an input analysis with at most this many rows is stored as an answer when another query computes it
INPUT_ANSWER_ROWS = 50_000

# DuckDB's words for a database file it cannot trust (a truncated copy, a disk error, a file overwritten): said of
# the cache, the only DuckDB file a query opens, it means the cache is to be built again
DAMAGED_FILE = ("Corrupt database file", "is not a valid DuckDB database file", "Could not read enough bytes")


T = TypeVar("T")


def _warn(line: str) -> None:
    import warnings
    warnings.warn(line, stacklevel=3)


def damaged_file(exc: BaseException) -> bool:
    """Whether `exc` is DuckDB finding its database file damaged."""
    return isinstance(exc, duckdb.IOException) and any(words in str(exc) for words in DAMAGED_FILE)


def report_defaults(q: catalog.Query) -> dict:
    """A report's $params at their header defaults (every report parameter has one)."""
    from .views import param_defaults
    return dict(param_defaults(q))


class Export:
    """One nsys SQLite export, opened read-only: the handle every feature module works on. Users get its
    subclass `nsysql.Export` (nsysql/api.py) from `nsysql.open(path)`, which adds the features as methods."""

    def __init__(self, path: str | os.PathLike, *, cache_dir: str | os.PathLike | None = None,
                 use_cache: bool = True, build_all: bool = False):
        """`build_all`: a first open builds every normalized table at once, those otherwise built on first use
        too (summarize reads them all: one build on every core beats two)."""
        self.path = Path(path)
        self._tmpdir = None
        folder = formats_in.is_folder(self.path)
        if folder:  # a Parquet or Arrow folder (nsysql/formats_in.py), checked before any cache directory is made
            formats_in.folder(self.path)
        else:
            inputs.regular_file(self.path)  # before any cache directory is made: a FIFO or a typo fails at once
        if use_cache:
            directory = Path(cache_dir).expanduser() if cache_dir else default_cache_dir()
            try:
                directory.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise NsysqlError(f"cannot create cache directory {directory} ({exc.strerror}); "
                                  "choose another with `cache_dir=` or NSYSQL_CACHE_DIR") from None
            hygiene.sweep(directory)  # leftovers of killed runs (once per process)
        else:
            self._tmpdir = tempfile.TemporaryDirectory(prefix=f"nsysql-nocache-{hygiene.owner_tag()}-")
            directory = Path(self._tmpdir.name)
        # What is actually read: the export itself, an .xz export unpacked into the cache, or a .nsys-rep exported
        # into the cache by nsys (nsysql/nsys_rep.py)
        self.source = (unpack_xz(self.path, directory) if self.path.name.endswith(".xz") else
                       nsys_rep.exported(self.path, directory) if nsys_rep.is_report(self.path) else self.path)
        if not folder:
            importer.check_sqlite_file(self.source)
        self.cache_path = (cache_file(directory, self.source, importer.views_version()) if use_cache
                           else directory / "export.duckdb")
        self.cache_hit = self.cache_path.exists()
        if not self.cache_hit:
            self._build(directory, everything=build_all)
        if use_cache:
            for used in {self.cache_path, self.source} - {self.path}:
                hygiene.touch(used)
            if not self.cache_hit:  # the cache grew: keep it under its cap, least recently used first
                hygiene.prune(directory, hygiene.cap(), keep={self.cache_path, self.source})
        # opened on first use: a command whose answers are all stored never opens DuckDB (0.1 s of its floor)
        self._con: duckdb.DuckDBPyConnection | None = None
        _OPEN.add(self)
        self._raw_tables: set[str] | None = None
        self._materialized: set[str] = set()
        self._relations: set[str] | None = None  # the cache's normalized tables and views, once looked up (_present)
        self._private: _PrivateCopy | None = None  # the cache with tables built on first use, where it is read-only
        # called before a query is computed (not when its answer is read): the background run that answers ahead
        # waits there while a command works on the same cache (nsysql/ahead.py)
        self.before_compute: Callable[[], None] | None = None
        # told (one line) when a damaged cache is built again; the CLI prints it as a warning
        self.on_notice: Callable[[str], None] = _warn
        # input analyses given from outside (an export of a multi-export job reads the job's analysis.comm_waits,
        # nsysql/job.py): read in place of its own, and no answer is stored or read while any is given
        self._injected: dict[str, Path] = {}
        self._inject_dir: tempfile.TemporaryDirectory | None = None

    def inject(self, name: str, frame: pl.DataFrame) -> None:
        """Read `frame` wherever a query reads the input analysis `name` (analysis.<name>), instead of computing it
        from this export alone; stored answers are neither read nor written from then on."""
        if self._inject_dir is None:
            self._inject_dir = tempfile.TemporaryDirectory(prefix="nsysql-inject-")
        path = Path(self._inject_dir.name) / f"{name}.parquet"
        frame.write_parquet(path)
        self._injected[name] = path
        self._materialized.discard(name)

    @property
    def _answers_kept(self) -> bool:
        """Whether answers are stored and read: with a cache, and nothing injected."""
        return self._tmpdir is None and not self._injected

    def _rebuilt_once(self, action: Callable[[], T]) -> T:
        """`action()`; when it finds the cache file damaged, the cache is built again from the export and
        `action()` runs once more (a cache is derived data: nothing is lost but time)."""
        try:
            return action()
        except duckdb.Error as exc:
            if self._tmpdir is not None or not damaged_file(exc):
                raise
            self._discard_damaged_cache(error_line(exc))
        return action()

    def _discard_damaged_cache(self, why: str) -> None:
        """Remove the damaged cache and its stored answers, and build it again."""
        self.on_notice(f"the cache of {self.path.name} was damaged ({why}); building it again")
        if self._con is not None:
            try:
                self._con.close()
            except duckdb.Error:
                pass
        self._con, self._raw_tables, self._materialized, self._relations = None, None, set(), None
        self.cache_path.unlink(missing_ok=True)  # another process still reading it keeps its open file
        answers.discard(self.cache_path)
        self._build(self.cache_path.parent)

    @property
    def con(self) -> duckdb.DuckDBPyConnection:
        """The cached DuckDB file, read-only, with nsysql's macros (queries/macros/: the shared interval routines
        some queries call) and every normalized table (those built on first use are built first)."""
        self._rebuilt_once(lambda: self._ensure_built(None))
        return self._connection()

    @con.setter
    def con(self, con: duckdb.DuckDBPyConnection) -> None:  # tests put a recording connection in its place
        self._con = con

    def _connection(self) -> duckdb.DuckDBPyConnection:
        """The cached DuckDB file as it is (tables built on first use may be missing: _ensure_built adds them)."""
        if self._con is None:
            database = self._private.name if self._private is not None else self.cache_path
            self._con = self._rebuilt_once(lambda: connect(database, read_only=True))
            macros.install(self._con)
        return self._con

    def _close_connection(self) -> None:
        if self._con is not None:
            self._con.close()
        self._con, self._materialized, self._relations = None, set(), None  # TEMP tables end with their connection

    def _present(self) -> set[str]:
        """The normalized tables and views of the cache file this connection reads."""
        if self._relations is None:
            self._relations = {r[0] for r in self._connection().execute(
                "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() AND NOT temporary "
                "UNION ALL SELECT view_name FROM duckdb_views() "
                "WHERE database_name = current_database() AND NOT temporary AND NOT internal").fetchall()}
        return self._relations

    def _ensure_built(self, wanted: set[str] | None) -> None:
        """Build the normalized tables `wanted` (None: all of them) that a first open left out (tables `built: on
        first use`), with those they read. One process builds at a time (a lock beside the answers); the others
        wait and then find them built."""
        view_set = "nsys3"  # the only set (importer.VIEW_SETS); a cache of another would name it in nsysql_meta
        if wanted is None:
            wanted = {q.name for q in catalog.group(f"normalize.{view_set}")}
        missing = importer.statements_to_add(self._present(), wanted, view_set)
        if not missing:
            return
        if self._private is not None:  # this process's own copy (below): no other reader, no lock
            self._close_connection()
            importer.extend(self._private.name, missing, scratch=self._private.name.parent)
            return
        import fcntl
        try:
            lock = answers.directory(self.cache_path) / ".building.lock"
            lock.parent.mkdir(parents=True, exist_ok=True)
            with lock.open("a") as held:
                fcntl.flock(held, fcntl.LOCK_EX)  # released when the file closes, or its process ends
                _release(self.cache_path)  # another process may have replaced the file while this one waited
                missing = importer.statements_to_add(self._present(), wanted, view_set)
                if missing:
                    _release(self.cache_path)
                    importer.extend(self.cache_path, missing, scratch=self.cache_path.parent)
                    _release(self.cache_path)
                    if self._tmpdir is None:  # the cache grew: keep the directory under its cap, as a build does
                        hygiene.prune(self.cache_path.parent, hygiene.cap(), keep={self.cache_path, self.source})
        except OSError:
            # a cache directory this process cannot write (a shared, read-only cache): the tables are built in a
            # private copy that this handle reads until it closes, which costs only the time, as for answers
            self._close_connection()
            directory = Path(tempfile.mkdtemp(prefix=f"nsysql-nocache-{hygiene.owner_tag()}-"))
            self._private = _PrivateCopy(directory, directory / self.cache_path.name)
            shutil.copyfile(self.cache_path, self._private.name)
            self._ensure_built(wanted)

    @property
    def _tables(self) -> set[str]:
        """The raw nsys tables the export held: kept beside the cache once read, so has() opens no DuckDB."""
        if self._raw_tables is None:
            kept = answers.load_facts(self.cache_path, "raw_tables") if self._tmpdir is None else None
            if kept is None:
                kept = [r[0] for r in self._connection().execute("SELECT raw_table FROM nsysql_tables").fetchall()]
                if self._tmpdir is None:
                    answers.store_facts(self.cache_path, "raw_tables", kept)
            self._raw_tables = set(kept)
        return self._raw_tables

    def _build(self, directory: Path, *, everything: bool = False) -> None:
        with importer.scratch_cache(directory) as tmp:
            importer.normalize(self.source, tmp, shown_as=self.path, everything=everything)  # messages name the .xz
            os.replace(tmp, self.cache_path)  # atomic: readers never see a half-built cache

    # -- plumbing ---------------------------------------------------------------------------
    def close(self) -> None:
        self._close_connection()
        _OPEN.discard(self)
        if self._private is not None:
            shutil.rmtree(self._private.directory, ignore_errors=True)
            self._private = None
        if self._tmpdir is not None:
            self._tmpdir.cleanup()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self) -> str:
        return f"<nsysql.Export {self.path}>"

    def has(self, table: str) -> bool:
        """Whether the export holds the raw data behind a normalized table."""
        raw = SOURCES.get(table, (None,))[0]
        return raw is None or any(fnmatchcase(t, raw) for t in self._tables)

    def require(self, tables, purpose: str) -> None:
        """Raise MissingDataError unless every requirement holds; `a|b` needs at least one of a, b."""
        for requirement in tables:
            options = [t for t in requirement.split("|") if t in SOURCES]
            if options and not any(self.has(t) for t in options):
                raws = " or ".join(SOURCES[t][0] for t in options)
                flag = SOURCES[options[0]][1]
                raise MissingDataError(f"{self.path.name} has no {raws}, which {purpose} needs; capture with {flag}")

    def sql(self, sql: str, params: dict | None = None) -> pl.DataFrame:
        """Run SQL against the normalized tables and return a Polars frame."""
        try:
            return self._rebuilt_once(lambda: self._built_for(_words(sql), lambda: _to_polars(
                self._connection().sql(sql, params=params or {}))))
        except duckdb.Error as exc:
            raise NsysqlError(error_line(exc)) from None

    def run(self, query_id: str, **params) -> pl.DataFrame:
        q = catalog.get(query_id)
        if q.id.startswith("analysis.") and q.name in self._injected:  # the job's rows (nsysql/job.py)
            return pl.read_parquet(self._injected[q.name])
        # first, even with an answer stored: an input analysis is stored as an answer without this check
        # (_keep_input_answer), and has() reads the raw tables kept beside the cache, not DuckDB
        self.require(q.requires, q.id)
        bound = q.bound_params({**views.stated_defaults(q), **params})  # a parameter left out takes its header default
        stored = answers.load(self.cache_path, q, bound) if self._answers_kept else None
        if stored is not None:  # computed by an earlier command on this export (nsysql/answers.py)
            return stored
        if self.before_compute is not None:
            self.before_compute()
        with progress.shown("building tables on first use"):  # its own line, unless a command's line is up
            try:
                self._rebuilt_once(lambda: self._ensure_built(tables_read(q)))
            except duckdb.Error as exc:
                raise NsysqlError(error_line(exc)) from None
        with progress.shown("computing"), progress.stage(q.id):
            try:
                df = self._rebuilt_once(lambda: self._compute(q, bound))
            except duckdb.Error as exc:
                raise NsysqlError(error_line(exc)) from None
        if q.columns and list(df.columns) != [c.name for c in q.columns]:
            raise NsysqlError(f"{q.path}: columns {df.columns} differ from its header")  # a bug, not user error
        if self._answers_kept:
            answers.store(self.cache_path, q, bound, df)
        return df

    def _compute(self, q: catalog.Query, bound: dict) -> pl.DataFrame:
        """The query's rows, its input analyses made first; DuckDB's errors come out as they are."""
        def compute() -> pl.DataFrame:
            self._materialize_inputs(q)
            return _to_polars(self._connection().sql(q.sql, params=bound))
        return self._built_for(tables_read(q), compute)

    def make_inputs(self, q: catalog.Query) -> None:
        """`q`'s input analyses as TEMP tables named after them (a stored answer read where one is kept), as run()
        makes them, for SQL that reads `q`'s view (nsysql sql)."""
        try:
            self._rebuilt_once(lambda: self._built_for(tables_read(q), lambda: self._materialize_inputs(q)))
        except duckdb.Error as exc:
            raise NsysqlError(error_line(exc)) from None

    def build_tables_for(self, q: catalog.Query) -> None:
        """Build the normalized tables `q` reads that the cache file lacks (tables built on first use), for a
        reader of the file itself (nsysql.diff attaches two caches to one connection)."""
        self._rebuilt_once(lambda: self._ensure_built(tables_read(q)))

    def _built_for(self, wanted: set[str], action: Callable[[], T]) -> T:
        """`action()` once the normalized tables in `wanted` are built (the others first opens build are there);
        a table built on first use that a query reads without naming it (its header's `requires`) is built when
        DuckDB misses it, and `action()` runs again."""
        self._ensure_built(wanted)
        for _ in range(len(_on_first_use()) + 1):
            try:
                return action()
            except duckdb.CatalogException as exc:
                missing = _missing_relation(exc)
                if missing not in _on_first_use() or missing in self._present():
                    raise
                self._ensure_built({missing})
        return action()

    def _materialize_inputs(self, q: catalog.Query) -> None:
        """Analyses that read another analysis (`requires: analysis.steps`) find it as a TEMP table named after
        it, computed once per connection; in `nsysql db` files the same name is that analysis's view."""
        for requirement in q.requires:
            if not requirement.startswith("analysis."):
                continue
            name = requirement.split(".", 1)[1]
            if name in self._materialized:
                continue
            inner = catalog.get(requirement)
            if name in self._injected:  # the job's rows (nsysql/job.py)
                self._connection().execute(f"CREATE OR REPLACE TEMP TABLE {quote_ident(name)} AS "
                                           "SELECT * FROM read_parquet($file)", {"file": str(self._injected[name])})
                self._materialized.add(name)
                continue
            # no require() here: without its raw data an input analysis is empty (the stub tables are), and
            # the reader decides what that means, e.g. steady_steps falls back to the span of GPU activity
            stored = answers.stored_file(self.cache_path, inner, {}) if self._answers_kept else None
            if stored is None:
                self._materialize_inputs(inner)
            try:
                if stored is None:
                    self._connection().execute(f"CREATE TEMP TABLE {quote_ident(name)} AS {inner.sql.rstrip().rstrip(';')}")
                    stored = self._keep_input_answer(inner, name)
                if stored is not None:  # a small input is read as its own command reads it (the same types)
                    self._connection().execute(f"CREATE OR REPLACE TEMP TABLE {quote_ident(name)} AS "
                                     "SELECT * FROM read_parquet($file)", {"file": str(stored)})
            except duckdb.Error as exc:
                if damaged_file(exc):
                    raise  # the caller builds the cache again (_rebuilt_once)
                raise NsysqlError(f"{inner.id}: {str(exc).splitlines()[0]}") from None
            self._materialized.add(name)

    def _keep_input_answer(self, inner: catalog.Query, name: str) -> Path | None:
        """Store a small input analysis (`analysis.steps` under summarize) as its own answer, so the command
        that shows it (`nsysql steps`) reads it back; big intermediate tables (a row per GPU op) are not kept."""
        if not self._answers_kept or inner.param_names:
            return None
        rows = self._connection().execute(f"SELECT COUNT(*) FROM {quote_ident(name)}").fetchone()
        if rows is None or rows[0] > INPUT_ANSWER_ROWS:
            return None
        answers.store(self.cache_path, inner, {}, _to_polars(self._connection().table(quote_ident(name))))
        return answers.stored_file(self.cache_path, inner, {})

    def info(self) -> dict[str, str]:
        rows = self._connection().execute("SELECT key, value FROM export_info UNION ALL SELECT key, value FROM nsysql_meta").fetchall()
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
        from . import rules
        return self.run(rules.query(rule).id, **rules.params(rule, options))

    def kernels(self) -> pl.DataFrame:
        """Every kernel with its launching API call (correlationId and process), in GPU start order."""
        return self.run("analysis.kernels")

    def kernel_table(self) -> pl.DataFrame:
        """Every GPU op charged to direction (fprop/bprop/optim/comm/other), layer, op, input shapes, seq."""
        return self.run("analysis.kernel_table")

    def layers(self, depth: int = 0, merge_repeats: bool = False) -> pl.DataFrame:
        """Kernel time per layer path split fprop/bprop/optim/comm; `depth` keeps N path components."""
        if depth < 0:
            raise NsysqlError(f"depth must be 0 (whole path) or more, not {depth}")
        return self.run("analysis.layers", depth=depth, merge_repeats=merge_repeats)

    def attribution_coverage(self) -> dict:
        """Kernel time with a known layer, per direction and per way the layer was found."""
        return self.run("analysis.attribution_coverage").row(0, named=True)

    def pyprof_table(self, step: int = 1, pid: int | None = None) -> pl.DataFrame:
        """The seed tables' layout (Idx, Direction, Layer, Op, Params, Kernel) for step range `step` of process
        `pid`, numbered within each process (1 = its first in time); `pid` is needed only when several processes
        have that step. Step 0, or an export without step ranges, gives every kernel."""
        if step < 0:
            raise NsysqlError(f"`step={step}`: steps count from 1 (0 = all kernels)")
        per_pid = dict(self.con.execute(
            "SELECT pid, count(*) FROM user_range WHERE is_step GROUP BY pid").fetchall())
        if step == 0 or not per_pid:
            return self.run("analysis.kernel_table_pyprof", step=0, process=None)
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
        return self.run("analysis.kernel_table_pyprof", step=step, process=candidates[0])

    def ranges(self) -> pl.DataFrame:
        """NVTX ranges with depth, parent, full path and thread."""
        return self.run("analysis.ranges")

    def gpu_time_by_range(self) -> pl.DataFrame:
        """Per range name: NVIDIA's projected time, inclusive and exclusive GPU busy time, kernels."""
        return self.run("analysis.gpu_time_by_range")

    def launch_overhead(self) -> pl.DataFrame:
        """Per kernel launch: API, queue and kernel time."""
        return self.run("analysis.launch_overhead")

    def memcpy(self, by: str = "kind") -> pl.DataFrame:
        """Copies and memsets per copy/memory kind (`by="kind"`), per user NVTX range and kind (`"range"`) or
        per device, stream and kind (`"stream"`): count, bytes, time, GB/s, pageable/pinned, synchronous."""
        return self.run(analyses.get("memcpy").query(by).id)

    def overhead(self, by: str = "range") -> pl.DataFrame:
        """Kernel launch overhead per user NVTX range (`by="range"`), kernel name (`"kernel"`) or launching
        thread (`"thread"`): launches, CPU and GPU busy time, API/queue time mean/median/p95, launch_bound."""
        if by == "range" and self.has("kernel") and not self.has("nvtx_range"):
            raise MissingDataError(f"{self.path.name} has no NVTX_EVENTS, which overhead per NVTX range (the default) "
                                   "needs; per launching thread (`by='thread'`) or per kernel (`by='kernel'`) works "
                                   "without NVTX; capture with --trace=nvtx for ranges")
        return self.run(analyses.get("overhead").query(by).id)

    def gaps(self, min_gap_us: float = 100.0, threads: bool = False, calls: bool = True) -> pl.DataFrame:
        """GPU idle gaps of at least `min_gap_us`, longest first, with the launching thread's CPU context;
        `threads=True` gives one row per gap and thread instead; `calls=False` skips the CUDA/OS call
        columns (reading every call is the costly part on a big export)."""
        if min_gap_us < 0:
            raise NsysqlError(f"the minimum gap must be 0 µs or more, not {min_gap_us}")
        if threads:
            return self.run("analysis.gaps_threads", min_gap_ns=round(min_gap_us * 1000))
        return self.run("analysis.gaps", min_gap_ns=round(min_gap_us * 1000), with_calls=calls)

    def utilization(self, window_ms: float = 10.0) -> pl.DataFrame:
        """GPU busy share per device in fixed windows of `window_ms` from the first GPU op to the last."""
        window_ns = round(window_ms * 1_000_000)
        if window_ns <= 0:
            raise NsysqlError(f"the window must be longer than 0 ms, not {window_ms}")
        span = self.run("analysis.export_totals")["gpu_span_ns"][0] or 0
        if span // window_ns > 1_000_000:  # a window count that size is a typo, not a question
            raise NsysqlError(f"{window_ms} ms windows cut the {span / 1e6:.0f} ms of GPU activity into more than "
                              "a million; choose a longer `window_ms=`")
        return self.run("analysis.utilization", window_ns=window_ns)

    def steps(self) -> pl.DataFrame:
        """Training/inference steps (step-named ranges, else a repeating top-level pattern): wall, GPU busy, split."""
        return self.run("analysis.steps")

    def efficiency(self, by: str = "op") -> pl.DataFrame:
        """Achieved TFLOP/s (matmul, conv) and GB/s (elementwise) per op and input shapes (`by="op"`) or per
        layer (`"layer"`), from the shapes PyTorch's op markers recorded, with the tensor-core share of matmul time."""
        return self.run(analyses.get("efficiency").query(by).id, by=by)

    def analysis(self, name: str, by: str | None = None, **params) -> pl.DataFrame:
        """A declared analysis by name (nsysql/analyses.py), also one declared outside nsysql: its method above
        when it has one, else its query with `params` as $params; `by` picks its grouping (its first by default)."""
        return analyses.run(self, analyses.get(name), by, **params)


@dataclass(frozen=True)
class _PrivateCopy:
    """A copy of a cache that this process could not add tables to in place, in a directory of its own."""
    directory: Path
    name: Path


# Every handle of this process: DuckDB gives a new connection to a file that a connection of the process still
# holds open the database as that connection read it, so when tables built on first use replace a cache file,
# every handle's connection to it is closed (_release) and the next query reads the file now on disk.
_OPEN: weakref.WeakSet[Export] = weakref.WeakSet()


def _release(cache_path: Path) -> None:
    """Close every connection of this process to the cache file `cache_path` (each handle reopens it on use).
    A handle that gave its connection out (`Export.con`) holds a whole cache, which nothing replaces."""
    for handle in list(_OPEN):
        if handle.cache_path == cache_path and handle._private is None:  # a private copy is the handle's own
            handle._close_connection()


@functools.lru_cache(maxsize=1)
def _on_first_use() -> frozenset[str]:
    """The normalized tables a first open leaves out (importer.built_on_first_use)."""
    return frozenset(q.name for q in catalog.group("normalize.nsys3") if importer.built_on_first_use(q))


_MISSING = re.compile(r'(?:Table|View) with name "?(\w+)"? does not exist')


def _missing_relation(exc: duckdb.CatalogException) -> str | None:
    """The table or view a DuckDB catalog error says does not exist."""
    m = _MISSING.search(str(exc))
    return m.group(1) if m else None


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


def unpack_xz(path: Path, directory: Path) -> Path:
    """Decompress an .sqlite.xz export into `directory` once (keyed by the .xz file's identity)."""
    import lzma
    import shutil

    inputs.regular_file(path)
    target = directory / f"{inputs.safe_name(path.name[:-3].removesuffix('.sqlite'))}-{cache_key(path, 'xz')}.sqlite"
    if not target.exists():
        fd, tmp = tempfile.mkstemp(prefix=f".unpacking-{hygiene.owner_tag()}-", dir=directory)
        try:
            with lzma.open(path) as src, os.fdopen(fd, "wb") as dst:
                head = src.read(len(importer.SQLITE_MAGIC))
                if head != importer.SQLITE_MAGIC:  # named as the user's .xz, and nothing kept in the cache
                    raise NsysqlError(f"{path} unpacks to something that is not a SQLite file; compress the "
                                      ".sqlite export itself (nsys export --type sqlite REPORT.nsys-rep, then xz)")
                dst.write(head)
                shutil.copyfileobj(src, dst, 1 << 20)
            os.replace(tmp, target)
        except (lzma.LZMAError, EOFError):  # EOFError: a truncated .xz (an interrupted copy)
            raise NsysqlError(f"{path} is not a valid .xz file (damaged or truncated?); decompress it yourself "
                              f"(xz -dk {path})") from None
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    return target


def _to_polars(rel: duckdb.DuckDBPyRelation | None) -> pl.DataFrame:
    """The result as a frame through the Arrow C stream (no Python object per value: 1.7M kernel rows in 4 s
    instead of 16 s), with DuckDB-only types made plain: ENUM text as String, HUGEINT sums as Int64."""
    if rel is None:  # a statement without a result
        return pl.DataFrame()
    df = pl.DataFrame(rel)
    plain: dict = {name: pl.String for name, dtype in df.schema.items() if isinstance(dtype, (pl.Categorical, pl.Enum))}
    # DuckDB hands HUGEINT (what SUM of BIGINT returns) to Arrow as DECIMAL(38, 0)
    plain.update({name: pl.Int64 for name, dtype in df.schema.items()
                  if dtype == pl.Int128 or (isinstance(dtype, pl.Decimal) and dtype.scale == 0)})
    return df.cast(plain) if plain else df


