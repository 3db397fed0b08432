"""`nsysql html` in a real browser: headless Chromium through WebDriver (Selenium) opens the reports of the GPT
fixture, the DataLoader CNN and multi-rank exports from file:// and checks: no console error; every chart drawn
with a non-zero size; the numbers on the page equal `summarize -f json`'s (read back from the DOM); the timeline
shows the median step's GPU ops (counted against the raw rows) and zooms; no page-wide horizontal scroll at a
narrow width. A screenshot per report at 1280x800 and at 420 px wide goes to the test's tmp dir
(NSYSQL_REPORT_SCREENSHOT=path also writes the GPT one there: docs/img/report.png is made so).

Needs Chromium and its driver (Debian: apt-get install chromium chromium-driver; .ci/run installs them) and the
test extra's selenium; skips where either is missing. The page itself (no browser) is checked at the end."""
from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nsysql.cli.app import app
from nsysql.core.units import duration

from conftest import FIXTURES, REPO, unxz

# headless Chromium in CI: dealt out first under xdist (conftest.py)
pytestmark = pytest.mark.heavy

CASES = {
    "gpt": [FIXTURES / "gpt-tiny-train-annotated" / "export.sqlite.xz"],
    "cnn-dataloader": [FIXTURES / "cnn-dataloader-train" / "export.sqlite.xz"],
    "ddp-torchrun": [FIXTURES / "ddp-2gpu-torchrun" / "export.sqlite.xz"],
    "ddp-job": [FIXTURES / "ddp-2gpu-rank0" / "export.sqlite.xz", FIXTURES / "ddp-2gpu-rank1" / "export.sqlite.xz"],
}
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync")


def browser() -> tuple[str, str] | None:
    exe = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
    driver = shutil.which("chromedriver")
    return (exe, driver) if exe and driver else None


def make_report(tmp_path: Path, name: str) -> tuple[Path, dict]:
    """The page and summarize's JSON, for the exports named as a user in the repository would (fixtures/...)."""
    paths = [os.path.relpath(p) if Path.cwd() == REPO else str(p) for p in CASES[name]]
    cache = ["--cache-dir", str(tmp_path / "cache")]
    page = tmp_path / f"{name}.html"
    runner = CliRunner()
    made = runner.invoke(app, ["html", *paths, "-o", str(page), *cache])
    assert made.exit_code == 0, made.output
    out = runner.invoke(app, ["summarize", *paths, "-f", "json", "--full", "--top", "10", *cache])
    assert out.exit_code == 0, out.output
    return page, json.loads(out.stdout[out.stdout.index("{"):])


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    found = browser()
    if found is None:
        pytest.skip("no Chromium and chromedriver (apt-get install chromium chromium-driver)")
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium missing: pip install -e '.[test]'")
    from selenium.webdriver.chrome.service import Service
    options = webdriver.ChromeOptions()
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}")
    options.add_argument("--window-size=1280,800")
    options.binary_location = found[0]
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(options=options, service=Service(found[1]))
    yield d
    d.quit()


def open_page(driver, page: Path) -> None:
    driver.set_window_size(1280, 800)
    driver.get(page.as_uri())
    for _ in range(600):
        state = driver.execute_script("return [document.body.dataset.ready, document.body.dataset.error]")
        if state[0] or state[1]:
            break
        time.sleep(0.1)
    assert state == ["1", None], f"the page did not finish drawing: {state}"


def at(doc, key: str):
    for part in key.split("."):
        doc = doc[int(part)] if isinstance(doc, list) else doc[part]
    return doc


def raw_steps(path: Path, tmp_path: Path, names: set[str]) -> dict[int, tuple[int, int]]:
    """{step: (first start, last end) over the processes}: each process's top-level step ranges, numbered in start
    order, from the raw NVTX rows."""
    db = sqlite3.connect(unxz(path, tmp_path / (path.parent.name + ".sqlite")))
    rows = db.execute("SELECT n.start, n.end, n.globalTid >> 24 & 16777215 FROM NVTX_EVENTS AS n "
                      "LEFT JOIN StringIds AS s ON s.id = n.textId WHERE n.eventType = 59 "
                      f"AND COALESCE(n.text, s.value) IN ({','.join('?' * len(names))}) ORDER BY n.start",
                      sorted(names)).fetchall()
    per_pid: dict[int, int] = {}
    steps: dict[int, tuple[int, int]] = {}
    for start, end, pid in rows:
        per_pid[pid] = per_pid.get(pid, 0) + 1
        k = per_pid[pid]
        lo, hi = steps.get(k, (start, end))
        steps[k] = (min(lo, start), max(hi, end))
    return steps


def raw_gpu_ops(path: Path, tmp_path: Path, lo: int, hi: int) -> int:
    db = sqlite3.connect(unxz(path, tmp_path / (path.parent.name + ".sqlite")))
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    return sum(db.execute(f"SELECT COUNT(*) FROM {t} WHERE end >= ? AND start <= ?", (lo, hi)).fetchone()[0]
               for t in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
                         "CUPTI_ACTIVITY_KIND_GRAPH_TRACE") if t in tables)


SHOWN_TEXT = {  # how the page writes each kind of number (nsysql's own duration() for durations)
    "_ns": duration,
    "_pct": lambda v: f"{v:,.1f} %",
}


@pytest.mark.parametrize("name", list(CASES))
def test_report_in_chromium(driver, tmp_path, name):
    page, doc = make_report(tmp_path, name)
    open_page(driver, page)
    if name == "gpt" and os.environ.get("NSYSQL_REPORT_SCREENSHOT"):  # README's picture: the page as it opens
        driver.save_screenshot(os.environ["NSYSQL_REPORT_SCREENSHOT"])
    errors = [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
    assert not errors, errors
    # every chart of a shown section is drawn, with a size
    charts = driver.execute_script("""
        return [...document.querySelectorAll('[data-chart]')].filter(n => !n.closest('section.hidden')).map(n => {
            const svg = n.querySelector('svg.main-svg'); const r = svg && svg.getBoundingClientRect();
            return [n.dataset.chart, svg ? r.width : 0, svg ? r.height : 0, !!n.querySelector('.empty')]; });""")
    assert charts and all((w > 0 and h > 0) or empty for _, w, h, empty in charts), charts
    assert any(c[0] == "steps" and c[1] > 0 for c in charts)
    # the numbers: each card and finding value is summarize's, written as nsysql writes it
    shown = driver.execute_script("return [...document.querySelectorAll('[data-key]')].map("
                                  "n => [n.dataset.key, n.dataset.value, n.textContent])")
    assert len(shown) >= 4 + len(doc["findings"])
    for key, value, text in shown:
        expected = at(doc, key)
        assert float(value) == pytest.approx(expected, rel=1e-12), key
        fmt = next(f for suffix, f in SHOWN_TEXT.items() if key.endswith(suffix))
        assert fmt(expected) in text, (key, text)
    # the top tables: summarize's rows in summarize's order, full names on hover
    kernels = driver.execute_script("return [...document.querySelectorAll('table[data-table=top_kernels] tbody tr')]"
                                    ".map(r => [r.cells[0].textContent, r.cells[0].title, r.cells[1].dataset.v])")
    top = doc["overview"]["top_kernels"]
    assert [k[0] for k in kernels] == [k["short_name"] if len(k["short_name"]) <= 60 else k["short_name"][:57] + "…"
                                       for k in top]  # long names cut, whole on hover
    assert [int(k[2]) for k in kernels] == [k["calls"] for k in top]
    assert [k[1] for k in kernels] == [k["full_name"] for k in top]
    # sorting by calls puts the largest first
    driver.execute_script("document.querySelector('table[data-table=top_kernels] th[data-col=calls]').click()")
    calls = driver.execute_script("return [...document.querySelectorAll('table[data-table=top_kernels] tbody tr')]"
                                  ".map(r => Number(r.cells[1].dataset.v))")
    assert calls == sorted(calls, reverse=True)
    # ranks: a chart when several ranks, with the straggler marked
    ranks = {(r["rank"], r["pid"]) for r in doc.get("communication", {}).get("rows", [])}
    ranks_shown = driver.execute_script("return !document.getElementById('ranks').classList.contains('hidden')")
    assert ranks_shown == (len(ranks) > 1)
    if any(r["straggler"] for r in doc.get("communication", {}).get("rows", [])):
        assert "straggler" in driver.find_element("id", "chart-ranks").text
    check_timeline(driver, doc, name, tmp_path)
    check_bound(driver, doc, name, tmp_path)
    driver.save_screenshot(str(tmp_path / f"{name}-1280.png"))
    # narrow: nothing wider than the window but what scrolls inside its own box (tables)
    driver.set_window_size(420, 800)
    time.sleep(1)  # the charts follow the width (Plotly's responsive mode, the legends' room after 150 ms)
    width = driver.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")
    assert width[0] <= width[1] + 1, width
    driver.save_screenshot(str(tmp_path / f"{name}-420.png"))


def check_timeline(driver, doc, name: str, tmp_path: Path) -> None:
    """The median step's GPU ops are all drawn (as many bars as raw rows overlap the step), and the drag zooms."""
    steps = doc["overview"]["steps"]
    walls: dict[int, list[int]] = {}
    for s in steps:
        walls.setdefault(s["step"], []).append(s["wall_ns"])
    by_wall = sorted(walls, key=lambda k: (sum(walls[k]) / len(walls[k]), k))
    median = by_wall[(len(by_wall) - 1) // 2]
    selected = driver.execute_script("const s = document.getElementById('step-select'); "
                                     "return s.options[s.selectedIndex].text")
    assert selected.startswith(f"step {median} (median)")
    drawn = driver.execute_script("""
        const gd = document.getElementById('chart-timeline');
        const layers = [...gd.querySelectorAll('.barlayer .trace')];
        let n = 0;
        gd._fullData.forEach((t, i) => { if (t.meta === 'gpu') n += layers[i].querySelectorAll('.point path').length; });
        return n;""")
    expected = 0
    for path in CASES[name]:
        windows = raw_steps(path, tmp_path, {s["name"] for s in steps})
        lo, hi = windows[median]
        expected += raw_gpu_ops(path, tmp_path, lo, hi)
    if len(CASES[name]) == 1:
        assert drawn == expected, (drawn, expected)
    else:  # a job's step spans its ranks' steps on one clock: at least each rank's own step is drawn
        assert drawn >= expected > 0, (drawn, expected)
    before = driver.execute_script("return document.getElementById('chart-timeline').layout.xaxis.range.slice()")
    from selenium.webdriver.common.action_chains import ActionChains
    drag = driver.find_element("css selector", "#chart-timeline .nsewdrag")
    box = drag.rect
    ActionChains(driver).move_to_element_with_offset(drag, -box["width"] // 4, 0).click_and_hold() \
        .move_by_offset(box["width"] // 8, 0).release().perform()
    after = driver.execute_script("return document.getElementById('chart-timeline').layout.xaxis.range.slice()")
    assert after[1] - after[0] < (before[1] - before[0]) / 4, (before, after)


def critical_path_json(name: str, tmp_path: Path, *args: str) -> list[dict]:
    out = CliRunner().invoke(app, ["critical-path", *map(str, CASES[name]), "-f", "json", *args,
                                   "--cache-dir", str(tmp_path / "cache")])
    assert out.exit_code == 0, out.output
    return json.loads(out.stdout[out.stdout.index("["):])


def check_bound(driver, doc, name: str, tmp_path: Path) -> None:
    """"What bounds the step": the bound line is summarize's; each bar of the chart is `critical-path -f json`'s time
    of its kind in its step; the timeline draws the shown step's path, item by item as `critical-path --step N
    --items` lists them, from the step's start in the raw rows, and marks each on its own row."""
    hidden = driver.execute_script("return document.getElementById('bound').classList.contains('hidden')")
    assert not hidden
    assert driver.find_element("id", "bound-line").text == doc["critical_path"]["line"]
    rows = critical_path_json(name, tmp_path)
    traces = driver.execute_script("return document.getElementById('chart-bound').data.map(t => [t.meta, t.x, t.y])")
    kinds = ["cpu", "launch", "gpu_compute", "copy", "sync_wait", "comm_transfer", "comm_wait"]
    assert [t[0] for t in traces] == [k for k in kinds if any(r[f"{k}_ns"] for r in rows)]
    for kind, x, y in traces:
        where = [[w for w in (r.get("export"), f"pid {r['pid']}" if "pid" in r else None) if w] for r in rows]
        assert x == [f"{r['step']} ({', '.join(w)})" if w else f"step {r['step']}" for r, w in zip(rows, where)]
        assert y == pytest.approx([r[f"{kind}_ns"] / 1e6 for r in rows], rel=1e-12, abs=1e-12), kind
    for r in rows:  # the bars stack to the step's wall time
        assert sum(r[f"{k}_ns"] for k in kinds) == r["path_ns"] == r["wall_ns"]
    note = driver.find_element("id", "bound-note").text
    if len(CASES[name]) > 1:  # a job: the composition (the ranks' paths crossing); no path over the timeline
        assert any(r["export"] != rows[0]["export"] for r in rows)
        assert "does not draw a job's paths" in note and "draws the path of the step" not in note
        assert not driver.execute_script("return document.getElementById('chart-timeline').data"
                                         ".some(t => t.meta === 'path')")
        return
    assert "draws the path of the step" in note
    # the shown step's path over its timeline
    median = int(driver.execute_script("const s = document.getElementById('step-select'); "
                                       "return s.options[s.selectedIndex].text").split()[1])
    items = critical_path_json(name, tmp_path, "--step", str(median), "--items")
    lo = raw_steps(CASES[name][0], tmp_path, {s["name"] for s in doc["overview"]["steps"]})[median][0]
    drawn = driver.execute_script("""
        return document.getElementById('chart-timeline').data.filter(t => t.meta === 'path' || t.meta === 'path-mark')
            .map(t => [t.meta, t.legendgroup, t.y, t.base, t.x]);""")
    bars = sorted((g[len("path-"):], y, round(b * 1e6), round(w * 1e6)) for meta, g, ys, bs, ws in drawn
                  if meta == "path" for y, b, w in zip(ys, bs, ws))
    several = "pid" in items[0]
    expected = sorted((r["kind"], f"critical path (pid {r['pid']})" if several else "critical path",
                       r["start_ns"] - lo, r["end_ns"] - r["start_ns"]) for r in items)
    assert bars == expected
    marks = [(g[len("path-"):], round(b * 1e6), round(w * 1e6)) for meta, g, ys, bs, ws in drawn
             if meta == "path-mark" for b, w in zip(bs, ws)]
    assert marks and set(marks) <= {(k, s, d) for k, _, s, d in expected}
    assert len(marks) >= 0.9 * len(expected)  # nearly every item has its thread's or stream's row in the step


def test_page_is_self_contained(tmp_path):
    """No browser needed: one file, no external reference, under 5 MB, the JSON inline equal to summarize's."""
    page, doc = make_report(tmp_path, "gpt")
    text = page.read_text(encoding="utf-8")
    assert page.stat().st_size < 5_000_000
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text)
    assert "<link" not in text
    data = re.search(r'<script id="report-data" type="application/json">(.*?)</script>', text, re.S)
    assert data
    embedded = json.loads(data.group(1))["summary"]
    assert embedded == doc
    # "What bounds the step" without a browser: the composition is `critical-path -f json`'s, and each drawn step
    # carries its path's items as `critical-path --step N --items` lists them
    page_data, blocks = page_parts(text)
    assert page_data["critical_path"]["steps"] == critical_path_json("gpt", tmp_path)
    assert blocks
    for step in blocks.values():
        items = critical_path_json("gpt", tmp_path, "--step", str(step["step"]), "--items")
        bars = step["path"]["bars"]
        assert sorted(zip(bars["kind"], bars["d"])) == sorted((r["kind"], r["end_ns"] - r["start_ns"]) for r in items)


def page_parts(text: str) -> tuple[dict, dict[int, dict]]:
    """The page's data and its steps' timelines ({step: the block inflated}), read as a browser would."""
    import base64
    import gzip
    data = json.loads(re.search(r'<script id="report-data" type="application/json">(.*?)</script>', text, re.S)[1])
    blocks = {int(n): json.loads(gzip.decompress(base64.b64decode(b)))
              for n, b in re.findall(r'<script id="timeline-(\d+)" type="text/plain">([^<]*)</script>', text)}
    return data, blocks


# -- the page at any size (issue 46): the steps it carries, the bound, --steps -------------------------------
BIG = "gpt-decode-eager"  # the fixture of most kernels (56,833) and most steps (69, 23 of them warm-up)


def plain_steps(sqlite: Path, step_name: str, warmup_name: str) -> dict[int, tuple[int, int, bool]]:
    """{step: (start, end, analysed)} by a walk of the raw NVTX rows: the `step_name` ranges numbered by start; a
    step inside a `warmup_name` range is warm-up."""
    db = sqlite3.connect(sqlite)
    rows = db.execute("SELECT n.start, n.end, COALESCE(n.text, s.value) FROM NVTX_EVENTS AS n LEFT JOIN StringIds "
                      "AS s ON s.id = n.textId WHERE n.eventType = 59 AND COALESCE(n.text, s.value) IN (?, ?) "
                      "ORDER BY n.start", (step_name, warmup_name)).fetchall()
    warm = [(a, b) for a, b, t in rows if t == warmup_name]
    steps = [(a, b) for a, b, t in rows if t == step_name]
    return {i: (a, b, not any(wa <= a and b <= wb for wa, wb in warm)) for i, (a, b) in enumerate(steps, 1)}


def plain_median(steps: dict[int, tuple[int, int, bool]]) -> int:
    """The lower middle of the analysed steps ordered by wall time, then number (docs/commands/html-perfetto.md)."""
    by_wall = sorted((b - a, k) for k, (a, b, analysed) in steps.items() if analysed)
    return by_wall[(len(by_wall) - 1) // 2][1]


def plain_gpu_ops(sqlite: Path, lo: int, hi: int) -> int:
    db = sqlite3.connect(sqlite)
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    return sum(db.execute(f"SELECT COUNT(*) FROM {t} WHERE end >= ? AND start <= ?", (lo, hi)).fetchone()[0]
               for t in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET")
               if t in tables)


@pytest.fixture(scope="module")
def big_page(tmp_path_factory, fixture_sqlite):
    """The default page of the largest fixture, with its raw steps."""
    sqlite = fixture_sqlite(BIG)
    tmp = tmp_path_factory.mktemp("big-page")
    page = tmp / "big.html"
    made = CliRunner().invoke(app, ["html", str(sqlite), "-o", str(page), "--cache-dir", str(tmp / "cache")])
    assert made.exit_code == 0, made.output
    return sqlite, page, plain_steps(sqlite, "decode_step", "warmup")


def test_big_page_is_bounded_and_says_what_it_carries(big_page):
    """Under 5 MB although the capture has 57k kernels; a row per step (all 69, warm-up ones marked); the median
    step first (a plain walk of the raw rows), its timeline and the others' carried as blocks, each block the step
    it says with every GPU op of its window; the steps left out listed."""
    sqlite, page, raw = big_page
    assert page.stat().st_size <= 5_000_000
    data, blocks = page_parts(page.read_text(encoding="utf-8"))
    tl = data["timeline"]
    assert [s["step"] for s in tl["steps"]] == sorted(raw)
    assert [s["analysed"] for s in tl["steps"]] == [raw[k][2] for k in sorted(raw)]
    assert [s["wall_ns"] for s in tl["steps"]] == [raw[k][1] - raw[k][0] for k in sorted(raw)]
    assert tl["median"] == tl["first"] == plain_median(raw)
    carried = {s["step"] for s in tl["steps"] if s["carried"]}
    assert set(blocks) == carried and tl["first"] in carried and 1 < len(carried) < len(raw)
    assert all(raw[k][2] for k in carried)  # by default only analysed steps
    assert tl["left_out"] == [k for k in sorted(raw) if k not in carried]
    for number, step in blocks.items():
        assert step["step"] == number and "clipped" not in step
        lo, hi, _ = raw[number]
        assert step["gpu_ops"] == plain_gpu_ops(sqlite, lo, hi) > 0


@pytest.fixture(scope="module")
def small(tmp_path_factory, fixture_sqlite):
    """The GPT fixture (3 steps, its warm-up step no step range) and a cache shared by the --steps tests."""
    return fixture_sqlite("gpt-tiny-train-annotated"), tmp_path_factory.mktemp("steps-cache")


@pytest.mark.parametrize("spec, expected", [("1,3", {1, 3}), ("all", {1, 2, 3}), ("1-1", {1})])
def test_steps_option_carries_exactly_those(small, tmp_path, spec, expected):
    sqlite, cache = small
    page = tmp_path / "p.html"
    made = CliRunner().invoke(app, ["html", str(sqlite), "-o", str(page), "--steps", spec, "--cache-dir", str(cache)])
    assert made.exit_code == 0, made.output
    data, blocks = page_parts(page.read_text(encoding="utf-8"))
    tl = data["timeline"]
    raw = plain_steps(sqlite, "profiled_step", "warmup")
    assert [s["step"] for s in tl["steps"]] == sorted(raw) == [1, 2, 3]
    assert set(blocks) == expected == {s["step"] for s in tl["steps"] if s["carried"]}
    assert tl["chosen"] == spec and tl["left_out"] == sorted(set(raw) - expected)
    median = plain_median(raw)
    assert tl["first"] == (median if median in expected else min(expected))


@pytest.mark.parametrize("spec, says", [
    ("x", "give step numbers and ranges"), ("0", "steps count from 1"), ("4-2", "must not run backwards"),
    ("3,", "give step numbers and ranges"), ("2,9", "no step 9 in this capture (its steps: 1 to 3"),
])
def test_steps_option_errors_are_one_line(small, tmp_path, spec, says):
    sqlite, cache = small
    page = tmp_path / "p.html"
    out = CliRunner().invoke(app, ["html", str(sqlite), "-o", str(page), "--steps", spec, "--cache-dir", str(cache)])
    assert out.exit_code == 1, out.output
    lines = [line for line in out.output.splitlines() if line.strip()]
    assert len(lines) == 1 and says in lines[0] and "--steps" in lines[0] and "Traceback" not in out.output, lines
    assert not page.exists()


def test_big_page_in_chromium(driver, big_page):
    """The step-time chart is drawn as a picture before Plotly is ready, then the first interactive chart before the
    rest (the page's marks); the note lists the steps the page carries and
    the others are not offered; picking another carried step inflates its block and draws all its GPU ops."""
    sqlite, page, raw = big_page
    open_page(driver, page)
    marks = driver.execute_script("return ['nsysql-tables', 'nsysql-preview', 'nsysql-plotly', 'nsysql-first-chart',"
                                  " 'nsysql-charts'].map(m => performance.getEntriesByName(m)[0].startTime)")
    assert marks == sorted(marks)  # the step-time picture before Plotly; the first chart before the others
    assert not driver.find_elements("css selector", "svg.preview")  # replaced by the interactive chart
    data, blocks = page_parts(page.read_text(encoding="utf-8"))
    note = driver.find_element("id", "timeline-carried")
    assert note.get_attribute("data-carried") == ",".join(map(str, sorted(blocks)))
    assert "Left out:" in note.text and "--steps" in note.text
    options = driver.execute_script("return [...document.getElementById('step-select').options]"
                                    ".map(o => [Number(o.value), o.disabled])")
    assert options == [[k, k not in blocks] for k in sorted(raw)]
    other = next(k for k in sorted(blocks) if k != data["timeline"]["first"])
    driver.execute_script("const s = document.getElementById('step-select'); s.value = arguments[0]; "
                          "s.dispatchEvent(new Event('change'));", str(other))
    for _ in range(300):
        if driver.execute_script("return document.getElementById('chart-timeline').dataset.step") == str(other):
            break
        time.sleep(0.1)
    drawn = driver.execute_script("""
        const gd = document.getElementById('chart-timeline');
        const layers = [...gd.querySelectorAll('.barlayer .trace')];
        let n = 0;
        gd._fullData.forEach((t, i) => { if (t.meta === 'gpu') n += layers[i].querySelectorAll('.point path').length; });
        return [gd.dataset.step, n];""")
    lo, hi, _ = raw[other]
    assert drawn == [str(other), plain_gpu_ops(sqlite, lo, hi)]
    errors = [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
    assert not errors, errors


def test_summarize_open_writes_and_opens_the_page(tmp_path, monkeypatch):
    import webbrowser
    opened: list[str] = []
    monkeypatch.setattr(webbrowser, "open", lambda uri, *a, **k: opened.append(uri) or True)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", None)
    result = CliRunner().invoke(app, ["summarize", str(CASES["gpt"][0]), "--open",
                                      "--cache-dir", str(tmp_path / "cache")])
    assert result.exit_code == 0, result.output
    path = Path(result.stdout.strip().splitlines()[-1])
    assert path.parent == tmp_path and path.suffix == ".html"
    assert opened == [path.resolve().as_uri()]
    assert 'id="report-data"' in path.read_text(encoding="utf-8")


def test_export_html(tmp_path):
    import nsysql
    with nsysql.open(CASES["gpt"][0], cache_dir=tmp_path / "cache") as ex:
        written = ex.html(tmp_path / "page.html")
    text = written.read_text(encoding="utf-8")
    data = json.loads(re.search(r'<script id="report-data" type="application/json">(.*?)</script>', text, re.S)[1])
    assert data["summary"]["overview"]["step_time"]["analysed_steps"] == 3
    assert data["timeline"]["steps"] and data["timeline"]["median"] in {s["step"] for s in data["timeline"]["steps"]}


def test_a_step_past_the_bound_is_cut_at_a_time_and_says_so():
    """A step of more events than the bound keeps those that start before the bound-th start (a plain sort of the
    starts), its path's items before that time, and records the cut; a step within the bound is left whole."""
    from nsysql.answers import html_steps
    starts = [50, 10, 40, 20, 30, 10, 60]
    step = {"step": 2, "gpu_ops": 4, "bars": {"s": starts, "d": [1] * 7, "kind": ["fprop", "api", "fprop", "range",
                                                                                 "bprop", "api", "copy"],
                                              "row": list(range(7))},
            "path": {"bars": {"s": [5, 35, 55], "kind": ["cpu"] * 3}, "marks": {"s": [35, 55], "kind": ["cpu"] * 2}}}
    whole = json.loads(json.dumps(step))
    assert html_steps.clip(json.loads(json.dumps(step)), 7) == whole
    cut = html_steps.clip(step, 4)
    at = sorted(starts)[4]  # the fifth start (40): every bar starting before it stays
    assert cut["clipped"] == {"at_ns": at, "events": 7, "kept": sum(s < at for s in starts)}
    assert cut["bars"]["s"] == [s for s in starts if s < at] and cut["bars"]["row"] == [1, 3, 4, 5]
    assert cut["gpu_ops"] == 1  # what is left: two API calls, a range and one backward kernel
    assert cut["path"]["bars"]["s"] == [5, 35] and cut["path"]["marks"]["s"] == [35]


def test_the_path_section_of_a_long_capture_is_the_last_steps_and_says_how_many(tmp_path, monkeypatch):
    """Past critical_path.SUMMARY_BUDGET the page's "What bounds the step" walks the last analysed steps, as
    summarize's line does (the whole graph of a 660-step capture took minutes and gigabytes), and carries how many
    there are; under it, every analysed step (which steps those are is tests/test_steps.py's)."""
    import nsysql
    from nsysql.answers import critical_path, html_path
    export = FIXTURES / "cnn-dataloader-train" / "export.sqlite.xz"
    with nsysql.open(export, cache_dir=tmp_path / "cache") as ex:
        analysed = critical_path.steps(ex)["step"].to_list()
        assert len(analysed) > 1
        whole = html_path.section([ex])
        assert whole is not None and whole["analysed"] == len(analysed)
        assert sorted({s["step"] for s in whole["steps"]}) == sorted(analysed)
        monkeypatch.setattr(critical_path, "SUMMARY_BUDGET", 1)  # at least one step: the last
        one = html_path.section([ex])
        assert one is not None and one["analysed"] == len(analysed) and one["budget"] == 1
        assert [s["step"] for s in one["steps"]] == [max(analysed)]
