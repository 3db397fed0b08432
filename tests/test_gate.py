"""`nsysql diff BASE NEW --fail-above PCT [--metric M]`: the regression gate (docs/ci.md), on real pairs of captures,
its interval checked against one computed here from the exports' raw rows with plain Python (sqlite3, statistics,
and a t quantile by numerical integration of the t density, not nsysql's incomplete-beta one)."""
from __future__ import annotations

import fnmatch
import json
import math
import re
import sqlite3
import statistics
import subprocess
import sys

import pytest
from typer.testing import CliRunner

import nsysql
from nsysql.answers import gate
from nsysql.cli.app import app
from nsysql.core import stats

from conftest import FIXTURES, REPO, unxz

runner = CliRunner()
BASE, NOSYNC, REPEAT, BF16 = "whatif-cnn-base", "whatif-cnn-nosync", "whatif-cnn-base-repeat", "whatif-cnn-bf16"
GPT_FP32, GPT_BF16 = "gpt-tiny-train-fp32", "gpt-tiny-train-bf16"
NAMES = (BASE, NOSYNC, REPEAT, BF16, GPT_FP32, GPT_BF16)
LINE = re.compile(r"^(?P<label>.+?) (?P<change>[+-]\d+\.\d) % \((?:95 % interval (?P<low>[+-]\d+\.\d) to "
                  r"(?P<high>[+-]\d+\.\d) %, )?(?:no interval, )?(?P<nb>\d+) vs (?P<nn>\d+) steps\): "
                  r"(?P<verdict>regression|pass|inconclusive)$")
JSON_KEYS = {"verdict", "reason", "metric", "label", "threshold_pct", "change_pct", "interval", "n_base", "n_new",
             "base_mean_ns", "new_mean_ns", "base_stdev_ns", "new_stdev_ns", "base", "new", "exit_code", "line",
             "rows"}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    missing = [n for n in NAMES if not (FIXTURES / n / "export.sqlite.xz").exists()]
    if missing:
        pytest.skip(f"fixtures absent: {', '.join(missing)}")
    out = tmp_path_factory.mktemp("gate")
    return {n: unxz(FIXTURES / n / "export.sqlite.xz", out / f"{n}.sqlite") for n in NAMES}


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("gate-cache")


def run(files, cache, base, new, *options):
    return runner.invoke(app, ["diff", str(files[base]), str(files[new]), "--cache-dir", str(cache), *options],
                         env={"COLUMNS": "80"})


def gated_json(files, cache, base, new, *options) -> tuple[int, dict]:
    res = run(files, cache, base, new, "--fail-above", "5%", "-f", "json", *options)
    return res.exit_code, json.loads(res.stdout)


# -- the same figures, computed here ---------------------------------------------------------------------------
def t_quantile(p: float, df: float) -> float:
    """Student's t quantile by Simpson's rule over the density (2,000 intervals) and bisection."""
    const = math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2)) / math.sqrt(df * math.pi)

    def area(x: float) -> float:  # P(0 <= T <= x)
        n, h = 2000, x / 2000
        f = [const * (1 + (i * h) ** 2 / df) ** (-(df + 1) / 2) for i in range(n + 1)]
        return h / 3 * (f[0] + f[-1] + 4 * sum(f[1:-1:2]) + 2 * sum(f[2:-1:2]))

    low, high = 0.0, 100.0
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if area(mid) < p - 0.5 else (low, mid)
    return (low + high) / 2


def raw_steps(path) -> list[int]:
    """The durations of the `profiled_step` NVTX ranges, in start order, straight from the SQLite."""
    db = sqlite3.connect(path)
    rows = db.execute("SELECT e.end - e.start FROM NVTX_EVENTS AS e LEFT JOIN StringIds AS s ON s.id = e.textId "
                      "WHERE COALESCE(e.text, s.value) = 'profiled_step' ORDER BY e.start").fetchall()
    db.close()
    return [d for (d,) in rows]


def steady(walls: list[int]) -> list[int]:
    """The steps left once the slow leading ones are dropped, the rule of docs/steps.md written again: a leading step
    is warm-up while every step before it is, and it takes over 1.5 x the median of the steps after it."""
    k = 0
    while k < len(walls) - 1 and walls[k] > 1.5 * statistics.median(walls[k + 1:]):
        k += 1
    return walls[k:]


def welch_pct(base: list[int], new: list[int]) -> tuple[float, float, float]:
    """(change, low, high) in % of the baseline's mean: Welch's 95 % interval of mean(new) - mean(base)."""
    m1, m2 = statistics.fmean(base), statistics.fmean(new)
    a, b = statistics.variance(base) / len(base), statistics.variance(new) / len(new)
    df = (a + b) ** 2 / (a * a / (len(base) - 1) + b * b / (len(new) - 1))
    half = t_quantile(0.975, df) * math.sqrt(a + b)
    return tuple(100 * x / m1 for x in (m2 - m1, m2 - m1 - half, m2 - m1 + half))  # type: ignore[return-value]


def raw_kernel_time_per_step(path) -> list[int]:
    """Per `profiled_step` range: the summed duration of the kernels whose launching CUDA call (same correlationId)
    starts inside it."""
    db = sqlite3.connect(path)
    steps = db.execute("SELECT e.start, e.end FROM NVTX_EVENTS AS e LEFT JOIN StringIds AS s ON s.id = e.textId "
                       "WHERE COALESCE(e.text, s.value) = 'profiled_step' ORDER BY e.start").fetchall()
    kernels = db.execute("SELECT r.start, k.end - k.start FROM CUPTI_ACTIVITY_KIND_KERNEL AS k "
                         "JOIN CUPTI_ACTIVITY_KIND_RUNTIME AS r ON r.correlationId = k.correlationId").fetchall()
    db.close()
    return [sum(d for call, d in kernels if start <= call <= end) for start, end in steps]


# -- statistics -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("df", [1, 2.5, 4, 7, 11.57, 30, 200])
def test_t_quantile_matches_numerical_integration(df):
    for p in (0.9, 0.975, 0.995):
        assert stats.t_quantile(p, df) == pytest.approx(t_quantile(p, df), rel=1e-6)
    assert stats.t_quantile(0.025, df) == pytest.approx(-stats.t_quantile(0.975, df))


def test_t_quantile_against_the_printed_table():
    for df, t in ((1, 12.706), (2, 4.303), (5, 2.571), (10, 2.228), (30, 2.042)):
        assert round(stats.t_quantile(0.975, df), 3) == t


def test_welch_without_spread_is_the_difference():
    w = stats.welch([5.0, 5.0], [7.0, 7.0])
    assert (w.difference, w.low, w.high, w.df) == (2.0, 2.0, 2.0, None)
    with pytest.raises(ValueError):
        stats.welch([1.0], [1.0, 2.0])


# -- the verdict's rules ----------------------------------------------------------------------------------------
def side(*values: float) -> gate.Side:
    return gate.Side(list(values), len(values), statistics.fmean(values))


@pytest.mark.parametrize("new, verdict", [
    ((110.0, 111.0, 109.0, 110.0), "regression"),  # +10 %, tight: the interval lies above 5 %
    ((101.0, 100.0, 99.0, 100.0), "pass"),          # 0 %, tight: below
    ((80.0, 140.0, 95.0, 125.0), "inconclusive"),   # +10 %, but the steps vary: the interval holds 5 %
])
def test_the_interval_against_the_threshold(new, verdict):
    r = gate.judge(gate.Metric("step"), side(100.0, 101.0, 99.0, 100.0), side(*new), 5.0)
    assert r["verdict"] == verdict and r["exit_code"] == (3 if verdict == "regression" else 0)
    assert LINE.match(r["line"])["verdict"] == verdict


def test_a_metric_from_none_and_of_none():
    m = gate.Metric("kernel", "*nccl*")
    r = gate.judge(m, side(0.0, 0.0), side(5.0, 7.0), 5.0)
    assert (r["verdict"], r["change_pct"], r["exit_code"]) == ("regression", None, 3)
    assert r["line"] == "kernel time of *nccl* from none to 6 ns a step (2 vs 2 steps): regression"
    r = gate.judge(m, side(0.0, 0.0), side(0.0, 0.0), 5.0)
    assert (r["verdict"], r["change_pct"]) == ("pass", 0.0)


@pytest.mark.parametrize("text, value", [("5%", 5.0), ("5", 5.0), ("2.5 %", 2.5), ("0%", 0.0), (".5%", 0.5), (7, 7.0)])
def test_thresholds(text, value):
    assert gate.parse_threshold(text) == value


@pytest.mark.parametrize("text", ["5x", "-5%", "abc", "", "5%%", "nan", "inf", "5ms"])
def test_bad_thresholds(text):
    with pytest.raises(nsysql.NsysqlError, match="`fail_above=`"):
        gate.parse_threshold(text)


# -- real pairs ----------------------------------------------------------------------------------------------
def test_a_real_regression_fails_with_exit_3(files, cache):
    """No synchronization (BASE) against the program that synchronizes after each phase (NEW): 79 -> 106 ms a step."""
    res = run(files, cache, NOSYNC, BASE, "--fail-above", "5%", "--top", "3")
    assert res.exit_code == 3, res.output
    first = res.stdout.splitlines()[0]
    m = LINE.match(first)
    assert m and m["label"] == "step time" and m["verdict"] == "regression" and (m["nb"], m["nn"]) == ("8", "8")
    assert all(len(line) <= 80 for line in res.stdout.splitlines())
    change, low, high = welch_pct(raw_steps(files[NOSYNC]), raw_steps(files[BASE]))
    assert (float(m["change"]), float(m["low"]), float(m["high"])) == (round(change, 1), round(low, 1),
                                                                       round(high, 1))
    assert low > 5
    code, doc = gated_json(files, cache, NOSYNC, BASE, "--top", "3")
    assert code == 3 and set(doc) == JSON_KEYS and len(doc["rows"]) == 3
    assert doc["line"] == first and doc["verdict"] == "regression" and doc["metric"] == "step"
    assert (doc["n_base"], doc["n_new"], doc["threshold_pct"]) == (8, 8, 5.0)
    assert doc["change_pct"] == pytest.approx(change, rel=1e-9)
    assert (doc["interval"]["low_pct"], doc["interval"]["high_pct"]) == (pytest.approx(low, rel=1e-6),
                                                                         pytest.approx(high, rel=1e-6))
    assert doc["base_mean_ns"] == pytest.approx(statistics.fmean(raw_steps(files[NOSYNC])))


def test_the_other_way_round_passes(files, cache):
    res = run(files, cache, BASE, NOSYNC, "--fail-above", "5%", "--top", "1")
    assert res.exit_code == 0 and LINE.match(res.stdout.splitlines()[0])["verdict"] == "pass"


def test_a_recapture_of_the_same_program_does_not_fail(files, cache):
    """whatif-cnn-base-repeat runs the baseline's command again in the same device call: its 6 analysed steps (1-2
    are slow leading ones) are faster, so the gate passes; run-to-run spread that the steps of one run do not show
    (docs/ci.md) would make the reverse pair fail."""
    code, doc = gated_json(files, cache, BASE, REPEAT, "--top", "1")
    assert code == 0 and doc["verdict"] in ("pass", "inconclusive") and doc["exit_code"] == 0
    base, repeat = raw_steps(files[BASE]), raw_steps(files[REPEAT])
    assert len(steady(base)) == 8 and len(steady(repeat)) == 6
    change, low, high = welch_pct(steady(base), steady(repeat))
    assert (doc["n_base"], doc["n_new"]) == (8, 6)
    assert (doc["change_pct"], doc["interval"]["low_pct"], doc["interval"]["high_pct"]) == (
        pytest.approx(change, rel=1e-9), pytest.approx(low, rel=1e-6), pytest.approx(high, rel=1e-6))
    assert high <= 5 and doc["verdict"] == "pass"


def test_an_export_against_itself_is_no_regression(files, cache):
    code, doc = gated_json(files, cache, BASE, BASE, "--top", "1")
    assert code == 0 and doc["change_pct"] == 0.0 and doc["verdict"] in ("pass", "inconclusive")


def test_one_step_a_side_is_inconclusive(files, cache):
    """The tiny GPT captures have one profiled step each: bf16 is slower (op markers make it CPU-bound), but one
    step has no spread."""
    res = run(files, cache, GPT_FP32, GPT_BF16, "--fail-above", "5%", "--top", "1")
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    m = LINE.match(lines[0])
    assert m and m["verdict"] == "inconclusive" and (m["nb"], m["nn"]) == ("1", "1") and m["low"] is None
    assert float(m["change"]) > 5
    assert "2 or more steps on each side" in " ".join(" ".join(lines[1:3]).split())
    a, b = raw_steps(files[GPT_FP32]), raw_steps(files[GPT_BF16])
    assert float(m["change"]) == round(100 * (b[0] - a[0]) / a[0], 1)


def test_kernel_metric(files, cache):
    """bf16 (BASE) against fp32 without TF32 (NEW): every kernel's time a step, from the raw rows."""
    code, doc = gated_json(files, cache, BF16, BASE, "--metric", "kernel:*", "--top", "1")
    assert code == 3 and doc["verdict"] == "regression" and doc["metric"] == "kernel:*"
    a, b = raw_kernel_time_per_step(files[BF16]), raw_kernel_time_per_step(files[BASE])
    assert doc["base_mean_ns"] == pytest.approx(statistics.fmean(a)) and doc["new_mean_ns"] == pytest.approx(
        statistics.fmean(b))
    change, low, high = welch_pct(a, b)
    assert (doc["interval"]["low_pct"], doc["interval"]["high_pct"]) == (pytest.approx(low, rel=1e-6),
                                                                         pytest.approx(high, rel=1e-6))
    assert doc["line"].startswith("kernel time of * +")


def test_layer_metric_sums_the_layers_per_step(files, cache):
    code, doc = gated_json(files, cache, BASE, BF16, "--metric", "layer:forward_pass*", "--top", "1")
    assert code == 0 and doc["verdict"] == "pass" and doc["change_pct"] < -50
    with nsysql.open(files[BASE], cache_dir=cache) as ex:
        per_step = [sum(r["total_ns"] for r in ex.layers(step=k).iter_rows(named=True)
                        if fnmatch.fnmatchcase(r["layer"], "forward_pass*")) for k in range(1, 9)]
    assert doc["base_mean_ns"] == pytest.approx(statistics.fmean(per_step))


def test_finding_metric_has_no_interval(files, cache):
    code, doc = gated_json(files, cache, NOSYNC, BASE, "--metric", "finding:sync_in_step", "--top", "1")
    assert code == 3 and doc["interval"] is None and "no interval" in doc["line"]
    with nsysql.open(files[BASE], cache_dir=cache) as ex:
        found = ex.run("findings.sync_in_step", min_pct=0)
    assert doc["new_mean_ns"] == pytest.approx(found["recoverable_ns"].sum() / 8)
    code, doc = gated_json(files, cache, BASE, NOSYNC, "--metric", "finding:sync_in_step", "--top", "1")
    assert code == 0 and doc["verdict"] == "pass"


def test_csv_keeps_stdout_for_the_rows(files, cache):
    res = run(files, cache, NOSYNC, BASE, "--fail-above", "5%", "-f", "csv", "--top", "2")
    assert res.exit_code == 3
    assert res.stdout.splitlines()[0] == "name,a_count,b_count,a_ns,b_ns,delta_ns,delta_pct,ratio"
    assert LINE.match(res.stderr.splitlines()[0])["verdict"] == "regression"


def test_table_to_a_file_starts_with_the_verdict(files, cache, tmp_path):
    out = tmp_path / "gate.txt"
    res = run(files, cache, NOSYNC, BASE, "--fail-above", "5%", "--top", "2", "-o", str(out))
    assert res.exit_code == 3 and res.stdout == ""
    assert LINE.match(out.read_text(encoding="utf-8").splitlines()[0])


@pytest.mark.parametrize("options, says", [
    (["--fail-above", "5x"], "Error: --fail-above '5x' is not a percentage"),
    (["--fail-above", "-5%"], "Error: --fail-above '-5%' is not a percentage"),
    (["--metric", "step"], "Error: --metric says what --fail-above judges"),
    (["--fail-above", "5%", "--metric", "kernels:*"], "Error: --metric 'kernels:*' is no metric"),
    (["--fail-above", "5%", "--metric", "finding:nope"], "Error: --metric 'finding:nope': no finding rule named"),
    (["--fail-above", "5%", "--metric", "kernel:no_such_kernel*"], "no kernel in either export matches"),
    (["--fail-above", "5%", "--metric", "layer:"], "names no pattern"),
])
def test_bad_input_is_one_line_and_exit_1(files, cache, options, says):
    res = run(files, cache, NOSYNC, BASE, *options)
    assert res.exit_code == 1 and res.stdout == ""
    assert len(res.stderr.splitlines()) == 1 and says in res.stderr, res.stderr


def test_exit_status_of_the_command(files, cache):
    """What a CI job sees: the process's own exit status, and the verdict as stdout's first line."""
    argv = [sys.executable, "-m", "nsysql", "diff", str(files[NOSYNC]), str(files[BASE]), "--fail-above", "5%",
            "--top", "1", "--cache-dir", str(cache)]
    res = subprocess.run(argv, capture_output=True, text=True, cwd=REPO)
    assert res.returncode == 3, res.stderr
    assert res.stdout.splitlines()[0].endswith("): regression")


def test_an_export_without_nvtx_gates_on_its_kernel_steps(tmp_path, cache):
    """Without NVTX the steps are the iterations of the repeating kernel sequence, and the table the gate prints
    under its verdict is by kernel (by range, the default without --fail-above, needs NVTX ranges)."""
    name = "cuda-graphs-nonvtx"
    if not (FIXTURES / name / "export.sqlite.xz").exists():
        pytest.skip(f"fixtures/{name} absent")
    path = str(FIXTURES / name / "export.sqlite.xz")
    res = runner.invoke(app, ["diff", path, path, "--fail-above", "5%", "--top", "1", "--cache-dir", str(cache)],
                        env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    m = LINE.match(lines[0])
    assert m and m["change"] == "+0.0" and m["verdict"] in ("pass", "inconclusive")
    assert any(line.endswith("(B) by kernel") for line in lines)
    res = runner.invoke(app, ["diff", path, path, "--top", "1", "--cache-dir", str(cache)])
    assert res.exit_code == 1 and "has no NVTX_EVENTS" in res.stderr
