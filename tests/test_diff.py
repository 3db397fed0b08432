"""`nsysql diff A B`: per kernel, base name, range path and layer, against sums over the raw rows."""
from __future__ import annotations

import re
from collections import Counter

import pytest
from typer.testing import CliRunner

import nsysql
from nsysql.cli.app import app

from conftest import plain_attribution
from plainwalk import read_export, user_range_paths
from test_steps import open_case

runner = CliRunner()
FP32, BF16 = "gpt-tiny-train-fp32", "gpt-tiny-train-bf16"


def raw_kernels(path):
    """[(demangled name, short name, duration)] straight from the export."""
    db, _, strings = read_export(path)
    rows = [(strings[d], strings[s], e - b) for d, s, b, e in
            db.execute("SELECT demangledName, shortName, start, end FROM CUPTI_ACTIVITY_KIND_KERNEL")]
    db.close()
    return rows


def base_name(full: str, short: str) -> str:
    """The base-name rule as analysis._diff_kernels documents it, written again in Python."""
    low = full.lower()
    if re.search(r"convolution|convolve|conv[123]d|fprop|dgrad|wgrad|implicit_gemm|winograd", low):
        return "conv*"
    if "gemv" in low:
        return "gemv*"
    if re.search(r"gemm|nvjet|wgmma|hmma|imma|s1688|s16816|h1688|h16816|i8816|tensorop|xmma|cublas|splitkreduce", low):
        return "gemm*"
    drop = re.compile(r"(f16|bf16|fp16|f32|fp32|tf32|f64|half|float|int8|e4m3|e5m2|[0-9]+(x[0-9]+)+)")
    return "_".join(t for t in short.split("_") if not drop.fullmatch(t.lower()))


def totals(rows, key):
    count, ns = Counter(), Counter()
    for full, short, d in rows:
        k = key(full, short)
        count[k] += 1
        ns[k] += d
    return count, ns


def check_diff(df, a, b):
    """`df` (a diff frame) holds exactly the names of a and b with their counts, times and B - A."""
    (a_count, a_ns), (b_count, b_ns) = a, b
    names = set(a_ns) | set(b_ns)
    assert sorted(df["name"].to_list()) == sorted(names)
    for r in df.iter_rows(named=True):
        n = r["name"]
        assert (r["a_count"], r["b_count"], r["a_ns"], r["b_ns"]) == (a_count[n], b_count[n], a_ns[n], b_ns[n]), n
        assert r["delta_ns"] == b_ns[n] - a_ns[n]
        assert r["delta_pct"] == (pytest.approx(100 * (b_ns[n] - a_ns[n]) / a_ns[n]) if a_ns[n] else None)
    deltas = [abs(d) for d in df["delta_ns"]]
    assert deltas == sorted(deltas, reverse=True), "largest absolute change first"


@pytest.fixture(scope="module")
def pair(opened, export_files):
    return opened[FP32], opened[BF16], export_files[FP32], export_files[BF16]


def test_kernels_exact(pair):
    a, b, pa, pb = pair
    check_diff(a.diff(b, by="kernel"), totals(raw_kernels(pa), lambda f, s: f), totals(raw_kernels(pb), lambda f, s: f))


def test_kernels_by_base_name_match_fp32_and_bf16_gemms(pair):
    a, b, pa, pb = pair
    ka, kb = raw_kernels(pa), raw_kernels(pb)
    df = a.diff(b, by="kernel", match="base")
    check_diff(df, totals(ka, base_name), totals(kb, base_name))
    gemm = df.filter(df["name"] == "gemm*").row(0, named=True)
    # fp32 runs cuBLAS's SIMT kernels (sm80_xmma_gemm_..._ffma_..., cutlass simt sgemm), bf16 nvjet ones:
    # no name in common, yet one row with both sides' GEMM time
    assert {f for f, _, _ in ka if "nvjet" in f} == set() and any("nvjet" in f for f, _, _ in kb)
    assert gemm["a_count"] > 0 and gemm["b_count"] > 0
    assert gemm["a_ns"] == sum(d for f, s, d in ka if base_name(f, s) == "gemm*")
    exact = a.diff(b, by="kernel")
    assert not any(n.startswith("nvjet") for n in exact.filter(exact["a_count"] > 0)["name"])


def test_ranges_by_path(pair):
    a, b, pa, pb = pair

    def expected(path):
        plain = plain_attribution(path)
        paths = user_range_paths(plain)
        count, ns = Counter(), Counter()
        for r in plain.ranges:
            if r["id"] in paths:
                count[paths[r["id"]]] += 1
                ns[paths[r["id"]]] += r["end"] - r["start"]
        return count, ns

    df = a.diff(b)
    check_diff(df, expected(pa), expected(pb))
    assert "forward_pass/layer_0/attention_sublayer" in df["name"].to_list()  # the step range left out


def test_layers_match_layers_frame(pair):
    a, b, _, _ = pair
    df = a.diff(b, by="layer")
    for side, ex in (("a", a), ("b", b)):
        layers = {r["layer"]: (r["kernels"], r["total_ns"]) for r in ex.layers(analysed=False).iter_rows(named=True)}
        got = {r["name"]: (r[f"{side}_count"], r[f"{side}_ns"]) for r in df.iter_rows(named=True)
               if r[f"{side}_count"]}
        assert got == layers


def test_same_export_has_no_change(pair):
    a = pair[0]
    for by in ("range", "kernel", "layer"):
        df = a.diff(a, by=by)
        assert df.height > 0 and set(df["delta_ns"]) == {0} and (df["a_ns"] == df["b_ns"]).all()


def test_names_on_one_side_only(tmp_path):
    a, _ = open_case(tmp_path / "a", "steps_named")
    b, _ = open_case(tmp_path / "b", "steps_pattern")
    df = a.diff(b, by="kernel")
    rows = {r["name"]: r for r in df.iter_rows(named=True)}
    assert (rows["k1"]["a_count"], rows["k1"]["b_count"], rows["k1"]["b_ns"], rows["k1"]["delta_ns"]) == (1, 0, 0, -400)
    assert rows["k_bwd_a"]["a_ns"] == 0 and rows["k_bwd_a"]["b_ns"] == 800 and rows["k_bwd_a"]["delta_pct"] is None
    assert rows["k1"]["delta_pct"] == pytest.approx(-100.0) and rows["k1"]["ratio"] == 0.0
    a.close()
    b.close()


def test_bad_options(pair):
    a, b, _, _ = pair
    with pytest.raises(nsysql.NsysqlError, match="add `by='kernel'`"):  # the Python argument, not --by
        a.diff(b, by="range", match="base")
    with pytest.raises(nsysql.NsysqlError, match="takes range, kernel, layer"):
        a.diff(b, by="thread")


def test_cli(export_files, cache_dir):
    args = [str(export_files[FP32]), str(export_files[BF16]), "--cache-dir", str(cache_dir)]
    res = runner.invoke(app, ["diff", *args, "--by", "kernel", "--match", "base", "--format", "csv", "--top", "3"])
    assert res.exit_code == 0, res.output
    lines = res.output.strip().splitlines()
    assert lines[0] == "name,a_count,b_count,a_ns,b_ns,delta_ns,delta_pct,ratio" and len(lines) == 4
    res = runner.invoke(app, ["diff", *args, "--match", "base"])
    assert res.exit_code == 1 and "--by kernel" in res.output
