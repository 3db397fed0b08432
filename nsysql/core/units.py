"""How a person reads a duration: one formatter for every line nsysql writes in words (summaries, findings, notes),
matched by the SQL macro that findings use inside queries (queries/macros/human_ns.sql; a test compares the two).
Tables of numbers choose one unit per column instead (nsysql/present/render.py)."""
from __future__ import annotations

NONE = "-"  # what a missing duration reads as

# (at least this many ns, divide by, decimals, unit): three significant digits, the unit chosen by size
_STEPS = ((1e11, 1e9, 0, "s"), (1e10, 1e9, 1, "s"), (1e9, 1e9, 2, "s"),
          (1e8, 1e6, 0, "ms"), (1e7, 1e6, 1, "ms"), (1e6, 1e6, 2, "ms"),
          (1e5, 1e3, 0, "µs"), (1e4, 1e3, 1, "µs"), (1e3, 1e3, 2, "µs"))


def duration(ns: float | None) -> str:
    """`1.23 s`, `412 ms`, `41.2 ms`, `4.12 ms`, `412 µs`, `41.2 µs`, `4.12 µs`, `412 ns`; `-` for None."""
    if ns is None:
        return NONE
    size = abs(float(ns))
    for floor, scale, decimals, unit in _STEPS:
        if size >= floor:
            return f"{ns / scale:.{decimals}f} {unit}"
    return f"{float(ns):.0f} ns"
