"""Every output format in one place: csv, table, json, parquet, markdown.

Machine formats (`csv`, `json`, `parquet`) keep every value exact: integers in `_ns` / `bytes` columns as
NVIDIA stores them, floats the way `nsys stats` prints them — a column's header says how many decimals
(`| 1`), and the double is rounded half-up on its exact decimal value, as SQLite's round() does, so CSV
output matches NVIDIA's digit for digit.

Formats for people (`table`, `markdown`) show each column in its unit, read from the query's SQL header
(`name | type | unit [| decimals]`, see nsysql/sql/catalog.py):

- `ns` (a duration) -> one time unit per column (s, ms, µs or ns, chosen from the column's typical value; the
  columns of one `unit_groups` entry share one unit);
- `ns timestamp` (an instant on the export's clock) -> ms since the capture's first event (`origin`, the same
  time origin as `nsysql plot timeline`: analysis._plot_window);
- `bytes` -> B, KB, MB or GB (10^3 steps) per column; `GB/s`, `10^9 bytes/s` -> GB/s; `pct` -> %;
- `count` and other numbers -> thousands separators; `id`, `index`, `position` -> plain;
- text -> shortened in the middle with `…` to fit the width (tables only; markdown keeps it whole).

`table` output never folds a cell: it fits the width (`table_width()`) by shortening text, then by dropping
the columns the command marks optional (one line says how many and that `--wide` shows them); numbers are
never cut. `max_rows` shows the first rows and one line saying how many more there are.
"""
from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import shutil
import sys
import textwrap
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import polars as pl

from nsysql.core.formats import Format
from nsysql.errors import NsysqlError

DEFAULT_WIDTH = 100          # table width when stdout is not a terminal and $COLUMNS is not set
TABLE_ROWS = 40              # rows a command with possibly huge output shows in `table` format
MORE_HINT = "-f csv, or -f parquet -o FILE, for all"
GAP = "  "                   # between table columns
TEXT_SOFT_MIN = 20           # text columns are shortened to this before optional columns are dropped
TEXT_HARD_MIN = 10           # ... and to this (or their header) when the optional columns are gone


# -- exact values: csv, json ------------------------------------------------------------------------
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
    return "".join(csv_chunks(df, decimals))


CSV_CHUNK_ROWS = 100_000


def csv_chunks(df: pl.DataFrame, decimals: dict[str, int]) -> Iterable[str]:
    """The CSV text in pieces: the header, then lines of up to CSV_CHUNK_ROWS rows. Cells are as `cell_text`
    writes them and quoted as Python's csv module does (QUOTE_MINIMAL, "\\n" line ends); the lines are built by
    Polars column by column, so 1.7M kernel rows take seconds, not a Python call per cell."""
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(df.columns)
    yield buf.getvalue()
    if df.width == 1:  # csv.writer quotes a lone empty field ("") so that the line is not blank: keep its rules
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerows(text_rows(df, decimals))
        yield buf.getvalue()
        return
    cells = [_csv_cells(df.get_column(c), decimals.get(c)) for c in df.columns]
    for offset in range(0, df.height, CSV_CHUNK_ROWS):
        chunk = df.slice(offset, CSV_CHUNK_ROWS).select(pl.concat_str(cells, separator=",").alias("line"))
        yield "\n".join(chunk.get_column("line").to_list()) + "\n"


def _csv_cells(col: pl.Series, decimals: int | None) -> pl.Expr:
    """The column's CSV cells as an expression: null -> '', then `cell_text`, quoted where csv.writer would."""
    name, dtype = col.name, col.dtype
    value = pl.col(name)
    if dtype == pl.Boolean:
        return pl.when(value).then(pl.lit("true")).when(value.not_()).then(pl.lit("false")).otherwise(pl.lit(""))
    if dtype.is_integer():
        return value.cast(pl.String).fill_null("")
    if dtype != pl.String:  # floats (decimals from the header), Decimal, lists: cell_text itself, per value
        value = value.map_elements(lambda v: cell_text(v.to_list() if isinstance(v, pl.Series) else v, decimals),
                                   return_dtype=pl.String, skip_nulls=True)
    quoted = pl.lit('"') + value.str.replace_all('"', '""', literal=True) + pl.lit('"')
    return pl.when(value.str.contains(r'[,"\n]')).then(quoted).otherwise(value).fill_null("")


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


# -- column meaning ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Meta:
    """What the renderer needs to know of a column: its unit text (as in a catalog header) and decimals.
    `catalog.Column` has the same two fields and can be passed wherever a Meta is."""
    name: str
    unit: str = ""
    decimals: int | None = None


_ID_NAME = re.compile(r"(?:^|_)(?:id|ids|pid|tid|idx|seq|rank|step|device|stream|devid|correlation)$",
                      re.IGNORECASE)


def column_meta(columns) -> dict[str, object]:
    """Column metadata by name, from a result's header (catalog Columns), Metas, a dict, or a query id
    (`"analysis.steps"`: only the summary's sections still name their query instead of passing its header)."""
    if columns is None:
        return {}
    if isinstance(columns, str):
        from nsysql.sql import catalog
        columns = catalog.get(columns).columns
    if isinstance(columns, Mapping):
        return dict(columns)
    return {c.name: c for c in columns}


def header_decimals(meta: Mapping[str, object]) -> dict[str, int]:
    """The decimals each float column prints with, as the header gives them."""
    return {n: d for n, m in meta.items() if (d := getattr(m, "decimals", None)) is not None}


def column_kind(name: str, dtype: pl.DataType, meta=None) -> str:
    """One of: text, flag, duration, timestamp, bytes, bandwidth, pct, count, id, number."""
    if dtype == pl.Boolean:
        return "flag"
    if not dtype.is_numeric():
        return "text"
    unit = (getattr(meta, "unit", "") or "").strip().lower()
    if not unit:  # no header (nsysql sql, a frame made in Python): ids plain, other numbers grouped
        return "id" if _ID_NAME.search(name) else "number"
    words = unit.replace("(", " ").split()
    first = words[0] if words else ""
    if first == "ns":
        return "timestamp" if len(words) > 1 and words[1] == "timestamp" else "duration"
    if first == "bytes":
        return "bytes"
    if first == "gb/s" or unit.startswith("10^9 bytes/s"):
        return "bandwidth"
    if first == "pct":
        return "pct"
    if first in ("id", "index", "position"):
        return "id"
    if first == "count":
        return "count"
    return "number"


def _unit_label(kind: str, meta) -> str:
    """The unit a people-format header shows for columns whose values are not rescaled."""
    unit = (getattr(meta, "unit", "") or "").strip()
    if kind == "bandwidth":
        return "GB/s"
    if kind == "pct":
        return "%"
    if unit.startswith("10^12 FLOP/s"):
        return "TFLOP/s"
    if unit.startswith("10^9 floating-point operations"):
        return "GFLOP"
    if unit.split(" ")[0] == "MB":
        return "MB"
    return ""


_UNIT_SUFFIX = {"duration": ("_ns", "(ns)"), "timestamp": ("_ns", "(ns)"), "bytes": ("", "(bytes)"),
                "pct": ("_pct", "(%)")}


def _label(name: str, kind: str, unit: str) -> str:
    """Column name without the unit it carries (`wall_ns` -> `wall`, `busy_pct` -> `busy`, `Avg (ns)` -> `Avg`,
    `Time (%)` -> `Time`); `total_bytes` stays (shown in KB/MB/GB), as do names that are only a unit (`pct`)."""
    suffix, paren = _UNIT_SUFFIX.get(kind, ("", ""))
    if unit and f"({unit})" in name:
        paren = f"({unit})"
    if paren and paren in name:
        return name.replace(paren, "").replace("  ", " ").strip() or name
    if suffix and name.endswith(suffix) and len(name) > len(suffix):
        return name[: -len(suffix)]
    return name


# -- values for people ------------------------------------------------------------------------------
_TIME_UNITS = (("s", 1e9, 3), ("ms", 1e6, 3), ("µs", 1e3, 1), ("ns", 1.0, 0))
_BYTE_UNITS = (("GB", 1e9, 2), ("MB", 1e6, 1), ("KB", 1e3, 1), ("B", 1.0, 0))


def _typical(values: Iterable) -> float:
    """The median magnitude of the non-zero values: a column's unit follows its typical value, so that one
    outlier does not turn every other cell into 0.00x."""
    mags = sorted(abs(float(v)) for v in values if v is not None and v != 0 and not _nonfinite(v))
    return mags[len(mags) // 2] if mags else 0.0


def time_unit(values: Iterable) -> tuple[str, float, int]:
    """One unit for a column of nanosecond durations. Returns (unit, ns per unit, decimals).

    From the typical (median non-zero) magnitude: s from 10 s, ms from 0.1 ms, µs from 1 µs, else ns; then
    one unit up while the largest value would need six integer digits and the typical one still shows two
    significant digits in the larger unit (a 6 s total among 20 µs ones: 6,001.944 ms and 0.020 ms)."""
    values = [v for v in values if v is not None and not _nonfinite(v)]
    typical = _typical(values)
    top = max((abs(float(v)) for v in values), default=0.0)
    i = 0 if typical >= 1e10 else 1 if typical >= 1e5 or typical == 0 else 2 if typical >= 1e3 else 3
    while i > 0:
        _, scale, _ = _TIME_UNITS[i]
        _, up, up_decimals = _TIME_UNITS[i - 1]
        if top / scale >= 1e5 and typical / up >= 10.0 ** (1 - up_decimals):
            i -= 1
        else:
            break
    return _TIME_UNITS[i]


def byte_unit(values: Iterable) -> tuple[str, float, int]:
    """One unit (GB, MB, KB or B; 10^3 steps) for a column of byte counts, from its typical magnitude."""
    typical = _typical(values)
    for unit in _BYTE_UNITS:
        if typical >= unit[1]:
            return unit
    return _BYTE_UNITS[-1]


def scaled(value, scale: float, decimals: int) -> str:
    """`value / scale` with `decimals` places and thousands separators; a non-zero value that would print as
    zero prints as `<0.001` (so that 300 ns in a ms column is not mistaken for nothing)."""
    if value is None:
        return ""
    x = value / scale if scale != 1 else value
    text = number(x, decimals)
    if _nonfinite(value):
        return text
    if value != 0 and decimals and not any(ch in "123456789" for ch in text):
        tiny = "0." + "0" * (decimals - 1) + "1"
        return f"<{tiny}" if value > 0 else f">-{tiny}"
    return text


def number(value, decimals: int = 0) -> str:
    """A number with thousands separators and a fixed number of decimals (half-up, as `fixed`)."""
    if decimals and isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return str(value)
        value = Decimal(value).quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP)
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return str(value)
    text = f"{value:,.{decimals}f}"
    return "0" + text[2:] if text.startswith("-0") and not any(ch in "123456789" for ch in text) else text


def _auto_decimals(values: list) -> int:
    """Decimals for floats without a header: about four significant digits of the largest."""
    top = max((abs(float(v)) for v in values if v is not None and not _nonfinite(v)), default=0.0)
    if top == 0:
        return 1
    return max(0, min(6, 3 - math.floor(math.log10(top))))


def _nonfinite(v) -> bool:
    return isinstance(v, float) and (math.isnan(v) or math.isinf(v))


def _plain_text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return re.sub(r"[\r\n\t]+", " ", str(value))


_KERNEL_NAMES = {"kernel", "kernel_name", "kernel name", "before_op", "after_op"}


def is_kernel_column(name: str, meta=None) -> bool:
    """Columns of demangled kernel names (by name, or `demangled` in the header's unit text)."""
    return name.lower() in _KERNEL_NAMES or "demangled" in (getattr(meta, "unit", "") or "").lower()


def compact_kernel(name: str) -> str:
    """A demangled kernel name without `void `, its argument list and its template arguments (`<…>`):
    `void at::native::vectorized_elementwise_kernel<4, ...>(int, T3)` ->
    `at::native::vectorized_elementwise_kernel<…>`. Used only for kernel names too long for their column."""
    text = name.removeprefix("void ")
    if text.endswith(")"):  # drop the trailing, balanced (...) argument list
        depth = 0
        for i in range(len(text) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(text[i], 0)
            if depth == 0:
                text = text[:i]
                break
    out, depth = [], 0
    for ch in text:
        if ch == "<":
            if depth == 0:
                out.append("<…>")
            depth += 1
        elif ch == ">" and depth:
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out).strip() or name


def _last_name(name: str) -> str:
    """A compacted kernel name without its namespaces: `at::native::<…>::softmax<…>` -> `softmax<…>`."""
    depth, cut = 0, 0
    for i, ch in enumerate(name):
        depth += {"<": 1, ">": -1}.get(ch, 0)
        if depth == 0 and name.startswith("::", i):
            cut = i + 2
    return name[cut:] or name


@dataclass
class Shown:
    """One column ready for people: label, unit, cells as text, and whether it is a number (right-aligned)."""
    name: str
    label: str
    unit: str
    cells: list[str]
    numeric: bool
    kind: str
    kernel: bool = False
    head: list[str] = field(default_factory=list)   # the label on one or two lines (table header)
    soft: int | None = None                          # text kept this wide before optional columns go

    def __post_init__(self):
        self.head = self.head or [self.label]
        self.content = max([len(self.unit)] + [len(x) for x in self.cells])  # widest cell or unit
        self._common: str | None = None

    def cell(self, row: int, width: int) -> str:
        """The cell of `row` in at most `width` characters: kernel names compacted first (then without their
        namespaces), then any text shortened in the middle."""
        text = self.cells[row]
        if len(text) <= width or self.numeric:
            return text
        if self.name in ("export", "on_export"):  # exports' labels: what tells them apart is after their shared start
            if self._common is None:
                self._common = text[:shared_start(self.cells)]
            cut = len(self._common)
            if cut and len(text) > cut:
                text = ("…" if width > len(text) - cut else "") + text[cut:]
        if self.kernel:
            text = compact_kernel(text)
            if len(text) > width:
                text = _last_name(text)
        elif "/" in text:  # a path (layer, range path): what tells two rows apart is usually one component
            return shorten_path(text, width)
        return middle(text, width)

    def wrap_label(self) -> None:
        """Put a label wider than the column's values on two lines, split at `_` or a space."""
        if len(self.label) <= self.content:
            return
        best = None
        for i, ch in enumerate(self.label):
            if ch in "_ " and 0 < i < len(self.label) - 1:
                parts = [self.label[:i], self.label[i + 1:]]
                if any(len(p) < 3 and p.lower() != "id" for p in parts):  # not `gb` over `per_s`
                    continue
                if best is None or max(map(len, parts)) < max(map(len, best)):
                    best = parts
        if best:
            self.head = best

    @property
    def heading(self) -> str:
        """One-line header (markdown): `wall (ms)`."""
        return f"{self.label} ({self.unit})" if self.unit else self.label


def _origins(df: pl.DataFrame, origin) -> list | None:
    """Per-row time origin: one int for every row, or by the row's `export` label (several exports)."""
    if origin is None:
        return None
    if isinstance(origin, Mapping):
        if "export" not in df.columns:
            return None
        return [origin.get(e) for e in df["export"].to_list()]
    return [origin] * df.height


def people_columns(df: pl.DataFrame, columns=None, decimals: dict[str, int] | None = None,
                   origin=None, unit_groups: Sequence[Sequence[str]] = ()) -> list[Shown]:
    """Every column of `df` formatted for people (see the module doc). Duration or byte columns named together
    in one of `unit_groups` share one unit (chosen from all their values): columns that add up or are compared
    (fprop/bprop/optim/total; Avg/Med/Min/Max)."""
    meta = column_meta(columns)
    decimals = decimals or {}
    origins = _origins(df, origin)
    shared: dict[str, list] = {}  # column -> the values its unit is chosen from
    for group in unit_groups:
        names = [n for n in group if n in df.columns]
        pooled = [v for n in names for v in df[n].to_list()]
        shared.update({n: pooled for n in names})
    out = []
    for name, dtype in zip(df.columns, df.dtypes):
        m = meta.get(name)
        kind = column_kind(name, dtype, m)
        values = df[name].to_list()
        dec = decimals.get(name, getattr(m, "decimals", None))
        unit = ""
        if kind == "text":
            cells = [_plain_text(v) for v in values]
        elif kind == "flag":
            cells = ["" if v is None else ("true" if v else "false") for v in values]
        elif kind == "duration":
            unit, scale, dec = time_unit(shared.get(name, values))
            cells = [scaled(v, scale, dec) for v in values]
        elif kind == "timestamp" and origins is not None:
            unit = "ms"
            cells = ["" if v is None or o is None else number((v - o) / 1e6, 3) for v, o in zip(values, origins)]
        elif kind == "timestamp":  # no origin known: the export's own nanoseconds
            unit = "ns"
            cells = ["" if v is None else str(v) for v in values]
        elif kind == "bytes":
            unit, scale, dec = byte_unit(shared.get(name, values))
            cells = [scaled(v, scale, dec) for v in values]
        elif kind == "id":
            cells = ["" if v is None else (number(v, dec) if isinstance(v, float) and dec is not None else str(v))
                     for v in values]
        else:  # count, pct, bandwidth, number
            unit = _unit_label(kind, m)
            if dtype.is_float() or dtype == pl.Decimal:
                if dec is None:
                    dec = _auto_decimals(values)
                cells = [scaled(float(v) if dtype.is_float() and v is not None else v, 1, dec) for v in values]
            else:
                cells = ["" if v is None else number(v) for v in values]
        out.append(Shown(name, _label(name, kind, unit), unit, cells, kind not in ("text", "flag"), kind,
                         kind == "text" and is_kernel_column(name, m)))
    return out


# -- width, colour ----------------------------------------------------------------------------------
def table_width(output: Path | str | None = None, stream=None, errors=None) -> int:
    """The width tables are fitted to: the terminal's when writing to one, else $COLUMNS if set, else (stdout piped
    into `less` or `head` from a terminal: stderr is still that terminal) the terminal's, else 100."""
    stream = stream or sys.stdout
    if output is None and _isatty(stream):
        try:
            return os.get_terminal_size(stream.fileno()).columns
        except (OSError, ValueError, AttributeError):
            return shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns
    env = os.environ.get("COLUMNS", "")
    if env.strip().isdigit() and int(env) > 0:
        return int(env)
    errors = errors or sys.stderr
    if output is None and _isatty(errors):  # `nsysql layers x | less` in an 80-column terminal: 80, not 100
        try:
            return os.get_terminal_size(errors.fileno()).columns
        except (OSError, ValueError, AttributeError):
            pass
    return DEFAULT_WIDTH


def use_color(output: Path | str | None = None, stream=None) -> bool:
    """Colour only on a terminal (and not with $NO_COLOR)."""
    return output is None and _isatty(stream or sys.stdout) and not os.environ.get("NO_COLOR")


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def middle(text: str, width: int) -> str:
    """`text` shortened to `width` characters by an ellipsis in the middle (start and end both kept)."""
    if len(text) <= width:
        return text
    if width <= 1:
        return "…"[:width]
    head = (width - 1 + 1) // 2
    tail = width - 1 - head
    return text[:head] + "…" + (text[-tail:] if tail else "")


def shorten_path(text: str, width: int) -> str:
    """A `/`-separated path in `width` characters. First whole middle components give way to one `…` (the longest
    first; never the first component, a numbered one such as `layer_12`, or the last) until the rest fits whole;
    then a numbered middle that repeats the number of a numbered component before it (`layers.3` under
    `layer_3`: the annotated module inside the user's range); failing that, components are shortened one by one,
    the longest first (a numbered one keeps its number). So
    `warmup/layer_0/attention_sublayer/scaled_dot_product_attention/…/computing softmax` reads
    `warmup/layer_0/…/computing softmax`, and `forward_pass/layer_0/…/attn` and its layer_1 twin stay two different,
    readable lines where a single ellipsis in the middle would cut both to the same text."""
    if len(text) <= width:
        return text
    # cut once, in one pass, before the per-component work below (quadratic in the text): a 1 MiB range name
    # is shown as quickly as a short one, its start and end kept
    text = middle(text, bounded(width))
    parts = text.split("/")
    numbers = [m.group() if (m := _NUMBERED.search(p)) else None for p in parts]
    plain = sorted((i for i in range(1, len(parts) - 1) if numbers[i] is None), key=lambda i: (-len(parts[i]), -i))
    repeated = [i for i in range(1, len(parts) - 1) if numbers[i] is not None and numbers[i] in numbers[:i]]
    droppable = plain + sorted(repeated, key=lambda i: -i)
    dropped: set[int] = set()
    for i in droppable:
        dropped.add(i)
        kept = _kept(parts, dropped)
        if len("/".join(kept)) <= width:
            return "/".join(kept)
    fitted = _fit_components(_kept(parts, dropped), width, 4)
    return fitted if fitted is not None else middle(text, width)


def bounded(width: int) -> int:
    """The longest text the shortening routines work on for a `width`-character cell: a longer one is first cut
    in the middle to this, so that their cost depends on the width, never on the text."""
    return max(4 * width, 64)


def _kept(parts: list[str], dropped: set[int]) -> list[str]:
    """The components not dropped, each run of dropped ones as one `…`."""
    out: list[str] = []
    for i, part in enumerate(parts):
        if i not in dropped:
            out.append(part)
        elif i - 1 not in dropped:
            out.append("…")
    return out


def _fit_components(parts: list[str], width: int, shortest: int) -> str | None:
    """`parts` joined by `/` in `width` characters, shortening the longest component first (a numbered one only
    when nothing else is left, keeping its number; the last after others of its length), none below `shortest`
    characters; None when they cannot fit so."""
    last = len(parts) - 1
    floor = [min(len(x), shortest) for x in parts]
    if sum(floor) + last > width:
        return None
    lengths = [len(x) for x in parts]
    while sum(lengths) + last > width:
        i = min((j for j in range(len(parts)) if lengths[j] > floor[j]),
                key=lambda j: (bool(_NUMBERED.search(parts[j])), -lengths[j], j == last))
        lengths[i] -= 1
    return "/".join(x if n == len(x) else "…" + x[1 - n:] if _NUMBERED.search(x) else middle(x, n)
                    for x, n in zip(parts, lengths))


_NUMBERED = re.compile(r"\d+$")


def shared_start(labels: Sequence[str]) -> int:
    """How many characters every one of several exports' `labels` starts with, up to a whole word (`run-rank0`,
    `run-rank1`: 4, leaving `rank0`), 0 when that is 3 or fewer: what tells them apart is after it."""
    names = [x for x in labels if x]
    common = os.path.commonprefix(names) if len(set(names)) > 1 else ""
    cut = max(common.rfind(ch) for ch in "-_./ ") + 1 if common else 0
    return cut if cut > 3 else 0


# -- fitting ------------------------------------------------------------------------------------------
def _natural(c: Shown) -> int:
    return max(c.content, *map(len, c.head))


def _minimum(c: Shown, floor: int) -> int:
    nat = _natural(c)
    if c.numeric:
        return nat
    return min(nat, max(len(c.unit), c.soft if floor == TEXT_SOFT_MIN and c.soft else floor, *map(len, c.head)))


def _shrink(cols: list[Shown], width: int, floor: int) -> list[int] | None:
    """Column widths fitting `width` by narrowing text columns (the widest first, down to their minimum),
    or None when they cannot."""
    widths = [_natural(c) for c in cols]
    if sum(widths) + len(GAP) * (len(cols) - 1) <= width:
        return widths
    mins = [_minimum(c, floor) for c in cols]
    text = [i for i, c in enumerate(cols) if not c.numeric]
    budget = width - len(GAP) * (len(cols) - 1) - sum(w for i, w in enumerate(widths) if i not in text)
    if sum(mins[i] for i in text) > budget:
        return None

    def used(level: int) -> int:
        return sum(min(widths[i], max(mins[i], level)) for i in text)

    lo, hi = 0, max(widths[i] for i in text)
    while lo < hi:  # the highest common cap that fits
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if used(mid) <= budget else (lo, mid - 1)
    out = list(widths)
    for i in text:
        out[i] = min(widths[i], max(mins[i], lo))
    spare = budget - used(lo)
    for i in text:  # what is left after the cap, one character each, left to right
        if spare and out[i] < widths[i]:
            out[i] += 1
            spare -= 1
    return out


def fit(cols: list[Shown], width: int, optional: Sequence[str | tuple[str, ...]] = (), wide: bool = False,
        text_min: Mapping[str, int] | None = None) -> tuple[list[Shown], list[int], list[str]]:
    """(columns shown, their widths, names of the optional columns hidden) for a table `width` wide.
    `optional` holds column names, or tuples of names hidden together (`("a_count", "b_count")`).

    Labels wider than their values go on two lines first, then text is shortened (to TEXT_SOFT_MIN, or the
    column's `text_min`), then optional columns are dropped (empty ones first, then in the order given), then
    text is shortened further (TEXT_HARD_MIN). Numbers are never shortened; when even that cannot fit, the
    table is wider than `width`. With `wide`, every column at its full width."""
    if wide or not cols:
        return cols, [_natural(c) for c in cols], []
    for c in cols:
        c.soft = (text_min or {}).get(c.name)
    widths = [_natural(c) for c in cols]
    if sum(widths) + len(GAP) * (len(cols) - 1) <= width:
        return cols, widths, []
    for c in cols:
        c.wrap_label()
    shown = list(cols)
    hidden: list[str] = []
    present = {c.name for c in cols}
    order = [[n for n in ((o,) if isinstance(o, str) else o) if n in present] for o in optional]
    order = [o for o in order if o]
    empty = {c.name for c in cols if not any(c.cells)}  # optional columns with nothing in them go first
    order = [o for o in order if set(o) <= empty] + [o for o in order if not set(o) <= empty]
    while True:
        fitted = _shrink(shown, width, TEXT_SOFT_MIN)
        if fitted is not None:
            return shown, fitted, hidden
        if not order or len(shown) == 1:
            break
        names = [n for n in order.pop(0) if n not in hidden]
        shown = [c for c in shown if c.name not in names] or shown[:1]
        hidden += [n for n in names if n not in {c.name for c in shown}]
    fitted = _shrink(shown, width, TEXT_HARD_MIN)
    if fitted is None:
        fitted = [_minimum(c, TEXT_HARD_MIN) for c in shown]
    return shown, fitted, hidden


def _several_processes(df: pl.DataFrame) -> bool:
    """Whether the rows of one export come from several processes (`pid` column)."""
    if "pid" not in df.columns or df.height < 2:
        return False
    if "export" in df.columns:
        return bool((df.group_by("export").agg(pl.col("pid").n_unique().alias("n"))["n"] > 1).any())
    return df["pid"].n_unique() > 1


# -- table ---------------------------------------------------------------------------------------------
_BOLD, _DIM, _RESET = "\x1b[1m", "\x1b[2m", "\x1b[0m"


def to_table(df: pl.DataFrame, decimals: dict[str, int] | None = None, title: str | None = None, *,
             color: bool | None = None, width: int | None = None, columns=None,
             optional: Sequence[str | tuple[str, ...]] = (), origin=None, wide: bool = False,
             max_rows: int | None = None, more_hint: str | None = None, notes: Sequence[str] = (),
             text_min: Mapping[str, int] | None = None, unit_groups: Sequence[Sequence[str]] = ()) -> str:
    """`df` as a plain-text table for people, fitted to `width` (default: `table_width()`).

    columns: the columns' meaning (a query id, catalog Columns or Metas); without it numbers are only grouped.
    optional: names of columns that may be hidden to fit, the first hidden first (`--wide` shows them); a tuple
      of names is hidden together.
    origin: the capture's first event (ns) that `ns timestamp` columns count from; with several exports a dict
      {export label: origin} read through the `export` column.
    max_rows: show only the first rows and say how many more (`more_hint` says how to get them).
    notes: lines printed under the table.
    text_min: {column: width} text columns keep before optional columns are hidden (default TEXT_SOFT_MIN).
    unit_groups: lists of duration (or byte) columns shown in one shared unit, e.g. [["fprop_ns", "bprop_ns"]].
    """
    width = width or table_width()
    total = df.height
    if max_rows is not None and total > max_rows:
        df = df.head(max_rows)
    cols = people_columns(df, columns, decimals, origin, unit_groups)
    optional = list(optional)
    if "export" in df.columns and "rank" in df.columns:
        optional.insert(0, "rank")  # several exports: the rank is also in the export's label
    if _several_processes(df):  # each process numbers its own steps: the pid tells the rows apart, never hidden
        optional = [tuple(n for n in o if n != "pid") if isinstance(o, tuple) else o for o in optional if o != "pid"]
    shown, widths, hidden = fit(cols, width, optional, wide, text_min)

    def paint(text: str, style: str) -> str:
        return f"{style}{text}{_RESET}" if color and text else text

    def line(cells: list[str]) -> str:
        return GAP.join(cells).rstrip()

    lines = []
    if title:
        lines.append(paint(middle(title, max(width, 1)), _BOLD))
    if shown:
        depth = max(len(c.head) for c in shown)
        for k in range(depth):  # labels bottom-aligned: a two-line label starts one line higher
            parts = [([""] * (depth - len(c.head)) + c.head)[k] for c in shown]
            lines.append(paint(line([(p.rjust(w) if c.numeric else p.ljust(w))
                                     for p, c, w in zip(parts, shown, widths)]), _BOLD))
        if any(c.unit for c in shown):
            lines.append(paint(line([(c.unit.rjust(w) if c.numeric else c.unit.ljust(w))
                                     for c, w in zip(shown, widths)]), _BOLD))
        lines.append(paint(line(["─" * w for w in widths]), _DIM))
        for r in range(df.height):
            lines.append(line([c.cells[r].rjust(w) if c.numeric else c.cell(r, w).ljust(w)
                               for c, w in zip(shown, widths)]))
    if df.height == 0:
        lines.append("(no rows)")
    foot = []
    if total > df.height:
        foot.append(f"{total - df.height:,} more rows; {more_hint or MORE_HINT}")
    stamps = [c.label for c in shown if c.kind == "timestamp" and c.unit == "ms"]
    if stamps:
        foot.append(f"{', '.join(stamps)}: ms since the capture's first event")
    if hidden:
        n = len(hidden)
        what = f"{n} column{'s' if n > 1 else ''} hidden to fit {width} columns"
        full = f"{what} ({', '.join(hidden)}); --wide shows them"
        foot.append(full if len(full) <= width else f"{what}; --wide shows {'them' if n > 1 else 'it'}")
    foot += list(notes)
    for f in foot:  # sentences wrap (rarely: at a very narrow width), never beyond it
        lines += [paint(part, _DIM) for part in (textwrap.wrap(f, width, subsequent_indent="  ") or [""])]
    return "\n".join(lines) + "\n"


# -- markdown ------------------------------------------------------------------------------------------
def to_markdown(df: pl.DataFrame, decimals: dict[str, int] | None = None, *, columns=None, origin=None,
                unit_groups: Sequence[Sequence[str]] = ()) -> str:
    """`df` as a GitHub markdown table, in human units like `table` (`wall (ms)`), text in full."""
    def esc(s: str) -> str:
        return s.replace("|", "\\|").replace("\n", " ")
    cols = people_columns(df, columns, decimals, origin, unit_groups)
    lines = ["| " + " | ".join(esc(c.heading) for c in cols) + " |",
             "| " + " | ".join("---:" if c.numeric else "---" for c in cols) + " |"]
    lines += ["| " + " | ".join(esc(c.cells[r]) for c in cols) + " |" for r in range(df.height)]
    stamps = [c.label for c in cols if c.kind == "timestamp" and c.unit == "ms"]
    if stamps:
        lines += ["", f"_{', '.join(stamps)}: ms since the capture's first event_"]
    return "\n".join(lines) + "\n"


# -- one entry point -----------------------------------------------------------------------------------
def emit(df: pl.DataFrame, fmt: Format, *, columns: Iterable | None = None, output: Path | None = None,
         title: str | None = None, optional: Sequence[str | tuple[str, ...]] = (), origin=None, wide: bool = False,
         max_rows: int | None = None, more_hint: str | None = None, notes: Sequence[str] = (),
         text_min: Mapping[str, int] | None = None, unit_groups: Sequence[Sequence[str]] = (), query=None) -> None:
    """Write `df` in `fmt` to `output` (or stdout). Parquet needs an output file.

    `query` (a catalog.Query): its header gives the columns and the presentation hints (`optional:`, `text-min:`,
    `unit-groups:`) that are not given here.

    `columns` is the result's header, as its query file declares it (`catalog.Query.columns`: name, type, unit,
    decimals); the renderer takes units and decimals from it and looks nothing up. Without it (ad-hoc SQL) numbers
    are only grouped. csv/json/parquet keep exact values, table/markdown show human units (see to_table for
    `optional`, `origin`, `wide`, `max_rows`)."""
    if query is not None:
        columns = query.columns if columns is None else columns
        optional = optional or query.optional
        text_min = {**query.text_min, **(text_min or {})}
        unit_groups = unit_groups or query.unit_groups
    meta = column_meta(columns)
    decimals = header_decimals(meta)
    if fmt is Format.parquet:
        if output is None:
            raise NsysqlError("parquet output is binary; give a file: `output='FILE.parquet'`")
        df.write_parquet(output)
        return
    if fmt is Format.csv:  # written in pieces: a 1.7M-row table is never one string
        if output is None:
            sys.stdout.writelines(csv_chunks(df, decimals))
        else:
            with Path(output).open("w", encoding="utf-8", newline="") as f:
                f.writelines(csv_chunks(df, decimals))
        return
    if fmt is Format.json:
        text = to_json(df, decimals)
    elif fmt is Format.markdown:
        text = to_markdown(df, decimals, columns=meta, origin=origin, unit_groups=unit_groups)
    else:
        text = to_table(df, decimals, title, color=use_color(output), width=table_width(output), columns=meta,
                        optional=optional, origin=origin, wide=wide, max_rows=max_rows, more_hint=more_hint,
                        notes=notes, text_min=text_min, unit_groups=unit_groups)
    write_text(text, output)


def write_text(text: str, output: Path | str | None = None) -> None:
    """`text` to the file `output`, or to stdout."""
    if output is None:
        sys.stdout.write(text)
    else:
        Path(output).write_text(text, encoding="utf-8")


def human_format(fmt: Format) -> bool:
    """Whether `fmt` is for people (table, markdown): only then is a time origin worth looking up."""
    return fmt in (Format.table, Format.markdown)


def wrap_note(text: str) -> str:
    """A note for stderr wrapped at the terminal's width, later lines indented, a number never parted from its
    unit (`-37.41 ms`)."""
    import shutil
    import textwrap
    width = max(shutil.get_terminal_size((100, 24)).columns, 40)
    glued = re.sub(r"(\d) (ns|µs|ms|s|%)(?=\W|$)", "\\1\u00a0\\2", text)
    lines = textwrap.wrap(glued, width, subsequent_indent="  ", break_on_hyphens=False)
    return "\n".join(lines).replace("\u00a0", " ")
