"""How fast the HTML report comes up in a browser: page size and, per load, first paint and the page's own marks.

    python bench/bench_html.py [EXPORT ...] [--loads 3] [--workdir DIR [--reuse]]

Writes each page with `nsysql html` (default: every fixture in fixtures/ that has steps, as `nsysql steps` finds
them, not the GPU's active span), then opens it from file:// `--loads` times in one headless Chromium (Debian's
chromium and chromedriver, through selenium, with the browser tests' flags: no network), and reads from the page,
in ms since navigation: first-contentful-paint, and the marks nsysql/answers/report_assets/report.js sets
(`nsysql-tables`: text and tables drawn; `nsysql-preview`: the step-time chart painted as a plain SVG picture;
`nsysql-plotly`: Plotly inflated and evaluated; `nsysql-first-chart`: the first interactive chart painted;
`nsysql-charts`: every chart drawn, the timeline last). Prints Markdown with the machine,
the date and the load, and each page's size, build time and the steps it carries. The first load is cold; the later
ones reuse the browser's caches. Targets (issue 46): every page <= 5 MB, the first chart <= 2 s.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--window-size=1280,800")
MARKS = ("nsysql-tables", "nsysql-preview", "nsysql-plotly", "nsysql-first-chart", "nsysql-charts")


def with_steps(cache: Path) -> list[Path]:
    """The fixtures whose exports have steps (an NVTX range or a level nsysql takes as the step); `cache`: the
    pages' cache, so each fixture is read once."""
    import nsysql
    out = []
    for export in sorted(FIXTURES.glob("*/export.sqlite.xz")):
        with nsysql.open(export, cache_dir=cache) as ex:
            steps = ex.steps()
        if steps.height and (steps["source"] != "gpu_span").any():
            out.append(export)
    return out


def load_times(driver, page: Path, timeout_s: float = 120.0) -> dict[str, float]:
    """One load of `page`: first paint and the page's marks, ms since navigation (waits for the last mark)."""
    from selenium.common.exceptions import TimeoutException
    print(f"loading {page.name}", file=sys.stderr, flush=True)
    driver.get(page.resolve().as_uri())
    deadline = time.monotonic() + timeout_s
    while True:
        try:  # a page drawing a large chart keeps its renderer busy: the script waits its turn
            if driver.execute_script("return performance.getEntriesByName('nsysql-charts').length"):
                break
        except TimeoutException:
            pass
        if time.monotonic() > deadline:
            raise SystemExit(f"{page}: the charts were not drawn in {timeout_s:.0f} s")
        time.sleep(0.05)
    got = driver.execute_script(
        "const p = performance.getEntriesByName('first-contentful-paint')[0];"
        "const out = {paint: p ? p.startTime : null};"
        "for (const m of arguments[0]) out[m] = performance.getEntriesByName(m)[0].startTime;"
        "return out;", list(MARKS))
    return {k: float(v) for k, v in got.items() if v is not None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("exports", nargs="*", type=Path)
    ap.add_argument("--loads", type=int, default=3)
    ap.add_argument("--workdir", type=Path)
    ap.add_argument("--reuse", action="store_true", help="keep the pages already written in --workdir (and their "
                    "build times): time the browser only")
    args = ap.parse_args()
    chromium, chromedriver = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chromium and chromedriver):
        raise SystemExit("needs Debian's chromium and chromium-driver (apt-get install chromium chromium-driver)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    work = args.workdir or Path(tempfile.mkdtemp(prefix="nsysql-bench-html-"))
    work.mkdir(parents=True, exist_ok=True)
    pages = []
    built: dict[Path, tuple[float, str]] = {}
    os.environ["NSYSQL_AHEAD"] = "off"  # nothing answered ahead behind the timings
    kept = json.loads((work / "built.json").read_text()) if args.reuse and (work / "built.json").exists() else {}
    for export in args.exports or with_steps(work / "cache"):
        name = export.parent.name if export.name.startswith("export.") else export.name.split(".")[0]
        page = work / f"{name}.html"
        if page.name in kept and page.exists():
            built[page] = (kept[page.name][0], kept[page.name][1])
            pages.append(page)
            continue
        env = dict(os.environ, NSYSQL_AHEAD="off", NSYSQL_CACHE_DIR=str(work / "cache"))
        t0 = time.monotonic()
        made = subprocess.run([sys.executable, "-m", "nsysql", "html", str(export), "-o", str(page)], check=True,
                              env=env, capture_output=True, text=True)
        line = made.stderr.strip().splitlines()[-1] if made.stderr.strip() else ""
        carried = line[line.find("timelines of ") + len("timelines of "):].rstrip(")") if "timelines of " in line else "-"
        built[page] = (time.monotonic() - t0, carried)
        print(f"built {page.name}: {line}", file=sys.stderr, flush=True)
        pages.append(page)
        (work / "built.json").write_text(json.dumps({p.name: v for p, v in built.items()}))
    options = webdriver.ChromeOptions()
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={work / 'profile'}")
    options.binary_location = chromium
    driver = webdriver.Chrome(options=options, service=Service(chromedriver))
    driver.set_script_timeout(120)
    try:
        rows = [(page, [load_times(driver, page) for _ in range(args.loads)]) for page in pages]
        version = driver.capabilities.get("browserVersion", "?")
    finally:
        driver.quit()
    print(f"{platform.node()}, {os.cpu_count()} cores, {platform.python_version()}, headless Chromium {version}, "
          f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, load average "
          f"{os.getloadavg()[0]:.1f}; ms since navigation, load 1 (cold) / 2 / 3 ...\n")
    print("| page | size | build s | timelines carried | first paint | tables drawn | first chart (SVG) | Plotly ready "
          "| first Plotly chart | all charts drawn |")
    print("|---|---:|---:|---|---|---|---|---|---|---|")
    for page, loads in rows:
        cells = [" / ".join(f"{t.get(k, float('nan')):.0f}" for t in loads) for k in ("paint", *MARKS)]
        seconds, carried = built[page]
        shown = "-" if seconds != seconds else f"{seconds:.1f}"  # nan: kept by --reuse without its build time
        print(f"| {page.stem} | {page.stat().st_size / 1e6:.2f} MB | {shown} | {carried} | " + " | ".join(cells)
              + " |")
    worst = max((page.stat().st_size for page, _ in rows), default=0)
    def first(t: dict) -> float:  # the first chart on screen: the SVG picture, else the first Plotly chart
        return t.get("nsysql-preview", t.get("nsysql-first-chart", float("inf")))
    slowest = max((first(t) for _, loads in rows for t in loads), default=0)
    plotly = max((t.get("nsysql-first-chart", float("inf")) for _, loads in rows for t in loads), default=0)
    print(f"\nlargest page {worst / 1e6:.2f} MB (target 5 MB); slowest first chart {slowest:.0f} ms (target 2000 ms), "
          f"first Plotly chart {plotly:.0f} ms")


if __name__ == "__main__":
    main()
