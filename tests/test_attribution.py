"""Kernel attribution (`nsysql kernels` / `layers`) against a plain brute-force walk of the raw rows."""
from __future__ import annotations

import sqlite3

import pytest
from typer.testing import CliRunner

from conftest import plain_attribution
from plainwalk import PlainAttribution, plain_steps

TRAIN = ["gpt-tiny-train-fp32", "gpt-tiny-train-bf16", "gpt-tiny-train-noops", "bert-2layer-train", "ncf-train",
         "dlrm-train", "gpt-tiny-train-annotated"]


def _rows(ex):
    df = ex.kernel_table()
    ids = ex.sql("SELECT o.op_kind, o.op_id, CAST(a.link AS VARCHAR) FROM gpu_op AS o "
                 "JOIN gpu_op_attribution AS a USING (op_kind, op_id) ORDER BY o.start_ns, o.op_kind, o.op_id")
    assert df["idx"].to_list() == list(range(1, df.height + 1))
    return [(k, i, d, layer, op, params, seq, link) for (k, i, link), d, layer, op, params, seq in zip(
        ids.iter_rows(), df["direction"], df["layer"], df["op"], df["params"], df["seq"])]


def _differs(got: tuple, expected: tuple) -> bool:
    if got[7] != "inferred":
        return got[:7] != expected
    without_layer = got[:3] + got[4:7] != expected[:3] + expected[4:]
    return without_layer or expected[3] == "?"  # inferred only over a borrowed range


@pytest.mark.parametrize("name", ["gpt-tiny-train-fp32", "gpt-tiny-train-bf16", "gpt-tiny-forward",
                                  "gpt-tiny-train-noops", "bert-2layer-train", "ncf-train", "dlrm-train",
                                  "gpt-tiny-train-annotated", "shared-small-train"])
def test_kernel_table_matches_plain_walk(opened, export_files, name):
    """Rules 1-6 row by row. A row rule 7 inferred (its layer checked against the ground truth in
    test_backward_inference.py) is one the plain walk charges to a borrowed range, the rest of it equal."""
    if name not in opened:
        pytest.skip(f"{name} is not here")
    expected = plain_attribution(export_files[name]).attribute()
    got = _rows(opened[name])
    assert len(got) == len(expected)
    mismatches = [(g, e) for g, e in zip(got, expected) if _differs(g, e)]
    assert not mismatches, f"{len(mismatches)} rows differ, first: {mismatches[:3]}"


@pytest.mark.parametrize("name", TRAIN)
def test_coverage_at_least_99_percent(opened, export_files, name):
    """Done-when of the attribution issue, computed by the plain walk and by nsysql."""
    ex = opened[name]
    plain = plain_attribution(export_files[name])
    durations = {(o[0], o[1]): o[3] - o[2] for o in plain.ops}
    rows = plain.attribute()
    total = sum(durations[(k, i)] for k, i, *_ in rows if k == "kernel")
    known = sum(durations[(k, i)] for k, i, d, layer, *_ in rows if k == "kernel" and layer != "?" and d != "other")
    cov = ex.attribution_coverage()
    assert (cov["kernel_ns"], cov["known_layer_ns"]) == (total, known)
    assert known / total >= 0.99


def test_gpt_backward_kernels_name_their_forward_layer(opened):
    df = opened["gpt-tiny-train-fp32"].kernel_table()
    bwd = df.filter((df["direction"] == "bprop") & df["layer"].str.starts_with("forward_pass/layer_1/ffn_sublayer"))
    assert bwd.height > 0
    assert set(bwd["op"].to_list()) & {"MmBackward0", "AddmmBackward0"}
    assert bwd["seq"].null_count() == 0


def test_ncf_backward_embedding_kernels_carry_their_embedding(opened):
    """Like rows 68-187 of seed 000: sort/scan/compute_grad_weight/sum_and_scatter under the embedding."""
    df = opened["ncf-train"].pyprof_table(1)
    emb = df.filter(df["Kernel"].str.contains("compute_grad_weight|sum_and_scatter|DeviceRadixSort"))
    assert emb.height >= 8
    assert set(emb["Direction"]) == {"bprop"}
    assert set(emb["Layer"]) == {"MF_User_Embedding", "MF_Item_Embedding", "MLP_User_Embedding", "MLP_Item_Embedding"}
    assert set(emb["Op"]) == {"EmbeddingBackward0"}


def test_layers_gpt_forward_and_backward_per_layer(opened):
    ex = opened["gpt-tiny-train-fp32"]
    full = ex.layers(analysed=False)
    kt = ex.kernel_table().filter(ex.kernel_table()["kernel"].str.starts_with("[CUDA") == False)  # noqa: E712
    assert full["total_ns"].sum() == kt["duration_ns"].sum()
    assert full["kernels"].sum() == kt.height
    rolled = ex.layers(depth=2)
    for n in (0, 1):
        row = rolled.filter(rolled["layer"] == f"forward_pass/layer_{n}").row(0, named=True)
        assert row["fprop_ns"] > 0 and row["bprop_ns"] > 0
        assert row["bprop_ratio"] == pytest.approx(row["bprop_ns"] / row["fprop_ns"])
        assert 1.2 < row["bprop_ratio"] < 3.5  # the seed's analysis reads ~2x
    merged = ex.layers(depth=2, merge_repeats=True)
    star = merged.filter(merged["layer"] == "forward_pass/layer_*").row(0, named=True)
    both = rolled.filter(rolled["layer"].str.starts_with("forward_pass/layer_"))
    assert star["total_ns"] == both["total_ns"].sum()
    assert merged["pct"].sum() == pytest.approx(100.0)


def test_pyprof_style_cli(export_files, tmp_path):
    from nsysql.cli.app import app
    out = tmp_path / "k.csv"
    res = CliRunner().invoke(app, ["kernels", str(export_files["ncf-train"]), "--style", "pyprof", "-f", "csv",
                                   "-o", str(out), "--cache-dir", str(tmp_path / "c")])
    assert res.exit_code == 0, res.output
    lines = out.read_text().splitlines()
    assert lines[0] == "Idx,Direction,Layer,Op,Params,Kernel"
    assert lines[1].startswith("1,fprop,MF_User_Embedding,")
    res = CliRunner().invoke(app, ["kernels", str(export_files["ncf-train"]), "--style", "pyprof", "--step", "5",
                                   "--cache-dir", str(tmp_path / "c")])
    assert res.exit_code == 1 and "choose --step 1..1" in res.output


def test_layers_cli_prints_coverage_line(export_files, tmp_path):
    from nsysql.cli.app import app
    res = CliRunner().invoke(app, ["layers", str(export_files["gpt-tiny-train-fp32"]), "--depth", "2",
                                   "--merge-repeats", "-f", "markdown", "--cache-dir", str(tmp_path / "c")])
    assert res.exit_code == 0, res.output
    assert "| forward_pass/layer_* |" in res.output
    assert res.output.rstrip().splitlines()[-1].startswith("coverage: 100.00% of kernel time")


def test_table_output_keeps_bracketed_names():
    """Kernel names like `[CUDA memcpy Host-to-Device]` must not be eaten as rich markup."""
    import polars as pl

    from nsysql.present.render import to_table
    text = to_table(pl.DataFrame({"kernel": ["[CUDA memcpy Host-to-Device]", "[gemm]"]}), {}, width=100)
    assert "[CUDA memcpy Host-to-Device]" in text and "[gemm]" in text


def test_annotated_capture_charges_backward_to_layers_without_op_markers(opened):
    """Issue 16's GPU check: nsysql.annotate's capture, no emit_nvtx: every backward kernel of a transformer
    layer lands on that layer's forward path, through the annotated link, never the seq link."""
    ex = opened["gpt-tiny-train-annotated"]
    cov = ex.attribution_coverage()
    assert cov["by_seq_ns"] == 0 and cov["known_layer_ns"] == cov["kernel_ns"]
    assert cov["by_annotated_ns"] > 0.5 * cov["bprop_ns"]
    rolled = ex.layers(depth=4)  # forward_pass/layer_N/model/layers.N
    for n in (0, 1):
        row = rolled.filter(rolled["layer"] == f"forward_pass/layer_{n}/model/layers.{n}").row(0, named=True)
        assert 1.5 < row["bprop_ratio"] < 2.5  # the seed's "backward ~ 2x forward"
    df = ex.kernel_table()
    backward_pass = df.filter((df["direction"] == "bprop") & (df["layer"] == "backward_pass"))
    assert backward_pass["duration_ns"].sum() < 0.05 * cov["bprop_ns"]  # only the loss's own backward


def test_pyprof_step_is_each_process_own_step(opened, export_files, cache_dir):
    """fixtures/mpi-2rank: two ranks, each with steps 1-3. Step 2 is each rank's own second step; asked without
    a process, the table says which processes have it; with one, it lists the kernels launched (call start) inside
    that process's step span, in GPU start order, as a plain walk of the raw rows finds them."""
    from nsysql.cli.app import app
    from nsysql.errors import NsysqlError
    if "mpi-2rank" not in export_files:
        pytest.skip("fixtures/mpi-2rank absent")
    path, ex = export_files["mpi-2rank"], opened["mpi-2rank"]
    pa = PlainAttribution(path)
    steps = plain_steps(pa)
    pids = sorted({s["pid"] for s in steps})
    assert len(pids) == 2
    with pytest.raises(NsysqlError, match=r"2 processes have step 2 .*choose one with `pid=`"):
        ex.pyprof_table(2)
    db = sqlite3.connect(path)
    strings = dict(db.execute("SELECT id, value FROM StringIds"))
    short = {rowid: strings[n] for rowid, n in db.execute("SELECT rowid, shortName FROM CUPTI_ACTIVITY_KIND_KERNEL")}
    for pid in pids:
        step = next(s for s in steps if s["pid"] == pid and s["step"] == 2)
        launched = [(s, rowid) for kind, rowid, s, _e, p, corr in pa.ops
                    if kind == "kernel" and p == pid and (call := pa.calls.get((p, corr))) is not None
                    and step["start"] <= call[0] <= step["end"]]
        got = ex.pyprof_table(2, pid=pid)
        assert got.height == len(launched) > 0
        assert got["Idx"].to_list() == list(range(1, got.height + 1))
        assert got["Kernel"].to_list() == [short[rowid] for _, rowid in sorted(launched)]
    res = CliRunner().invoke(app, ["kernels", str(path), "--style", "pyprof", "--step", "2",
                                   "--cache-dir", str(cache_dir)])
    assert res.exit_code == 1 and "choose one with --pid" in res.output, res.output
    res = CliRunner().invoke(app, ["kernels", str(path), "--style", "pyprof", "--pid", "1", "--cache-dir", str(cache_dir)])
    assert res.exit_code == 1 and "process 1 has no step ranges" in res.output, res.output


def test_step_and_pid_go_with_the_pyprof_style(export_files, cache_dir):
    from nsysql.cli.app import app
    res = CliRunner().invoke(app, ["kernels", str(export_files["ncf-train"]), "--pid", "1", "--cache-dir", str(cache_dir)])
    assert res.exit_code == 1 and "--style pyprof" in res.output and "Traceback" not in res.output, res.output


def test_pyprof_step_of_an_export_without_steps(tmp_path):
    """`--step N` on an export without step ranges is one clear error, never every kernel; no --step (or
    --step 0) gives every kernel."""
    from nsysql.cli.app import app

    from conftest import make_synthetic
    path = make_synthetic().no_steps().write(tmp_path / "no-steps.sqlite")
    cache = ["--cache-dir", str(tmp_path / "cache")]
    kernels = sqlite3.connect(path).execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
    for step in ("1", "2"):
        res = CliRunner().invoke(app, ["kernels", str(path), "--style", "pyprof", "--step", step, *cache])
        assert res.exit_code == 1, res.output
        assert res.output.count("\n") == 1 and "has no step ranges" in res.output and "Traceback" not in res.output
    for extra in ([], ["--step", "0"]):
        res = CliRunner().invoke(app, ["kernels", str(path), "--style", "pyprof", "-f", "csv", *extra, *cache])
        assert res.exit_code == 0, res.output
        assert len(res.output.strip().splitlines()) == 1 + kernels


@pytest.mark.parametrize("name", ["mpi-2rank", "gpt-tiny-train-fp32", "ddp-2gpu-torchrun"])
def test_layers_of_one_step_add_up_to_its_kernel_time(opened, export_files, name):
    """`layers --step N --pid P`: per layer, the kernels whose launching call starts inside step N of process P
    (a plain walk of the raw rows: steps, calls, the plain attribution); kernels outside every layer are the row
    `?`, so the rows add up to the step's kernel time, and the whole export's rows to all kernel time."""
    from collections import Counter
    if name not in export_files:
        pytest.skip(f"fixtures/{name} absent")
    ex, path = opened[name], export_files[name]
    pa = PlainAttribution(path)
    layer_of = {(kind, rowid): layer for kind, rowid, _d, layer, *_ in pa.attribute()}
    kernels = [(rowid, s, e, pid, corr) for kind, rowid, s, e, pid, corr in pa.ops if kind == "kernel"]
    whole = ex.layers(analysed=False)
    assert whole["total_ns"].sum() == sum(e - s for _, s, e, _, _ in kernels)
    steps = plain_steps(pa)
    assert steps
    for step in steps:
        expected, count = Counter(), Counter()
        for rowid, s, e, pid, corr in kernels:
            call = pa.calls.get((pid, corr))
            if pid == step["pid"] and call is not None and step["start"] <= call[0] <= step["end"]:
                expected[layer_of[("kernel", rowid)]] += e - s
                count[layer_of[("kernel", rowid)]] += 1
        got = ex.layers(step=step["step"], pid=step["pid"])
        assert dict(zip(got["layer"], got["total_ns"])) == dict(expected)
        assert dict(zip(got["layer"], got["kernels"])) == dict(count)
        assert got["pct"].sum() == pytest.approx(100.0)
        if "?" in expected:
            assert got["layer"][-1] == "?"


def test_layers_step_cli(export_files, tmp_path):
    from nsysql.cli.app import app
    if "mpi-2rank" not in export_files:
        pytest.skip("fixtures/mpi-2rank absent")
    path, cache = str(export_files["mpi-2rank"]), ["--cache-dir", str(tmp_path / "c")]
    res = CliRunner().invoke(app, ["layers", path, "--step", "2", *cache])
    assert res.exit_code == 1 and "choose one with --pid" in res.output and res.output.count("\n") == 1
    pid = int(sqlite3.connect(path).execute("SELECT min(pid) FROM PROCESSES WHERE name = 'python3'").fetchone()[0])
    out = tmp_path / "layers.csv"
    res = CliRunner().invoke(app, ["layers", path, "--step", "2", "--pid", str(pid), "-f", "csv", "-o", str(out),
                                   *cache])
    assert res.exit_code == 0, res.output
    header = out.read_text().splitlines()[0]
    assert header == "layer,fprop_ns,bprop_ns,recompute_ns,optim_ns,comm_ns,total_ns,kernels,pct,bprop_ratio"  # contract
    res = CliRunner().invoke(app, ["layers", path, "--pid", str(pid), *cache])
    assert res.exit_code == 1 and "--step" in res.output
