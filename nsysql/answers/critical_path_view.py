"""How `nsysql critical-path` and `nsysql what-if` show their frames to a person: the column headers with units, the
columns that hold something, and the lines under the table (what bounds the steps, the top items, the mean change)."""
from __future__ import annotations

import polars as pl

from nsysql.answers.critical_path import COLUMNS, bound_line
from nsysql.core import units
from nsysql.present.render import shared_start, wrap_note
from nsysql.sql.catalog import Column

TOP_ITEMS = 5
_NS = {"wall_ns", "path_ns", "measured_ns", "predicted_ns", *COLUMNS}
_IDS = {"step": "index", "pid": "id", "on_pid": "id"}


def header(df: pl.DataFrame) -> list[Column]:
    out = []
    for name in df.columns:
        if name in _NS:
            out.append(Column(name, "BIGINT", "ns"))
        elif name in ("start_ns", "end_ns"):
            out.append(Column(name, "BIGINT", "ns timestamp"))
        elif name == "change_pct":
            out.append(Column(name, "DOUBLE", "pct", 1))
        elif name in _IDS:
            out.append(Column(name, "BIGINT", _IDS[name]))
        else:
            out.append(Column(name, "VARCHAR", "text"))
    return out


def composition_table(comp: pl.DataFrame, for_people: bool) -> tuple[pl.DataFrame, list[Column]]:
    """For people: path_ns (always the wall time) and the kinds that are 0 in every step left out."""
    if for_people:
        comp = comp.drop("path_ns").drop([c for c in COLUMNS if comp[c].sum() == 0])
    return comp, header(comp)


ITEM_OPTIONAL = ("layer", "pid", "step")  # what a narrow terminal hides first in the items table
ITEM_TEXT_MIN = {"name": 24}


def items_table(items: pl.DataFrame, for_people: bool) -> tuple[pl.DataFrame, list[Column]]:
    """For people: the duration instead of the end (start + duration say it), and a job's two export columns
    without the start their labels share (the title names them in full), leaving room for the items' names."""
    if for_people:
        items = items.with_columns((pl.col("end_ns") - pl.col("start_ns")).alias("dur_ns")).drop("end_ns")
        _NS.add("dur_ns")
        labels = [c for c in ("export", "on_export") if c in items.columns]
        cut = shared_start([v for c in labels for v in items[c].unique().to_list()])
        if cut:
            items = items.with_columns(pl.col(c).str.slice(cut) for c in labels)
    return items, header(items)


def summary_lines(comp: pl.DataFrame, items: pl.DataFrame) -> list[str]:
    """What bounds the steps on average, and the items holding the most of the path, mean per step."""
    import shutil
    width = max(shutil.get_terminal_size((100, 24)).columns, 40)
    steps = comp.height
    lines = [""]
    line = bound_line(comp, items)
    if line:
        mean = units.duration(int(comp["wall_ns"].mean())) if steps else "-"  # type: ignore[arg-type]
        ranks = comp.select([c for c in ("export", "pid") if c in comp.columns]).unique().height \
            if {"export", "pid"} & set(comp.columns) else 1
        numbers = comp["step"].n_unique()
        over = f"{numbers} step{'s' if numbers != 1 else ''}" + (f" x {ranks} ranks" if ranks > 1 else "")
        lines += wrap_note(f"Mean step {mean} over {over}, {line[len('the step is '):]}").split("\n")
    top = (items.with_columns((pl.col("end_ns") - pl.col("start_ns")).alias("ns"))
                .group_by("kind", "name").agg(pl.col("ns").sum())
                .sort(["ns", "name"], descending=[True, False]).head(TOP_ITEMS))
    if top.height:
        lines.append("Most of the path (mean per step):")
        for row in top.iter_rows(named=True):
            share = 100 * row["ns"] / comp["path_ns"].sum()
            text = f"  {units.duration(row['ns'] // max(steps, 1)):>8} {share:3.0f}%  {row['kind']:<13} "
            lines.append(text + _cut(row["name"], max(width - len(text), 10)))
    return lines


def what_if_table(df: pl.DataFrame, for_people: bool) -> tuple[pl.DataFrame, list[Column]]:
    if for_people:
        df = df.with_columns((100 * (pl.col("predicted_ns") - pl.col("measured_ns")) / pl.col("measured_ns"))
                             .alias("change_pct"))
    return df, header(df)


def what_if_lines(df: pl.DataFrame) -> list[str]:
    measured = int(df["measured_ns"].mean())  # type: ignore[arg-type]
    predicted = int(df["predicted_ns"].mean())  # type: ignore[arg-type]
    change = 100 * (predicted - measured) / measured if measured else 0.0
    return ["", *wrap_note(f"Mean step: {units.duration(measured)} measured, {units.duration(predicted)} predicted "
                           f"({change:+.1f}%).").split("\n")]


def matched_lines(df: pl.DataFrame, scales: list) -> list[str]:
    """What each scale matched, mean per step over the rows of `df` (step_times' `matched` column): items (what an
    item is: what_if.ITEMS) and the time the factor applies to.

      Matched, mean per step of 8:
        range:dataloader=0            1 span          62.9 ms
    """
    from nsysql.answers.what_if import ITEMS
    if not scales or "matched" not in df.columns or df.height == 0:
        return []
    rows = df.height
    lines = [f"Matched, mean per step of {rows}" + (" (each process's steps)" if "pid" in df.columns or
                                                   "export" in df.columns else "") + ":"]
    for k, sc in enumerate(scales):
        items = sum(m[k]["items"] for m in df["matched"])
        ns = sum(m[k]["ns"] for m in df["matched"])
        each = items / rows
        count = f"{each:,.0f}" if each == int(each) or each >= 100 else f"{each:,.1f}"
        noun = ITEMS[sc.target][0 if count == "1" else 1]
        if not items and not ns:
            lines.append(f"  {_cut(str(sc), 38):<38} none in these steps")
            continue
        lines.append(f"  {_cut(str(sc), 38):<38} {count:>7} {noun:<13} {units.duration(ns // rows):>9}")
    return lines


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[:max(width - 1, 1)] + "…"
