"""One way to say a duration: nsysql/core/units.py's `duration` and the SQL macro human_ns (which findings call
inside their queries) print every value the same, and the rule reads as documented."""
from __future__ import annotations

import random

import duckdb

from nsysql.core import units
from nsysql.sql import macros


def _sql(values: list[float]) -> list[str]:
    con = duckdb.connect()
    macros.install(con)
    return [con.execute("SELECT human_ns($x::DOUBLE)", {"x": x}).fetchone()[0] for x in values]


def test_python_and_sql_say_every_duration_the_same():
    rng = random.Random(7)
    values = [0.0, 1.0, 999.0, 999.4, 999.5, 1000.0, 9999.0, 99_999.0, 999_999.0, 1e6, 1e9, 1e10, 1e11, 3.6e12,
              -412.0, -4.12e4, -1.5e9]
    values += [rng.uniform(0, 10 ** rng.randint(1, 12)) for _ in range(2000)]
    values += [float(round(v)) for v in values[-500:]]  # whole nanoseconds, as the columns hold them
    python = [units.duration(v) for v in values]
    assert python == _sql(values)


def test_three_significant_digits_and_the_unit_by_size():
    cases = {1.5e9: "1.50 s", 2.5e8: "250 ms", 4.12e7: "41.2 ms", 4.126e6: "4.13 ms", 4.12e5: "412 µs",
             4.12e4: "41.2 µs", 4120.0: "4.12 µs", 412.0: "412 ns", 0.0: "0 ns", 1.25e10: "12.5 s", 3.6e12: "3600 s",
             -4.12e4: "-41.2 µs"}
    assert {x: units.duration(x) for x in cases} == cases
    assert units.duration(None) == "-"
    assert units.duration(41_200) == "41.2 µs"  # the example: one spelling, not "41.20 µs" or "41 µs"
