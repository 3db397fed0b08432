"""The header contract's version rule (docs/query-headers.md): a query's columns change only with its version.

queries/headers.lock pins, per query id, its version and its column signature (each column's name, type and unit,
the unit without its parenthesised remark; decimals are presentation and not pinned). This script, run by
scripts/check.sh, parses every header strictly (nsysql/sql/catalog.py) and compares:

    python scripts/check_headers.py            # fails when a header and the lock disagree, saying what to do
    python scripts/check_headers.py --update   # rewrites the lock; refuses while a changed query keeps its version

A query whose columns changed needs its `vN` raised (then --update); a new or removed query, or a version raised,
only needs --update. Exit status 1 on any failure.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from nsysql.sql import catalog  # noqa: E402  (after the path, so a source checkout needs no install)

LOCK = ROOT / "queries" / "headers.lock"


def signature(q: catalog.Query) -> list[str]:
    """One `name | TYPE | unit` per column, the unit without its parenthesised remark."""
    return [f"{c.name} | {c.type} | {c.unit.split(' (', 1)[0].strip()}" for c in q.columns]


def current() -> dict[str, dict]:
    return {qid: {"version": q.version, "columns": signature(q)} for qid, q in sorted(catalog.all_queries().items())}


def problems(locked: dict[str, dict], now: dict[str, dict]) -> tuple[list[str], list[str]]:
    """(changes that need a version raised, changes that only need the lock rewritten)."""
    bump, stale = [], []
    for qid, entry in now.items():
        old = locked.get(qid)
        if old is None:
            stale.append(f"{qid}: new query, not in the lock")
        elif entry["version"] < old["version"]:
            bump.append(f"{qid}: version went down from v{old['version']} to v{entry['version']}")
        elif entry["columns"] != old["columns"] and entry["version"] == old["version"]:
            gone = [c for c in old["columns"] if c not in entry["columns"]]
            came = [c for c in entry["columns"] if c not in old["columns"]]
            what = "; ".join(filter(None, [f"removed or changed {gone}" if gone else "",
                                           f"added or changed {came}" if came else ""])) or "order changed"
            bump.append(f"{qid}: columns changed ({what}) but the version is still v{entry['version']}: "
                        f"raise it to v{entry['version'] + 1} in the file's first line")
        elif entry != old:
            stale.append(f"{qid}: v{old['version']} -> v{entry['version']}")
    stale += [f"{qid}: removed" for qid in locked if qid not in now]
    return bump, stale


def write(now: dict[str, dict]) -> None:
    """One line per query, so a change shows as that query's line in a diff."""
    rows = [f"{json.dumps(qid)}: {json.dumps(entry, ensure_ascii=False)}" for qid, entry in now.items()]
    LOCK.write_text("{\n" + ",\n".join(rows) + "\n}\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--update", action="store_true", help="rewrite queries/headers.lock")
    args = parser.parse_args(argv)
    try:
        now = current()
    except catalog.HeaderError as exc:
        print(f"check_headers: {exc}", file=sys.stderr)
        return 1
    locked = json.loads(LOCK.read_text(encoding="utf-8")) if LOCK.exists() else {}
    bump, stale = problems(locked, now)
    for line in bump:
        print(f"check_headers: {line}", file=sys.stderr)
    if bump:
        return 1
    if args.update:
        write(now)
        print(f"check_headers: wrote {LOCK.relative_to(ROOT)} ({len(now)} queries)")
        return 0
    for line in stale:
        print(f"check_headers: {line}", file=sys.stderr)
    if stale:
        print("check_headers: queries/headers.lock is out of date; run python scripts/check_headers.py --update "
              "and commit it", file=sys.stderr)
        return 1
    print(f"check_headers: {len(now)} query headers parse and match queries/headers.lock")
    return 0


if __name__ == "__main__":
    sys.exit(main())
