"""Every output format in one place: csv, table, json, parquet, markdown.

Floats print the way `nsys stats` prints them: a column's header says how many decimals
(`| 1`), and the double is rounded half-up on its exact decimal value, as SQLite's round()
does, so CSV output matches NVIDIA's digit for digit.
"""
from __future__ import annotations

import csv
import io
import json
import sys
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import polars as pl

from .errors import NsysqlError
from .formats import Format


def fixed(value: float, decimals: int) -> str:
    """`value` rounded half-up to `decimals` places, always printing them (12.25 -> '12.3')."""
    q = Decimal(1).scaleb(-decimals)
    return str(Decimal(value).quantize(q, rounding=ROUND_HALF_UP))


def cell_text(value, decimals: int | None) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        if decimals is not None:
            return fixed(value, decimals)
        return repr(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def text_rows(df: pl.DataFrame, decimals: dict[str, int]) -> list[list[str]]:
    cols = df.columns
    return [[cell_text(v, decimals.get(c)) for c, v in zip(cols, row)] for row in df.iter_rows()]


def to_csv(df: pl.DataFrame, decimals: dict[str, int]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(df.columns)
    w.writerows(text_rows(df, decimals))
    return buf.getvalue()


def to_markdown(df: pl.DataFrame, decimals: dict[str, int]) -> str:
    def esc(s: str) -> str:
        return s.replace("|", "\\|").replace("\n", " ")
    numeric = [dt.is_numeric() for dt in df.dtypes]
    lines = ["| " + " | ".join(esc(c) for c in df.columns) + " |",
             "| " + " | ".join("---:" if n else "---" for n in numeric) + " |"]
    lines += ["| " + " | ".join(esc(c) for c in row) + " |" for row in text_rows(df, decimals)]
    return "\n".join(lines) + "\n"


def to_json(df: pl.DataFrame, decimals: dict[str, int]) -> str:
    rows = []
    for row in df.iter_rows(named=True):
        out = {}
        for c, v in row.items():
            if isinstance(v, float) and c in decimals:
                v = float(fixed(v, decimals[c]))
            out[c] = v
        rows.append(out)
    return json.dumps(rows, indent=1, default=str) + "\n"


def to_table(df: pl.DataFrame, decimals: dict[str, int], title: str | None = None, *, color: bool | None = None,
             width: int | None = None) -> str:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    numeric = [dt.is_numeric() for dt in df.dtypes]
    table = Table(title=title, show_lines=False, header_style="bold")
    for c, n in zip(df.columns, numeric):
        table.add_column(c, justify="right" if n else "left", overflow="fold")
    for row in text_rows(df, decimals):
        table.add_row(*(escape(cell) for cell in row))  # `[CUDA memcpy ...]` is data, not rich markup
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=bool(color), color_system="auto" if color else None,
                      width=width or 200, no_color=not color)
    console.print(table)
    return buf.getvalue()


def emit(df: pl.DataFrame, fmt: Format, *, decimals: dict[str, int] | None = None, output: Path | None = None,
         title: str | None = None) -> None:
    """Write `df` in `fmt` to `output` (or stdout). Parquet needs an output file."""
    decimals = decimals or {}
    if fmt is Format.parquet:
        if output is None:
            raise NsysqlError("parquet output is binary; give a file with -o FILE.parquet")
        df.write_parquet(output)
        return
    if fmt is Format.csv:
        text = to_csv(df, decimals)
    elif fmt is Format.json:
        text = to_json(df, decimals)
    elif fmt is Format.markdown:
        text = to_markdown(df, decimals)
    else:
        tty = output is None and sys.stdout.isatty()
        width = None
        if tty:
            import shutil
            width = shutil.get_terminal_size().columns
        text = to_table(df, decimals, title, color=tty, width=width)
    if output is None:
        sys.stdout.write(text)
    else:
        Path(output).write_text(text, encoding="utf-8")
