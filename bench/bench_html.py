"""How fast the HTML report comes up in a browser: page size and, per load, first paint and the page's own marks.

    python bench/bench_html.py [EXPORT ...] [--loads 3] [--workdir DIR]

Writes each page with `nsysql html` (default: the GPT fixture and the FSDP fixture, as docs/decisions.md compares
them), then opens it from file:// `--loads` times in one headless Chromium (Debian's chromium and chromedriver,
through selenium, with the browser tests' flags: no network), and reads from the page, in ms since navigation:
first-contentful-paint, and the marks nsysql/answers/report_assets/report.js sets (`nsysql-tables`: text and
tables drawn; `nsysql-plotly`: Plotly inflated and evaluated; `nsysql-charts`: every chart drawn). Prints
Markdown with the machine and the date. The first load is cold; the later ones reuse the browser's caches.
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = [ROOT / "fixtures" / "gpt-tiny-train-annotated" / "export.sqlite.xz",
           ROOT / "fixtures" / "fsdp-2gpu-torchrun" / "export.sqlite.xz"]
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--window-size=1280,800")
MARKS = ("nsysql-tables", "nsysql-plotly", "nsysql-charts")


def load_times(driver, page: Path, timeout_s: float = 60.0) -> dict[str, float]:
    """One load of `page`: first paint and the page's marks, ms since navigation (waits for the last mark)."""
    driver.get(page.resolve().as_uri())
    deadline = time.monotonic() + timeout_s
    while not driver.execute_script("return performance.getEntriesByName('nsysql-charts').length"):
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
    ap.add_argument("exports", nargs="*", type=Path, default=DEFAULT)
    ap.add_argument("--loads", type=int, default=3)
    ap.add_argument("--workdir", type=Path)
    args = ap.parse_args()
    chromium, chromedriver = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chromium and chromedriver):
        raise SystemExit("needs Debian's chromium and chromium-driver (apt-get install chromium chromium-driver)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    work = args.workdir or Path(tempfile.mkdtemp(prefix="nsysql-bench-html-"))
    work.mkdir(parents=True, exist_ok=True)
    pages = []
    for export in args.exports:
        page = work / f"{export.parent.name}.html"
        env = dict(os.environ, NSYSQL_AHEAD="off", NSYSQL_CACHE_DIR=str(work / "cache"))
        subprocess.run([sys.executable, "-m", "nsysql", "html", str(export), "-o", str(page)], check=True, env=env)
        pages.append(page)
    options = webdriver.ChromeOptions()
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={work / 'profile'}")
    options.binary_location = chromium
    driver = webdriver.Chrome(options=options, service=Service(chromedriver))
    try:
        rows = [(page, [load_times(driver, page) for _ in range(args.loads)]) for page in pages]
        version = driver.capabilities.get("browserVersion", "?")
    finally:
        driver.quit()
    print(f"{platform.node()}, {os.cpu_count()} cores, {platform.python_version()}, headless Chromium {version}, "
          f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, load average "
          f"{os.getloadavg()[0]:.1f}; ms since navigation, load 1 (cold) / 2 / 3 ...\n")
    print("| page | size | first paint | tables drawn | Plotly ready | all charts drawn |")
    print("|---|---:|---|---|---|---|")
    for page, loads in rows:
        cells = [" / ".join(f"{t.get(k, float('nan')):.0f}" for t in loads) for k in ("paint", *MARKS)]
        print(f"| {page.stem} | {page.stat().st_size / 1e6:.2f} MB | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
