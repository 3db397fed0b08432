"""The Store: one export's life from the input file to the cached DuckDB file a query reads. It unpacks an .xz
export, imports and normalizes it into the cache (nsysql/store/importer.py) under the cache's cap (hygiene), builds
the tables left for first use (under a lock, or in a private copy where the cache is read-only), builds a damaged
cache again, and keeps facts and answers beside the cache (nsysql/store/stored.py). What it offers the query API:
`connection()`, `has()`/`require()`, `ensure_built()`/`built_for()`, `rebuilt_once()`, `temp_tables`, and the stored
answers and facts (`load_answer`, `store_answer`, `fact`)."""
from __future__ import annotations

import errno
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
from typing import Any, TypeVar

import duckdb
import polars as pl

from nsysql.core.owner import owner_tag
from nsysql.errors import MissingDataError, NsysqlError, NsysqlWarning
from nsysql.sql import catalog, macros
from nsysql.sql.engine import connect, error_line
from nsysql.store import busy, formats_in, hygiene, importer, inputs, lock, nsys_rep
from nsysql.store import stored as answers
from nsysql.store.cache import cache_file, cache_key, default_cache_dir

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
    "cuda_event": ("CUPTI_ACTIVITY_KIND_CUDA_EVENT", "--trace=cuda (the program recorded no CUDA events)"),
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


# DuckDB's words for a database file it cannot trust (a truncated copy, a disk error, a file overwritten): said of
# the cache, the only DuckDB file a query opens, it means the cache is to be built again
DAMAGED_FILE = ("Corrupt database file", "is not a valid DuckDB database file", "Could not read enough bytes")


T = TypeVar("T")


def _warn(line: str) -> None:
    import warnings
    warnings.warn(line, NsysqlWarning, stacklevel=4)


def _built_from(con: duckdb.DuckDBPyConnection, identity: str) -> bool:
    """Whether the cache `con` reads was built from the export whose identity (nsysql/store/cache.py) is
    `identity`: another export's cache copied under this one's name is not."""
    try:
        row = con.execute("SELECT value FROM nsysql_meta WHERE key = 'export_identity'").fetchone()
    except duckdb.CatalogException:  # not a cache of nsysql's at all
        return False
    return row is not None and row[0] == identity


def damaged_file(exc: BaseException) -> bool:
    """Whether `exc` is DuckDB finding its database file damaged."""
    return isinstance(exc, duckdb.IOException) and any(words in str(exc) for words in DAMAGED_FILE)


class CacheUnwritable(Exception):
    """The cache directory cannot be written (read-only, full, not a directory): `str()` says why."""


class Store:
    """One export's cache, opened read-only (`use_cache=False`: a throwaway cache in a temporary directory)."""

    def __init__(self, path: str | os.PathLike, *, cache_dir: str | os.PathLike | None = None,
                 use_cache: bool = True, build_all: bool = False, busy_mark: bool = False):
        """`build_all`: a first open builds every normalized table at once, those otherwise built on first use
        too (summarize reads them all: one build on every core beats two). `busy_mark`: this process works on the
        cache as a command does, until it exits; a background run answering ahead waits for it (store/busy.py).
        A cache directory that cannot be written (read-only, full) gives this handle a private temporary cache
        instead, with one notice."""
        self.path = Path(path)
        self._tmpdir: tempfile.TemporaryDirectory | None = None
        # told (one line) when a damaged cache is built again; the CLI prints it as a warning
        self.on_notice: Callable[[str], None] = _warn
        self._rebuilds = 0  # a damaged cache is built again once per handle; damaged again, it is an error
        self._answers_checked = False  # another export's answers were looked into (one notice)
        self._file: tuple[int, int, int] | None = None  # the cache file the connection read (device, inode, mtime)
        self._build_all = build_all  # how a cache built again is built: as this handle's first open would
        self._folder = formats_in.is_folder(self.path)
        if self._folder:  # a Parquet or Arrow folder (nsysql/store/formats_in.py), checked before any cache directory is made
            formats_in.folder(self.path)
        else:
            inputs.regular_file(self.path)  # before any cache directory is made: a FIFO or a typo fails at once
        built = True
        if use_cache:
            directory = Path(cache_dir).expanduser() if cache_dir else default_cache_dir()
            try:
                built = self._open_cache(directory, build_all)
            except CacheUnwritable as why:
                self._open_private(build_all)
                self.on_notice(f"cannot write the cache directory {directory} ({why}); this run uses a private "
                               "temporary cache, removed when it ends: choose a writable one with `cache_dir=` or "
                               "NSYSQL_CACHE_DIR, or run without the cache (`use_cache=False`)")
        else:
            self._open_private(build_all)
        if self._tmpdir is None:
            if busy_mark:
                busy.mark_busy(self.cache_path)
            for used in {self.cache_path, self.source} - {self.path}:
                hygiene.touch(used)
            if built:  # the cache grew: keep it under its cap, least recently used first
                hygiene.prune(self.cache_path.parent, hygiene.cap(), keep={self.cache_path, self.source})
        # opened on first use: a command whose answers are all stored never opens DuckDB (0.1 s of its floor)
        self._con: duckdb.DuckDBPyConnection | None = None
        _OPEN.add(self)
        self._raw_tables: set[str] | None = None
        # TEMP tables the query API made on this connection (input analyses); they end with the connection
        self.temp_tables: set[str] = set()
        self._relations: set[str] | None = None  # the cache's normalized tables and views, once looked up (present)
        self._private: _PrivateCopy | None = None  # the cache with tables built on first use, where it is read-only

    def _open_cache(self, directory: Path, build_all: bool) -> bool:
        """Find or build the export's cache in `directory`; whether this handle built it. CacheUnwritable when
        the directory cannot be written to build it."""
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CacheUnwritable(f"cannot create it: {exc.strerror or exc}") from None
        hygiene.sweep(directory)  # leftovers of killed runs (once per process)
        # What is actually read: the export itself, an .xz export unpacked into the cache, or a .nsys-rep exported
        # into the cache by nsys (nsysql/store/nsys_rep.py)
        self.source = (unpack_xz(self.path, directory) if self.path.name.endswith(".xz") else
                       nsys_rep.exported(self.path, directory) if nsys_rep.is_report(self.path) else self.path)
        if not self._folder:
            importer.check_sqlite_file(self.source)
        # the export's identity (nsysql/store/cache.py), kept in the cache it builds and compared when it is opened,
        # and in every answer kept beside it
        self._identity = cache_key(self.source, importer.views_version())
        self.cache_path = cache_file(directory, self.source, importer.views_version(), self._identity)
        self.cache_hit = self.cache_path.exists()
        if self.cache_hit:
            return False
        try:  # one process builds, under the build lock; one that waited finds the cache built
            with lock.held(answers.directory(self.cache_path), self._what, on_wait=self.on_wait) as claim:
                if self.cache_path.exists():
                    self.cache_hit = True
                    return False
                try:
                    self._build(directory, everything=build_all)
                except BaseException:
                    claim.discard()  # no cache, no answers directory: nothing left of a build that failed
                    raise
        except OSError as exc:
            raise CacheUnwritable(exc.strerror or str(exc)) from None
        except importer.CacheWriteError as exc:
            raise CacheUnwritable(str(exc).split("; ")[0].removeprefix("cannot write the cache: ")) from None
        return True

    def _open_private(self, build_all: bool) -> None:
        """A throwaway cache in a temporary directory of this handle's own (`use_cache=False`, or a cache directory
        that cannot be written), built now."""
        self._tmpdir = tempfile.TemporaryDirectory(prefix=f"nsysql-nocache-{owner_tag()}-")
        directory = Path(self._tmpdir.name)
        try:
            self.source = (unpack_xz(self.path, directory) if self.path.name.endswith(".xz") else
                           nsys_rep.exported(self.path, directory) if nsys_rep.is_report(self.path) else self.path)
            if not self._folder:
                importer.check_sqlite_file(self.source)
            self._identity = ""
            self.cache_path = directory / "export.duckdb"
            self.cache_hit = False
            self._build(directory, everything=build_all)
        except BaseException:
            self._tmpdir.cleanup()
            raise

    @property
    def _what(self) -> str:
        return f"the cache of {inputs.text(self.path.name)}"

    def on_wait(self, line: str) -> None:
        """Told (one line) while this handle waits for another process building the cache: stderr."""
        lock.note(line)

    @property
    def keeps_answers(self) -> bool:
        """Whether answers and facts are kept beside the cache (not with a throwaway cache)."""
        return self._tmpdir is None

    # -- the connection, and the cache built again when it is damaged ---------------------------------------
    def rebuilt_once(self, action: Callable[[], T]) -> T:
        """`action()`; when it finds the cache file damaged, the cache is built again from the export and
        `action()` runs once more (a cache is derived data: nothing is lost but time). Every query of the cache
        runs inside one (nested ones too); a handle builds its cache again once, and a cache damaged again after
        that is an error."""
        try:
            return action()
        except duckdb.Error as exc:
            if self._tmpdir is not None or not damaged_file(exc):
                raise
            self._discard_damaged_cache(error_line(exc))
        return action()

    def _discard_damaged_cache(self, why: str, *, foreign: bool = False) -> None:
        """Remove the damaged (or another export's) cache and its stored answers, and build it again, under the
        build lock; where another process did so meanwhile, its cache is read."""
        what = "not built from this export" if foreign else "damaged"
        if self._rebuilds:
            raise NsysqlError(f"{self._what} was {what} again after it was built again ({why}); its disk may be "
                              "failing: choose another `cache_dir=`, or run without the cache (`use_cache=False`)")
        self._rebuilds += 1
        self.on_notice(f"the cache of {self.path.name} was {what} ({why}); building it again")
        read = self._file
        self._forget_connection()
        if self._private is not None:  # this handle's own copy of a cache it cannot write: build that one
            self._private.name.unlink(missing_ok=True)
            self._build(self._private.directory, everything=self._build_all, into=self._private.name)
            return
        try:
            with lock.held(answers.directory(self.cache_path), self._what, on_wait=self.on_wait):
                if read is not None and _file_id(self.cache_path) not in (None, read):
                    return  # another process built it again while this one waited: read that one
                self.cache_path.unlink(missing_ok=True)  # another process still reading it keeps its open file
                answers.discard(self.cache_path)
                self._build(self.cache_path.parent, everything=self._build_all)
        except (OSError, importer.CacheWriteError):
            # a cache directory this process cannot write: the cache is built again in a directory of its own
            directory = Path(tempfile.mkdtemp(prefix=f"nsysql-nocache-{owner_tag()}-"))
            self._private = _PrivateCopy(directory, directory / self.cache_path.name)
            try:
                self._build(directory, everything=self._build_all, into=self._private.name)
            except BaseException:
                shutil.rmtree(directory, ignore_errors=True)
                self._private = None
                raise

    def _forget_connection(self) -> None:
        if self._con is not None:
            try:
                self._con.close()
            except duckdb.Error:
                pass
        self._con, self._raw_tables, self.temp_tables, self._relations, self._file = None, None, set(), None, None

    @property
    def database(self) -> Path:
        """The cache file this handle reads (its private copy where it built tables it could not add in place)."""
        return self._private.name if self._private is not None else self.cache_path

    def full_connection(self) -> duckdb.DuckDBPyConnection:
        """The cache with every normalized table (those built on first use are built first)."""
        self.rebuilt_once(lambda: self.ensure_built(None))
        return self.connection()

    def connection(self) -> duckdb.DuckDBPyConnection:
        """The cached DuckDB file as it is, read-only, with nsysql's macros (tables built on first use may be
        missing: ensure_built adds them)."""
        if self._con is None:
            self._con = self.rebuilt_once(self._connect)
        return self._con

    def interrupt(self) -> bool:
        """Stop the statement running on this handle's connection now, from another thread (it raises DuckDB's
        InterruptException where it runs); False when no connection is open. A connection at rest is unharmed."""
        con = self._con
        if con is None:
            return False
        con.interrupt()
        return True

    def _connect(self) -> duckdb.DuckDBPyConnection:
        """A connection to the cache file, checked to be this export's (another export's is built again)."""
        database = self.database
        self._file = _file_id(database)
        con = connect(database, read_only=True)
        try:
            if self._tmpdir is None and not _built_from(con, self._identity):
                con.close()
                self._discard_damaged_cache("its identity differs", foreign=True)
                database = self.database
                self._file = _file_id(database)
                con = connect(database, read_only=True)
            macros.install(con)
        except BaseException:
            con.close()  # DuckDB keeps a file's database while a connection of the process holds it
            raise
        return con

    def close_connection(self) -> None:
        if self._con is not None:
            self._con.close()
        self._con, self.temp_tables, self._relations = None, set(), None  # TEMP tables end with their connection

    def close(self) -> None:
        self.close_connection()
        _OPEN.discard(self)
        if self._private is not None:
            shutil.rmtree(self._private.directory, ignore_errors=True)
            self._private = None
        if self._tmpdir is not None:
            self._tmpdir.cleanup()

    # -- tables built on first use ------------------------------------------------------------------------
    def present(self) -> set[str]:
        """The normalized tables and views of the cache file this connection reads."""
        if self._relations is None:
            self._relations = self.rebuilt_once(lambda: {r[0] for r in self.connection().execute(
                "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() AND NOT temporary "
                "UNION ALL SELECT view_name FROM duckdb_views() "
                "WHERE database_name = current_database() AND NOT temporary AND NOT internal").fetchall()})
        return self._relations

    def ensure_built(self, wanted: set[str] | None) -> None:
        """Build the normalized tables `wanted` (None: all of them) that a first open left out (tables `built: on
        first use`), with those they read. One process builds at a time (the build lock, nsysql/store/lock.py);
        the others wait and then find them built."""
        view_set = "nsys3"  # the only set (importer.VIEW_SETS); a cache of another would name it in nsysql_meta
        if wanted is None:
            wanted = {q.name for q in catalog.group(f"normalize.{view_set}")}
        missing = importer.statements_to_add(self.present(), wanted, view_set)
        if not missing:
            return
        if self._private is not None:  # this process's own copy (below): no other reader, no lock
            self.close_connection()
            importer.extend(self._private.name, missing, scratch=self._private.name.parent)
            return
        full: importer.CacheWriteError | None = None
        try:
            with lock.held(answers.directory(self.cache_path), self._what, on_wait=self.on_wait):
                _release(self.cache_path)  # another process may have replaced the file while this one waited
                missing = importer.statements_to_add(self.present(), wanted, view_set)
                if missing:
                    _release(self.cache_path)
                    importer.extend(self.cache_path, missing, scratch=self.cache_path.parent)
                    _release(self.cache_path)
                    if self._tmpdir is None:  # the cache grew: keep the directory under its cap, as a build does
                        hygiene.prune(self.cache_path.parent, hygiene.cap(), keep={self.cache_path, self.source})
                return
        except OSError as exc:  # a cache directory this process cannot write (a shared, read-only cache)
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                full = importer.CacheWriteError(f"cannot write the cache: {exc.strerror}")
        except importer.CacheWriteError as exc:
            full = exc  # a full disk: said once the private copy below has the tables
        # the tables are built in a private copy that this handle reads until it closes, as for answers
        self.close_connection()
        directory = Path(tempfile.mkdtemp(prefix=f"nsysql-nocache-{owner_tag()}-"))
        self._private = _PrivateCopy(directory, directory / self.cache_path.name)
        try:
            shutil.copyfile(self.cache_path, self._private.name)
            self.ensure_built(wanted)
        except BaseException:
            self.close_connection()
            shutil.rmtree(directory, ignore_errors=True)
            self._private = None
            raise
        if full is not None:
            self.on_notice(f"{str(full).split('; ')[0]}; this run builds the tables it needs in a private temporary "
                           "copy of the cache: free some space, or choose another `cache_dir=` or NSYSQL_CACHE_DIR, "
                           "or run without the cache (`use_cache=False`)")

    def built_for(self, wanted: set[str], action: Callable[[], T]) -> T:
        """`action()` once the normalized tables in `wanted` are built (the others first opens build are there);
        a table built on first use that a query reads without naming it (its header's `requires`) is built when
        DuckDB misses it, and `action()` runs again."""
        self.ensure_built(wanted)
        for _ in range(len(_on_first_use()) + 1):
            try:
                return action()
            except duckdb.CatalogException as exc:
                missing = _missing_relation(exc)
                if missing not in _on_first_use() or missing in self.present():
                    raise
                self.ensure_built({missing})
        return action()

    def _build(self, directory: Path, *, everything: bool = False, into: Path | None = None) -> None:
        with importer.scratch_cache(directory) as tmp:
            importer.normalize(self.source, tmp, shown_as=self.path, everything=everything,  # messages name the .xz
                               identity=self._identity)
            os.replace(tmp, into or self.cache_path)  # atomic: readers never see a half-built cache

    # -- what the export holds ---------------------------------------------------------------------------
    @property
    def raw_tables(self) -> set[str]:
        """The raw nsys tables the export held: kept beside the cache once read, so has() opens no DuckDB."""
        if self._raw_tables is None:
            self._raw_tables = set(self.fact("raw_tables", lambda: self.rebuilt_once(lambda: [
                r[0] for r in self.connection().execute("SELECT raw_table FROM nsysql_tables").fetchall()])))
        return self._raw_tables

    def has(self, table: str) -> bool:
        """Whether the export holds the raw data behind a normalized table."""
        raw = SOURCES.get(table, (None,))[0]
        return raw is None or any(fnmatchcase(t, raw) for t in self.raw_tables)

    def require(self, tables, purpose: str) -> None:
        """Raise MissingDataError unless every requirement holds; `a|b` needs at least one of a, b."""
        for requirement in tables:
            options = [t for t in requirement.split("|") if t in SOURCES]
            if options and not any(self.has(t) for t in options):
                raws = " or ".join(SOURCES[t][0] for t in options)
                flag = SOURCES[options[0]][1]
                raise MissingDataError(f"{self.path.name} has no {raws}, which {purpose} needs; capture with {flag}")

    # -- facts and answers kept beside the cache, each checked against the export and its checksum -----------
    def fact(self, name: str, compute: Callable[[], Any]) -> Any:
        """A fact about the export (JSON-able), computed once and kept beside the cache."""
        found, kept = False, None
        if self.keeps_answers:
            try:
                found, kept = answers.load_fact(self.cache_path, name, self._identity)
            except answers.Mismatch as exc:
                self._mismatch(f"fact {name!r}", answers.fact_file(self.cache_path, name), exc)
        if not found:
            kept = compute()
            if self.keeps_answers:
                answers.store_fact(self.cache_path, name, kept, self._identity)
        return kept

    def frame(self, name: str, compute: Callable[[], pl.DataFrame]) -> pl.DataFrame:
        """A frame about the export that no one query gives, computed once and kept beside the cache (Parquet)."""
        kept = answers.load_frame(self.cache_path, name) if self.keeps_answers else None
        if kept is None:
            kept = compute()
            if self.keeps_answers:
                answers.store_frame(self.cache_path, name, kept)
        return kept

    def first_time(self, name: str) -> bool:
        """Whether this is the first time `name` is asked about this export (kept beside the cache: a note said
        once); always True with a throwaway cache."""
        if not self.keeps_answers:
            return True
        found, _ = answers.load_fact(self.cache_path, name)
        if not found:
            answers.store_fact(self.cache_path, name, True)
        return not found

    def load_answer(self, q: catalog.Query, bound: dict) -> pl.DataFrame | None:
        try:
            return answers.load(self.cache_path, q, bound, self._identity)
        except answers.Mismatch as exc:
            self._mismatch(f"answer of {q.id}", answers.path(self.cache_path, q, bound), exc)
            return None

    def store_answer(self, q: catalog.Query, bound: dict, df: pl.DataFrame) -> None:
        answers.store(self.cache_path, q, bound, df, self._identity)

    def answer_file(self, q: catalog.Query, bound: dict) -> Path | None:
        try:
            return answers.stored_file(self.cache_path, q, bound, self._identity)
        except answers.Mismatch as exc:
            self._mismatch(f"answer of {q.id}", answers.path(self.cache_path, q, bound), exc)
            return None

    def _mismatch(self, what: str, file: Path, exc: answers.Mismatch) -> None:
        """A stored answer or fact that is not this export's as stored: removed, and computed again by the caller.
        Another export's answers (a foreign answers folder) mean all of them go, with the cache too when it is
        another export's as well: one notice either way."""
        if not exc.foreign:
            self.on_notice(f"the stored {what} of {self.path.name} was changed since it was stored ({exc}); "
                           "computing it again")
            answers.remove(file)
            return
        if self._answers_checked:  # another process's, written since this handle looked: only this file goes
            answers.remove(file)
            return
        self._answers_checked = True
        rebuilds = self._rebuilds
        self.connection()  # another export's cache too: built again, its answers with it (one notice)
        if self._rebuilds == rebuilds:
            self.on_notice(f"the stored answers of {self.path.name} were computed for another export ({what}); "
                           "computing them again")
            answers.discard(self.cache_path)
        self._raw_tables = None


@dataclass(frozen=True)
class _PrivateCopy:
    """A copy of a cache that this process could not add tables to in place, in a directory of its own."""
    directory: Path
    name: Path


# Every handle of this process: DuckDB gives a new connection to a file that a connection of the process still
# holds open the database as that connection read it, so when tables built on first use replace a cache file,
# every handle's connection to it is closed (_release) and the next query reads the file now on disk.
_OPEN: weakref.WeakSet[Store] = weakref.WeakSet()


def _file_id(path: Path) -> tuple[int, int, int] | None:
    """Which file is at `path` now (device, inode, mtime), to tell whether another process replaced it."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_mtime_ns


def _release(cache_path: Path) -> None:
    """Close every connection of this process to the cache file `cache_path` (each handle reopens it on use).
    A handle that gave its connection out (`Export.con`) holds a whole cache, which nothing replaces."""
    for handle in list(_OPEN):
        if handle.cache_path == cache_path and handle._private is None:  # a private copy is the handle's own
            handle.close_connection()


@functools.lru_cache(maxsize=1)
def _on_first_use() -> frozenset[str]:
    """The normalized tables a first open leaves out (importer.built_on_first_use)."""
    return frozenset(q.name for q in catalog.group("normalize.nsys3") if importer.built_on_first_use(q))


_MISSING = re.compile(r'(?:Table|View) with name "?(\w+)"? does not exist')


def _missing_relation(exc: duckdb.CatalogException) -> str | None:
    """The table or view a DuckDB catalog error says does not exist."""
    m = _MISSING.search(str(exc))
    return m.group(1) if m else None


def unpack_xz(path: Path, directory: Path) -> Path:
    """Decompress an .sqlite.xz export into `directory` once (keyed by the .xz file's identity). CacheUnwritable
    when `directory` cannot take the copy (read-only, full)."""
    import lzma

    inputs.regular_file(path)
    target = directory / f"{inputs.safe_name(path.name[:-3].removesuffix('.sqlite'))}-{cache_key(path, 'xz')}.sqlite"
    if target.exists():
        return target
    try:
        src = lzma.open(path)
    except OSError as exc:
        raise NsysqlError(f"{path}: cannot read ({exc.strerror or exc})") from None
    with src:
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".unpacking-{owner_tag()}-", dir=directory)
        except OSError as exc:
            raise CacheUnwritable(exc.strerror or str(exc)) from None
        try:
            with os.fdopen(fd, "wb") as dst:
                head = src.read(len(importer.SQLITE_MAGIC))
                if head != importer.SQLITE_MAGIC:  # named as the user's .xz, and nothing kept in the cache
                    raise NsysqlError(f"{path} unpacks to something that is not a SQLite file; compress the "
                                      ".sqlite export itself (nsys export --type sqlite REPORT.nsys-rep, then xz)")
                dst.write(head)
                shutil.copyfileobj(src, dst, 1 << 20)
            _publish(tmp, target)
        except (lzma.LZMAError, EOFError):  # EOFError: a truncated .xz (an interrupted copy)
            raise NsysqlError(f"{path} is not a valid .xz file (damaged or truncated?); decompress it yourself "
                              f"(xz -dk {path})") from None
        except OSError as exc:  # writing the copy: a full disk
            raise CacheUnwritable(exc.strerror or str(exc)) from None
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    return target


def _publish(tmp: str, target: Path) -> None:
    """Put the finished copy `tmp` at `target` unless another process put its copy there first: that one stays
    (its mtime is part of the cache key the other processes computed from it)."""
    try:
        os.link(tmp, target)
    except FileExistsError:
        return
    except OSError:  # a file system without hard links: the copy replaces any other (the same bytes)
        if not target.exists():
            os.replace(tmp, target)
