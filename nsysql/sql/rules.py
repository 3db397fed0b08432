"""NVIDIA's expert rules (`nsys analyze -r RULE`), each one SQL file under queries/rules/: their options.

A rule's options are its header's params, each `$name TYPE default VALUE (what it means)`:

    -- params: $gap BIGINT default 500 (...), $rows BIGINT default 50 (...)

The option names are NVIDIA's (`gap`, `threshold`, `chunks`, `rows`), given as `--gap 500` on the command line
and `gap=500` to `Export.analyze`."""
from __future__ import annotations

from nsysql.errors import NsysqlError
from nsysql.sql import catalog


def names() -> list[str]:
    return [q.name for q in catalog.group("rules")]


def query(rule: str) -> catalog.Query:
    if f"rules.{rule}" not in catalog.all_queries():
        raise NsysqlError(f"no rule named {rule!r}; `nsysql rules` lists them")
    return catalog.get(f"rules.{rule}")


def options(rule: str) -> dict[str, catalog.Param]:
    """The rule's options in header order, with NVIDIA's defaults (each a whole number)."""
    return {p.name: p for p in query(rule).params}


def params(rule: str, given: dict) -> dict[str, int]:
    """Every option's value: the given ones (None = not given) over the defaults; an unknown one is an error."""
    known = options(rule)
    unknown = sorted(k for k, v in given.items() if k not in known and v is not None)
    if unknown:
        raise NsysqlError(f"rule {rule} has no option {', '.join(unknown)}; its options: "
                          f"{', '.join(known) or 'none'}")
    values = {name: int(o.default) for name, o in known.items()}  # type: ignore[call-overload]
    values.update({k: int(v) for k, v in given.items() if v is not None})
    for name, value in values.items():  # thresholds, counts and sizes; rows takes -1 for "all", as NVIDIA's
        lowest = -1 if name == "rows" else 0
        if value < lowest:
            raise NsysqlError(f"rule {rule}: `{name}=` must be {lowest} or more, not {value}")
    return values
