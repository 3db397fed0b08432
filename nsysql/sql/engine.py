"""DuckDB connections that never touch the network.

DuckDB would otherwise download the sqlite_scanner extension on first use. We load
the copy shipped by the `duckdb-extension-sqlite-scanner` wheel by path, with
automatic install/load switched off (docs/decisions.md).
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import duckdb
import polars as pl

from nsysql.core.owner import owner_tag
from nsysql.errors import NsysqlError

OFFLINE_CONFIG = {
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    # DuckDB runs an ASOF join as a nested loop when it expects at most 64 probe rows; its estimate for a CTE can
    # be that low while the real probe has 100k rows (quadratic: minutes at 1.7M kernels), so always sort-merge
    "asof_loop_join_threshold": 0,
}


def sqlite_scanner_path() -> Path:
    """The sqlite_scanner extension binary that matches the installed DuckDB."""
    try:
        import duckdb_extension_sqlite_scanner as ext
    except ImportError as exc:  # pragma: no cover - a broken install
        raise NsysqlError(
            "the duckdb-extension-sqlite-scanner package is missing; reinstall nsysql "
            "(pip install nsysql)") from exc
    wanted = Path(ext.__file__).parent / "extensions" / f"v{duckdb.__version__}" / "sqlite_scanner.duckdb_extension"
    if not wanted.is_file():
        found = sorted(p.parent.name for p in Path(ext.__file__).parent.glob("extensions/*/*.duckdb_extension"))
        raise NsysqlError(
            f"duckdb {duckdb.__version__} needs sqlite_scanner v{duckdb.__version__} but the installed "
            f"extension package has {', '.join(found) or 'none'}; install matching versions "
            f"(pip install 'duckdb=={duckdb.__version__}' 'duckdb-extension-sqlite-scanner=={duckdb.__version__}')")
    return wanted


MEMORY_ENV = "NSYSQL_MEMORY_LIMIT"
# DuckDB's own default is 80 % of RAM, which let `gaps` and `kernels` on a 1.7M-kernel export take 3-6 GB; under
# this cap it spills to its temp directory instead. 1.5 GB cost the first `summarize` of that export ~6 s of 32 s
# (bench_summarize: 32.3 s / 1.55 GB capped, 26.5 s / 1.46 GB uncapped), so the cap is set where it only stops
# the outliers (docs/performance-history.md).
DEFAULT_MEMORY_LIMIT_MB = 4000  # per statement running at once


def memory_limit(share: int = 1) -> str:
    """NSYSQL_MEMORY_LIMIT, else DEFAULT_MEMORY_LIMIT_MB for each of `share` statements running at once."""
    chosen = os.environ.get(MEMORY_ENV, "").strip()
    return chosen or f"{DEFAULT_MEMORY_LIMIT_MB * share}MB"


THREADS_ENV = "NSYSQL_THREADS"


def threads() -> int | None:
    """NSYSQL_THREADS: the threads DuckDB may use per statement (e.g. a Slurm job's share of a node, or 1 to time
    each stage's CPU, bench/bench_stages.py); unset, DuckDB uses every core."""
    wanted = os.environ.get(THREADS_ENV, "").strip()
    if not wanted:
        return None
    if not wanted.isdigit() or int(wanted) < 1:
        raise NsysqlError(f"{THREADS_ENV}={wanted!r} is not a positive whole number; use e.g. {THREADS_ENV}=4, "
                          "or unset it to use every core")
    return int(wanted)


def connect(database: str | Path = ":memory:", *, read_only: bool = False,
            with_sqlite: bool = False, share: int = 1) -> duckdb.DuckDBPyConnection:
    """Open DuckDB with extension auto-download disabled and nsysql's memory limit (`share`: how many
    statements will run at once on it, see nsysql/store/build_graph.py)."""
    limit = memory_limit(share)
    config: dict[str, str | bool | int | float | list[str]] = dict(OFFLINE_CONFIG, memory_limit=limit)
    if (wanted := threads()) is not None:
        config["threads"] = wanted
    if str(database) == ":memory:":
        # DuckDB would spill an in-memory database into ./.tmp, i.e. the user's working directory; use an
        # owner-tagged directory in TMPDIR instead, which the next run removes if this one is killed (hygiene)
        config["temp_directory"] = str(Path(tempfile.gettempdir()) / f"nsysql-{owner_tag()}-spill")
    try:
        con = duckdb.connect(str(database), read_only=read_only, config=config)
    except duckdb.Error as exc:
        if "memory" in str(exc).lower():
            raise NsysqlError(f"{MEMORY_ENV}={limit!r} is not a size DuckDB reads; use e.g. 1500MB or 8GB") from None
        raise
    # DuckDB draws a progress bar on stdout for a query that runs over 2 s, even on a pipe: into the answer of
    # `nsysql summarize -f json > out.json` on a loaded machine (a local setting: refused in the config)
    con.execute("SET enable_progress_bar = false")
    if with_sqlite:
        con.execute(f"LOAD {quote_literal(str(sqlite_scanner_path()))}")
    return con


def error_line(exc: duckdb.Error) -> str:
    """A DuckDB error as one line; running out of memory says which setting gives it more."""
    line = str(exc).splitlines()[0]
    if isinstance(exc, duckdb.OutOfMemoryException) or line.startswith("Out of Memory"):
        line += f" (raise the limit, e.g. {MEMORY_ENV}=8GB; now {memory_limit()})"
    return line


def quote_literal(text: str) -> str:
    """A SQL string literal; only for paths nsysql itself chose (never user input)."""
    return "'" + text.replace("'", "''") + "'"


def quote_ident(name: str) -> str:
    """A SQL identifier, quoted."""
    return '"' + name.replace('"', '""') + '"'


def to_polars(rel: duckdb.DuckDBPyRelation | None) -> pl.DataFrame:
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


