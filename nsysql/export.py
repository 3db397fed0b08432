"""An opened export: normalized tables in a cached DuckDB file, queries returning Polars."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import duckdb
import polars as pl

from . import catalog, importer
from .cache import cache_file, cache_key, default_cache_dir
from .engine import connect
from .errors import MissingDataError, NsysqlError

# normalized table -> (raw nsys table it comes from, nsys flag that produces it)
SOURCES = {
    "kernel": ("CUPTI_ACTIVITY_KIND_KERNEL", "--trace=cuda"),
    "runtime": ("CUPTI_ACTIVITY_KIND_RUNTIME", "--trace=cuda"),
    "memcpy": ("CUPTI_ACTIVITY_KIND_MEMCPY", "--trace=cuda (the program made no memory copies?)"),
    "memset": ("CUPTI_ACTIVITY_KIND_MEMSET", "--trace=cuda (the program made no memsets?)"),
    "sync": ("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "--trace=cuda"),
    "nvtx_range": ("NVTX_EVENTS", "--trace=nvtx"),
    "osrt": ("OSRT_API", "--trace=osrt"),
    "gpu": ("TARGET_INFO_GPU", "--trace=cuda"),
}


class Export:
    """One nsys SQLite export, opened read-only. Use `nsysql.open(path)`."""

    def __init__(self, path: str | os.PathLike, *, cache_dir: str | os.PathLike | None = None,
                 use_cache: bool = True):
        self.path = Path(path)
        self._tmpdir = None
        if use_cache:
            directory = Path(cache_dir).expanduser() if cache_dir else default_cache_dir()
            try:
                directory.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise NsysqlError(f"cannot create cache directory {directory} ({exc.strerror}); "
                                  "choose another with --cache-dir or NSYSQL_CACHE_DIR") from None
        else:
            self._tmpdir = tempfile.TemporaryDirectory(prefix="nsysql-nocache-")
            directory = Path(self._tmpdir.name)
        # The SQLite file actually read: the export itself, or an .xz export unpacked into the cache.
        self.source = unpack_xz(self.path, directory) if self.path.name.endswith(".xz") else self.path
        importer.check_sqlite_file(self.source)
        self.cache_path = (cache_file(directory, self.source, importer.views_version()) if use_cache
                           else directory / "export.duckdb")
        self.cache_hit = self.cache_path.exists()
        if not self.cache_hit:
            self._build(directory)
        self.con = connect(self.cache_path, read_only=True)
        self._tables = {r[0] for r in self.con.execute("SELECT raw_table FROM nsysql_tables").fetchall()}

    def _build(self, directory: Path) -> None:
        fd, tmp_name = tempfile.mkstemp(prefix=".building-", suffix=".duckdb", dir=directory)
        os.close(fd)
        os.unlink(tmp_name)  # DuckDB must create the file itself
        tmp = Path(tmp_name)
        try:
            importer.normalize(self.source, tmp)
            os.replace(tmp, self.cache_path)  # atomic: readers never see a half-built cache
        finally:
            for leftover in (tmp, Path(str(tmp) + ".wal")):
                if leftover.exists():
                    leftover.unlink()

    # -- plumbing ---------------------------------------------------------------------------
    def close(self) -> None:
        self.con.close()
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
        return raw is None or raw in self._tables

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
            rel = self.con.execute(sql, params or {})
        except duckdb.Error as exc:
            raise NsysqlError(str(exc).splitlines()[0]) from None
        return _to_polars(rel)

    def run(self, query_id: str, **params) -> pl.DataFrame:
        q = catalog.get(query_id)
        self.require(q.requires, q.id)
        df = self.sql(q.sql, q.bound_params(params))
        if q.columns and list(df.columns) != [c.name for c in q.columns]:
            raise NsysqlError(f"{q.path}: columns {df.columns} differ from its header")  # a bug, not user error
        return df

    def info(self) -> dict[str, str]:
        rows = self.con.execute("SELECT key, value FROM export_info UNION ALL SELECT key, value FROM nsysql_meta").fetchall()
        return dict(rows)

    # -- reports and building blocks -----------------------------------------------------------
    def report(self, name: str, **params) -> pl.DataFrame:
        """An `nsys stats`-identical report (see `nsysql.reports()`)."""
        if f"reports.{name}" not in catalog.all_queries():
            raise NsysqlError(f"no report named {name!r}; `nsysql reports` lists them")
        return self.run(f"reports.{name}", **params)

    def kernels(self) -> pl.DataFrame:
        """Every kernel with its launching API call (correlationId and process), in GPU start order."""
        return self.run("analysis.kernels")

    def ranges(self) -> pl.DataFrame:
        """NVTX ranges with depth, parent, full path and thread."""
        return self.run("analysis.ranges")

    def gpu_time_by_range(self) -> pl.DataFrame:
        """Per range name: NVIDIA's projected time, inclusive and exclusive GPU busy time, kernels."""
        return self.run("analysis.gpu_time_by_range")

    def launch_overhead(self) -> pl.DataFrame:
        """Per kernel launch: API, queue and kernel time."""
        return self.run("analysis.launch_overhead")

    def memcpy(self) -> pl.DataFrame:
        """Per copy kind and host memory kind: count, bytes, time, GB/s."""
        return self.run("analysis.memcpy")


def unpack_xz(path: Path, directory: Path) -> Path:
    """Decompress an .sqlite.xz export into `directory` once (keyed by the .xz file's identity)."""
    import lzma
    import shutil

    if not path.is_file():
        raise NsysqlError(f"{path}: no such file; give the .sqlite export (nsys export --type sqlite REPORT.nsys-rep)")
    target = directory / f"{path.name[:-3].removesuffix('.sqlite')}-{cache_key(path, 'xz')}.sqlite"
    if not target.exists():
        fd, tmp = tempfile.mkstemp(prefix=".unpacking-", dir=directory)
        try:
            with lzma.open(path) as src, os.fdopen(fd, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
            os.replace(tmp, target)
        except lzma.LZMAError:
            raise NsysqlError(f"{path} is not a valid .xz file; decompress it yourself (xz -dk {path})") from None
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    return target


def _to_polars(rel) -> pl.DataFrame:
    cols = [d[0] for d in rel.description]
    rows = rel.fetchall()
    if not rows:
        return pl.DataFrame({c: [] for c in cols})
    return pl.DataFrame(rows, schema=cols, orient="row", infer_schema_length=None)


