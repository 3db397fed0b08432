"""What a person's own SQL costs: `nsysql db` and every view of the file it writes, and `nsysql sql` over a few views.

    python bench/bench_views.py EXPORT.sqlite [--workdir DIR] [--nsysql BIN] [--top 20] [--sql-view top_ops ...]

Opens EXPORT once with `nsysql summarize` (not timed: the cache and its stored answers, as after a first look), then
times, each in a fresh process:
- `nsysql db EXPORT -o FILE` (wall, CPU, peak RSS);
- every view of FILE, `SELECT count(*) FROM (SELECT * FROM view)` on its own read-only connection with DuckDB's
  default threads, as the stock `duckdb` shell would run it (wall; the slowest --top are listed);
- `nsysql sql EXPORT "SELECT count(*) FROM view"` for each --sql-view (wall, CPU).
Give --nsysql to time another build of nsysql (e.g. a wrapper that runs an older tree). Prints Markdown with the
machine and date.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_commands import measured  # bench/ is on sys.path when a script of it runs

VIEW_TIMES = r"""
import json, sys, time, duckdb
con = duckdb.connect(sys.argv[1], read_only=True)
views = [r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal AND schema_name = 'main' "
                                   "AND NOT starts_with(view_name, '_') ORDER BY view_name").fetchall()]
con.close()
out = []
for v in views:
    con = duckdb.connect(sys.argv[1], read_only=True)  # a fresh connection: nothing cached from another view
    con.execute("SET enable_progress_bar = false")  # it would print to stdout, which carries the result
    t = time.perf_counter()
    rows = con.execute(f'SELECT count(*) FROM (SELECT * FROM "{v}")').fetchone()[0]
    out.append((v, time.perf_counter() - t, rows))
    con.close()
print(json.dumps(out))
"""


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("export", type=Path)
    p.add_argument("--workdir", type=Path, default=None)
    p.add_argument("--nsysql", default=str(Path(sys.executable).with_name("nsysql")))
    p.add_argument("--top", type=int, default=20, help="how many of the slowest views to list")
    p.add_argument("--sql-view", action="append", default=[],
                   help="a view to time through `nsysql sql` (default: top_ops, overview_gpus, step_breakdown)")
    a = p.parse_args()
    work = a.workdir or Path(tempfile.mkdtemp(prefix="nsysql-views-"))
    work.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, NSYSQL_CACHE_DIR=str(work / "cache-views"), COLUMNS="100")
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as bench_commands.py: no module compiled again in every process
    export = str(a.export)
    subprocess.run([a.nsysql, "summarize", export], env=dict(env, NSYSQL_AHEAD="foreground"),
                   stdout=subprocess.DEVNULL, check=True)
    print(f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}, {time.strftime('%Y-%m-%d %H:%M')}; export {a.export.name}\n")
    out = work / "views.duckdb"
    out.unlink(missing_ok=True)
    wall, cpu, rss = measured([[a.nsysql, "db", export, "-o", str(out)]], env)
    print(f"`nsysql db` (cache built): {wall:.2f} s wall, {cpu:.1f} CPU s, peak RSS {rss:,} MiB; "
          f"file {out.stat().st_size / 1e6:,.0f} MB\n")
    started = time.perf_counter()
    views = json.loads(subprocess.run([sys.executable, "-c", VIEW_TIMES, str(out)], capture_output=True, text=True,
                                      check=True).stdout)
    total = time.perf_counter() - started
    print(f"every public view of the file, one after another: {total:.1f} s wall ({len(views)} views)\n")
    print("| view | s | rows |\n|---|---:|---:|")
    for name, seconds, rows in sorted(views, key=lambda r: -r[1])[:a.top]:
        print(f"| {name} | {seconds:.2f} | {rows:,} |")
    print("\n| `nsysql sql` | wall s | CPU s |\n|---|---:|---:|")
    for view in a.sql_view or ["top_ops", "overview_gpus", "step_breakdown"]:
        wall, cpu, _ = measured([[a.nsysql, "sql", export, f"SELECT count(*) FROM {view}", "-f", "csv"]], env)
        print(f"| `SELECT count(*) FROM {view}` | {wall:.2f} | {cpu:.1f} |", flush=True)


if __name__ == "__main__":
    main()
