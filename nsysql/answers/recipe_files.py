"""NVIDIA's recipe files from a recipe's result (nsysql/answers/recipes.py): the Parquet files `nsys recipe NAME
--output DIR` writes (Nsight Systems 2025.3), with its column names, types, values and row order, and the `pandas`
key-value metadata pyarrow writes there, so that `pandas.read_parquet` gives the frame NVIDIA's notebooks read
(index included).

Written by DuckDB (no pandas or pyarrow here): each file one `COPY (SELECT ...) TO ... (FORMAT parquet,
KV_METADATA {pandas: ...})` over the result's frames. Which pandas index a frame has is pandas' own doing, written
down here: a frame whose rows NVIDIA filtered keeps a RangeIndex only where what was left is one block at either
end of the rows (pandas' RangeIndex.delete), and frames concatenated over ranks keep one only where each rank's
range continues the previous one (RangeIndex._concat); otherwise the index is a column, `__index_level_0__`.
"""
from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from nsysql.errors import NsysqlError
from nsysql.sql.engine import connect, quote_ident, quote_literal

PACE, HIST, UTIL = "pace", "hist", "util"  # RecipeResult.kind (nsysql/answers/recipes.py imports this module)
PANDAS_VERSION = "3.0.6"  # the pandas whose files these mirror (NVIDIA's recipe environment, nsys 2025.3.1)
PACE_COLUMNS = ("start", "end", "duration_accum", "delta_accum", "duration", "delta")
_TYPES = {"BIGINT": ("int64", "int64"), "DOUBLE": ("float64", "float64"), "VARCHAR": ("object", "str")}
_COLUMN_INDEX = [{"name": None, "field_name": None, "pandas_type": "unicode", "numpy_type": "str",
                  "metadata": {"encoding": "UTF-8"}}]


@dataclass(frozen=True)
class File:
    """One of NVIDIA's files: its name, the SELECT that gives its columns (names, types) and rows in order, over
    the tables `rows`, `files`, `stats` and `delta_stats`, and its pandas index: a range (start, stop, name), a
    column (its name), or none (NVIDIA wrote it with index=False)."""
    name: str
    select: str
    types: tuple[tuple[str, str], ...]  # (column, DuckDB type) in order, the index column included
    index: tuple | str | None

    def pandas(self, creator: str) -> str:
        """The `pandas` metadata pyarrow writes for this frame."""
        columns = []
        for col, typ in self.types:
            pandas_type, numpy_type = _TYPES[typ]
            shown = None if col == "__index_level_0__" else col
            columns.append({"name": shown, "field_name": col, "pandas_type": pandas_type, "numpy_type": numpy_type,
                            "metadata": None})
        if isinstance(self.index, tuple):
            start, stop, label = self.index
            index_columns: list = [{"kind": "range", "name": label, "start": start, "stop": stop, "step": 1}]
        else:
            index_columns = [self.index] if self.index else []
        meta = {"index_columns": index_columns, "column_indexes": _COLUMN_INDEX if self.index is not None else [],
                "columns": columns, "attributes": {}, "creator": {"library": "nsysql", "version": creator},
                "pandas_version": PANDAS_VERSION}
        return json.dumps(meta)


def _ident(name: str) -> str:
    return quote_ident(name)


def _files_file(n: int) -> File:
    return File("files.parquet", "SELECT file AS \"File\" FROM files ORDER BY rank", (("File", "VARCHAR"),),
                (0, n, "Rank"))


def pace_files(result: Any) -> list[File]:
    """files, stats, pace_<column> (one column per rank, one row per iteration) and pace_delta_stats."""
    n = len(result.files)
    floats = result.float_ranks
    longest = result.rows.group_by("rank").len()["len"].max()
    lengths = dict(result.rows.group_by("rank").len().iter_rows())
    out = [_files_file(n)]
    any_float = bool(floats)
    stat_type = "DOUBLE" if any_float else "BIGINT"
    stats_cols = [("Count", "count", "BIGINT"), ("Mean", "mean_ns", "DOUBLE"), ("Std (approx)", "std_ns", "DOUBLE"),
                  ("Min", "min_ns", stat_type), ("Q1 (approx)", "q1_ns", "DOUBLE"),
                  ("Median (approx)", "median_ns", "DOUBLE"), ("Q3 (approx)", "q3_ns", "DOUBLE"),
                  ("Max", "max_ns", stat_type), ("Sum", "sum_ns", stat_type)]
    index = result.recipe.index_name
    select = ", ".join(f"CAST({src} AS {typ}) AS {_ident(dst)}" for dst, src, typ in stats_cols)
    out.append(File("stats.parquet", f"SELECT {select}, name AS {_ident(index)} FROM stats ORDER BY name",
                    tuple((dst, typ) for dst, _, typ in stats_cols) + ((index, "VARCHAR"),), index))
    for col in PACE_COLUMNS:
        types = []
        parts = []
        for rank in range(n):
            is_float = (col != "start" and rank in floats) or lengths.get(rank, 0) < longest
            typ = "DOUBLE" if is_float else "BIGINT"
            types.append((str(rank), typ))
            parts.append(f"CAST(MAX({col}_ns) FILTER (WHERE rank = {rank}) AS {typ}) AS {_ident(str(rank))}")
        out.append(File(f"pace_{col}.parquet", f"SELECT {', '.join(parts)} FROM rows GROUP BY iteration "
                        "ORDER BY iteration", tuple(types), None))
    delta_cols = [("Count", "count"), ("Mean", "mean_ns"), ("Std", "std_ns"), ("Min", "min_ns"), ("Q1", "q1_ns"),
                  ("Median", "median_ns"), ("Q3", "q3_ns"), ("Max", "max_ns"), ("Sum", "sum_ns")]
    select = ", ".join(f"CAST({src} AS DOUBLE) AS {_ident(dst)}" for dst, src in delta_cols)
    out.append(File("pace_delta_stats.parquet", f"SELECT {select} FROM delta_stats ORDER BY iteration",
                    tuple((dst, "DOUBLE") for dst, _ in delta_cols), None))
    return out


def _rank_index(positions: list[int], total: int) -> tuple[int, int] | None:
    """A rank's pandas index after NVIDIA's filters: RangeIndex(start, stop) when the rows left are one block at
    the start or the end of the `total` rows, else None (an Int64 index)."""
    if not positions:
        return (0, 0)
    first, last = positions[0], positions[-1]
    if last - first + 1 == len(positions) and (first == 0 or last == total - 1):
        return (first, last + 1)
    return None


def _concat_index(ranges: list[tuple[int, int] | None]) -> tuple[int, int] | None:
    """pd.concat's index of the ranks' frames: one range when every rank's is a range continuing the previous one."""
    whole = [r for r in ranges if r is not None]
    if len(whole) < len(ranges):
        return None
    for (_, stop), (start, _) in zip(whole, whole[1:]):
        if start != stop:
            return None
    return (whole[0][0], whole[-1][1])


def analysis_file(result: Any) -> tuple[File, pl.DataFrame]:
    """analysis.parquet of the histogram and heatmap recipes, and the rows it reads (`rows` with its index)."""
    rows = result.rows
    if result.kind == HIST:
        ranges = [_rank_index(rows.filter(pl.col("rank") == k)["kernel_index"].to_list(), f["kernels"])
                  for k, f in enumerate(result.facts)]
        rows = rows.with_columns(pl.col("kernel_index").alias("row_index"))
        cols = [("Duration", "duration_ns", "BIGINT"), ("Name", "name", "VARCHAR"), ("Rank", "rank", "BIGINT")]
    else:
        rows = rows.with_columns(pl.int_range(pl.len()).over("rank").alias("row_index"))
        counts = [rows.filter(pl.col("rank") == k).height for k in range(len(result.files))]
        ranges = [(0, c) for c in counts]
        values = [("Kernel", "kernel_pct")] if "kernel_pct" in rows.columns else [
            ("All", "all_pct"), ("NCCL", "nccl_pct"), ("Compute", "compute_pct"), ("Overlap", "overlap_pct")]
        cols = [("Duration", "bin_start_ns", "BIGINT")] + [(d, s, "DOUBLE") for d, s in values] + [
            ("PID", "pid", "BIGINT"), ("Device ID", "device_id", "BIGINT"), ("Rank", "rank", "BIGINT")]
    whole = _concat_index(ranges)
    parts = [f"CAST({src} AS {typ}) AS {_ident(dst)}" for dst, src, typ in cols]
    types = [(dst, typ) for dst, _, typ in cols]
    index: tuple | str
    if whole is None:
        parts.append('CAST(row_index AS BIGINT) AS "__index_level_0__"')
        types.append(("__index_level_0__", "BIGINT"))
        index = "__index_level_0__"
    else:
        index = (whole[0], whole[1], None)
    order = "rank, row_index"
    return File("analysis.parquet", f"SELECT {', '.join(parts)} FROM rows ORDER BY {order}", tuple(types), index), rows


def nvidia_files(result: Any) -> tuple[list[File], dict[str, pl.DataFrame]]:
    """The files NVIDIA's recipe writes for `result`, and the tables their SELECTs read."""
    files = pl.DataFrame({"rank": range(len(result.files)), "file": result.files},
                         schema={"rank": pl.Int64, "file": pl.String})
    if result.kind == PACE:
        assert result.stats is not None and result.delta_stats is not None
        return pace_files(result), {"rows": result.rows, "files": files, "stats": result.stats,
                                    "delta_stats": result.delta_stats}
    if result.kind in (HIST, UTIL):
        analysis, rows = analysis_file(result)
        return [_files_file(len(result.files)), analysis], {"rows": rows, "files": files}
    raise NsysqlError(f"{result.recipe.name} writes no files")  # a bug: topdown never gets a result


def _version() -> str:
    """nsysql's version, for the files' `creator` (where pyarrow names itself)."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("nsysql")
    except PackageNotFoundError:
        return "unknown"


def write(result: Any, directory: Path, *, force: bool = False) -> list[Path]:
    """Write NVIDIA's files for `result` into `directory` (made if missing); an existing file of the same name is
    an error unless `force`. Returns the paths written, in NVIDIA's order."""
    files, tables = nvidia_files(result)
    directory.mkdir(parents=True, exist_ok=True)
    targets = [directory / f.name for f in files]
    there = [t.name for t in targets if t.exists()]
    if there and not force:
        raise NsysqlError(f"{directory}: {', '.join(there)} already there; `force=True` replaces them")
    con = connect()
    try:
        with tempfile.TemporaryDirectory(prefix="nsysql-recipe-") as tmp:
            for name, frame in tables.items():
                path = Path(tmp) / f"{name}.parquet"
                frame.write_parquet(path)
                con.execute(f"CREATE TEMP TABLE {quote_ident(name)} AS SELECT * FROM read_parquet($path)",
                            {"path": str(path)})
            for i, (f, target) in enumerate(zip(files, targets)):
                # COPY's file name cannot be a bound parameter: DuckDB writes a file of nsysql's naming, which is
                # then moved to the user's directory (no user text in the SQL)
                written = Path(tmp) / f"out-{i}.parquet"
                meta = quote_literal(f.pandas(_version()))
                con.execute(f"COPY ({f.select}) TO {quote_literal(str(written))} "
                            f"(FORMAT parquet, KV_METADATA {{pandas: {meta}}})")
                shutil.move(written, target)
    finally:
        con.close()
    return targets
