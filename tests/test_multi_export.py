"""Several exports at once: globs, `export`/`rank` columns, and `summarize` across ranks."""
from __future__ import annotations

import json
import shutil

import polars as pl
from typer.testing import CliRunner

from nsysql.answers import multi
from nsysql.cli.app import app


def ranks(export_files, tmp_path):
    """rank0 and rank1: the same fp32 training capture; rank2: the forward-only capture (less GPU work)."""
    d = tmp_path / "run"
    d.mkdir()
    shutil.copy(export_files["gpt-tiny-train-fp32"], d / "train_rank0.sqlite")
    shutil.copy(export_files["gpt-tiny-train-fp32"], d / "train_rank1.sqlite")
    shutil.copy(export_files["gpt-tiny-forward"], d / "train_rank2.sqlite")
    return d


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def test_rank_and_label_from_file_names(tmp_path):
    assert multi.rank_of(tmp_path / "job_rank07.sqlite.xz") == 7
    assert multi.rank_of(tmp_path / "node1-r3.sqlite") == 3
    assert multi.rank_of(tmp_path / "gpt-tiny-train-fp32.sqlite") is None
    assert multi.labels([tmp_path / "a" / "export.sqlite.xz", tmp_path / "b" / "export.sqlite.xz"]) == ["a", "b"]
    assert multi.labels([tmp_path / "a" / "x.sqlite", tmp_path / "b" / "x.sqlite", tmp_path / "b" / "y.sqlite"]) == \
        ["a/x", "b/x", "b/y"]


def test_glob_report_rows_carry_export_and_rank(export_files, tmp_path, opened):
    d = ranks(export_files, tmp_path)
    out = tmp_path / "k.csv"
    res = invoke("report", "cuda_gpu_kern_sum", d / "train_rank*.sqlite", "-f", "csv", "-o", out,
                 "--cache-dir", tmp_path / "c")
    assert res.exit_code == 0, res.output
    df = pl.read_csv(out)
    assert df.columns[:2] == ["export", "rank"]
    assert sorted(set(df["rank"])) == [0, 1, 2]
    single = opened["gpt-tiny-train-fp32"].report("cuda_gpu_kern_sum")
    r0 = df.filter(pl.col("rank") == 0)
    assert r0["Total Time (ns)"].to_list() == single["Total Time (ns)"].to_list()
    assert r0["Name"].to_list() == single["Name"].to_list()


def test_layers_and_kernels_many(export_files, tmp_path):
    d = ranks(export_files, tmp_path)
    res = invoke("kernels", d / "train_rank0.sqlite", d / "train_rank2.sqlite", "-f", "json",
                 "--cache-dir", tmp_path / "c")
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)
    assert {r["export"] for r in rows} == {"train_rank0", "train_rank2"}
    res = invoke("layers", d / "train_rank*.sqlite", "--depth", "1", "-f", "csv", "--cache-dir", tmp_path / "c")
    assert res.exit_code == 0, res.output
    assert res.stdout.splitlines()[0] == \
        "export,rank,layer,fprop_ns,bprop_ns,recompute_ns,optim_ns,comm_ns,total_ns,kernels,pct,bprop_ratio"


def test_summarize_many_flags_the_deviating_rank(export_files, tmp_path, opened):
    d = ranks(export_files, tmp_path)
    res = invoke("summarize", d / "train_rank*.sqlite", "-f", "json", "--cache-dir", tmp_path / "c")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    exports = {r["rank"]: r for r in doc["exports"]["rows"]}
    busy = {ident: opened[ident].sql("SELECT SUM(end_ns - start_ns) AS b FROM gpu_busy")["b"][0]
            for ident in ("gpt-tiny-train-fp32", "gpt-tiny-forward")}
    assert exports[0]["gpu_busy_ns"] == busy["gpt-tiny-train-fp32"]
    assert exports[2]["gpu_busy_ns"] == busy["gpt-tiny-forward"]
    assert [exports[r]["deviates"] for r in (0, 1, 2)] == [False, False, True]
    spread = {r["range_name"]: r for r in doc["range_spread"]["rows"]}
    fwd = spread[":forward_pass"]
    assert fwd["exports"] == 3 and fwd["min_ns"] <= fwd["median_ns"] <= fwd["max_ns"]
    assert not any("op_id" in name for name in spread)
    [step] = doc["slowest_per_step"]["rows"]
    walls = {ident: opened[ident].steps()["wall_ns"][0] for ident in ("gpt-tiny-train-fp32", "gpt-tiny-forward")}
    assert step["max_wall_ns"] == max(walls.values())
    assert step["slowest_rank"] in (0, 1)  # the training step is longer than the forward-only one


def test_glob_without_match_is_one_line_error(tmp_path):
    res = invoke("kernels", tmp_path / "nothing*.sqlite")
    assert res.exit_code == 1
    assert res.output.strip() == f"Error: {tmp_path / 'nothing*.sqlite'}: no file matches this pattern"


def test_overhead_memcpy_gaps_utilization_many(export_files, tmp_path, opened):
    d = ranks(export_files, tmp_path)
    single = opened["gpt-tiny-train-fp32"]
    cases = [(["overhead", "--by", "thread"], single.overhead(by="thread")),
             (["memcpy", "--by", "kind"], single.memcpy(by="kind")),
             (["gaps", "--min-gap-us", "50"], single.gaps(min_gap_us=50)),
             (["utilization", "--window-ms", "5"], single.utilization(window_ms=5))]
    for args, expected in cases:
        res = invoke(*args, d / "train_rank*.sqlite", "-f", "json", "--cache-dir", tmp_path / "c")
        assert res.exit_code == 0, res.output
        rows = [r for r in json.loads(res.stdout) if r["rank"] == 1]
        assert len(rows) == expected.height, args
        key = expected.columns[-1]
        assert [r[key] for r in rows] == expected[key].to_list(), args
