"""Write an nsys SQLite export as a parquetdir in nsys's layout, for benchmarks and tests.

    python bench/parquetdir_of.py IN.sqlite OUT_DIR [--tables NVTX_EVENTS,StringIds ...]

One `<TABLE>.parquet` per table of the export, with the SQLite table's name, columns and column order, its rows in
rowid order (as `nsys export --type parquetdir` writes them), each file written by DuckDB. Two differences from
nsys's own files (Nsight Systems 2025.3.1, ../shared/samples/ddp-2gpu/formats): integers are BIGINT where nsys
writes narrower and unsigned types, and NVTX_EVENTS.binaryData (NVTX payloads, `--include-blobs=true`) is BLOB
where nsys declares text. Empty tables are left out, as nsys does by default (`--lazy=true`). The input is opened
read-only; OUT_DIR must not exist.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def convert(src: Path, out: Path, tables: set[str] | None = None) -> list[str]:
    """Write `src`'s tables (or only `tables`) to `out`; returns the tables written."""
    from nsysql.sql.engine import connect, quote_ident, quote_literal
    out.mkdir(parents=False)
    con = connect(":memory:", with_sqlite=True)
    con.execute(f"ATTACH {quote_literal(str(src.resolve()))} AS s (TYPE sqlite, READ_ONLY)")
    names = [r[0] for r in con.execute(
        "SELECT name FROM sqlite_scan($p, 'sqlite_master') WHERE type = 'table' ORDER BY name",
        {"p": str(src.resolve())}).fetchall()]
    written = []
    for name in names:
        if tables is not None and name not in tables:
            continue
        if not con.execute(f"SELECT count(*) FROM sqlite_query('s', {quote_literal(f'SELECT 1 FROM {name} LIMIT 1')})"
                           ).fetchone()[0]:
            continue  # empty: nsys writes no file
        columns = [r[0] for r in con.execute(f"DESCRIBE s.{quote_ident(name)}").fetchall()]
        if name == "NVTX_EVENTS" and "binaryData" in columns:
            # the scanner refuses blobs in a TEXT column: SQLite's hex() reads them, unhex() makes them bytes again
            listed = ", ".join("unhex(h.binaryHex) AS binaryData" if c == "binaryData" else f"t.{quote_ident(c)}"
                               for c in columns)
            source = (f"SELECT {listed} FROM (SELECT rowid AS rid, * FROM s.NVTX_EVENTS) AS t LEFT JOIN "
                      "sqlite_query('s', 'SELECT rowid AS rid, hex(binaryData) AS binaryHex FROM NVTX_EVENTS "
                      "WHERE binaryData IS NOT NULL') AS h USING (rid) ORDER BY t.rid")
            columns_sql = source
        else:
            columns_sql = (f"SELECT {', '.join(quote_ident(c) for c in columns)} FROM s.{quote_ident(name)} "
                           "ORDER BY rowid")
        target = out / f"{name}.parquet"
        con.execute(f"COPY ({columns_sql}) TO {quote_literal(str(target))} (FORMAT parquet, COMPRESSION zstd)")
        written.append(name)
    con.close()
    return written


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("src", type=Path)
    p.add_argument("out", type=Path)
    p.add_argument("--tables", default=None, help="comma-separated table names (default: every table)")
    a = p.parse_args()
    if a.out.exists():
        sys.exit(f"{a.out} exists; give a new folder")
    written = convert(a.src, a.out, set(a.tables.split(",")) if a.tables else None)
    print(f"{len(written)} tables written to {a.out}")


if __name__ == "__main__":
    main()
