"""Communication as its own direction, on the real two-GPU DDP capture (../shared/samples/ddp-2gpu/torchrun, never
committed: skipped where it is not there): every NCCL kernel, found by its name in the raw SQLite rows, is charged
`comm` and no other GPU op is; the layers, coverage and step figures and the plots follow."""
from __future__ import annotations

import sqlite3
from collections import Counter

import pytest

import nsysql
from nsysql.present import plot

from conftest import REPO, unxz
from plainwalk import PlainAttribution, ops_in_steps, plain_steps, union_length
from test_attribution import _differs, _rows

DDP = REPO.parent / "shared" / "samples" / "ddp-2gpu" / "torchrun" / "export.sqlite.xz"
pytestmark = pytest.mark.skipif(not DDP.exists(), reason="../shared/samples/ddp-2gpu is not here")


@pytest.fixture(scope="module")
def ddp(tmp_path_factory):
    directory = tmp_path_factory.mktemp("ddp")
    path = unxz(DDP, directory / "torchrun.sqlite")  # lzma
    with nsysql.open(path, cache_dir=directory / "cache") as ex:
        yield ex, path


def raw_kernels(path) -> dict[int, tuple[int, int, str]]:
    """{rowid: (start, end, demangled name)} of every kernel, the names from StringIds."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return {rowid: (s, e, name) for rowid, s, e, name in db.execute(
            "SELECT k.rowid, k.start, k.end, s.value FROM CUPTI_ACTIVITY_KIND_KERNEL AS k "
            "JOIN StringIds AS s ON s.id = k.demangledName")}
    finally:
        db.close()


def nccl_ids(path) -> set[int]:
    return {rowid for rowid, (_, _, name) in raw_kernels(path).items() if "nccl" in name.lower()}


def test_every_nccl_kernel_is_comm_and_nothing_else(ddp):
    ex, path = ddp
    kernels = raw_kernels(path)
    nccl = Counter(kernels[i] for i in nccl_ids(path))
    assert sum(nccl.values()) == 156  # all-reduces of DDP's buckets, its broadcasts and an all-gather
    table = ex.kernel_table()
    comm = Counter((r["start_ns"], r["start_ns"] + r["duration_ns"], r["kernel"])
                   for r in table.iter_rows(named=True) if r["direction"] == "comm")
    assert comm == nccl
    assert table.height == 11219 and set(table["direction"]) == {"fprop", "bprop", "optim", "comm", "other"}


def test_directions_match_the_plain_walk(ddp):
    """Rules 1-6 row by row, as test_attribution checks the fixtures: the plain walk's comm is NCCL's domain or name."""
    ex, path = ddp
    expected = PlainAttribution(path).attribute()
    got = _rows(ex)
    assert len(got) == len(expected)
    mismatches = [(g, e) for g, e in zip(got, expected) if _differs(g, e)]
    assert not mismatches, f"{len(mismatches)} rows differ, first: {mismatches[:3]}"


def test_comm_time_in_layers_coverage_and_steps(ddp):
    ex, path = ddp
    kernels = raw_kernels(path)
    nccl = nccl_ids(path)
    nccl_ns = sum(kernels[i][1] - kernels[i][0] for i in nccl)
    layers = ex.layers(analysed=False)
    assert layers["comm_ns"].sum() == nccl_ns
    assert (layers["fprop_ns"] + layers["bprop_ns"] + layers["optim_ns"] + layers["comm_ns"] <= layers["total_ns"]).all()
    cov = ex.attribution_coverage()
    assert cov["comm_ns"] == nccl_ns
    assert cov["fprop_ns"] + cov["bprop_ns"] + cov["optim_ns"] + cov["comm_ns"] + cov["other_ns"] == cov["kernel_ns"]
    pa = PlainAttribution(path)
    steps = plain_steps(pa)
    ops = ops_in_steps(pa, steps)
    got = ex.steps().to_dicts()
    assert len(got) == len(steps) == 8  # 4 profiled steps on each of the two ranks
    for i, row in enumerate(got):
        mine = [(s, e) for kind, rowid, s, e, _ in ops.get(i, []) if kind == "kernel" and rowid in nccl]
        assert mine and row["comm_ns"] == union_length(mine), row["step"]


def test_backward_inference_sees_past_the_all_reduces(ddp):
    """DDP's all-reduces run between the layers' backward as buckets fill; with them out of rule 7's passes each
    profiled step's backward is placed on its layers, where before `forward_pass` got it whole (208 ms)."""
    ex, _ = ddp
    layers = {r["layer"]: r for r in ex.layers(depth=2).iter_rows(named=True)}
    for n in range(8):
        assert layers[f"forward_pass/layer_{n}"]["bprop_ns"] > layers[f"forward_pass/layer_{n}"]["fprop_ns"]
    assert layers["forward_pass"]["bprop_ns"] < layers["forward_pass/layer_0"]["bprop_ns"] * 2


def drawn(monkeypatch):
    """plot's figures, kept as they are saved."""
    figures = []
    real = plot._save

    def keep(fig, output):
        figures.append(fig)
        return real(fig, output)
    monkeypatch.setattr(plot, "_save", keep)
    return figures


def test_timeline_draws_comm_in_its_own_colour(ddp, tmp_path, monkeypatch):
    from matplotlib.colors import to_hex
    ex, _ = ddp
    figures = drawn(monkeypatch)
    pid = ex.steps()["pid"][0]
    plot.timeline(ex, tmp_path / "step.png", step=2, pid=pid)
    ax_gpu = figures[0].axes[1]
    legend = {t.get_text(): to_hex(h.get_facecolor()) for t, h in
              zip(ax_gpu.get_legend().get_texts(), ax_gpu.get_legend().legend_handles)}
    assert legend["communication (NCCL)"] == plot.DIRECTION_COLORS["comm"].lower()
    assert len(set(plot.DIRECTION_COLORS.values())) == len(plot.DIRECTION_COLORS)  # a colour of its own
    bars = [to_hex(c.get_facecolor()[0]) for c in ax_gpu.collections]
    assert plot.DIRECTION_COLORS["comm"].lower() in bars


def test_layers_plot_has_a_comm_bar(ddp, tmp_path, monkeypatch):
    ex, _ = ddp
    figures = drawn(monkeypatch)
    plot.layers(ex, tmp_path / "layers.png", depth=2)
    labels = [t.get_text() for t in figures[0].axes[0].get_legend().get_texts()]
    assert labels[:4] == ["forward", "backward", "optimizer", "communication (NCCL)"]


def test_layers_table_shows_comm_only_with_communication(ddp, tmp_path):
    """`nsysql layers`: the comm column in the table where NCCL's kernels ran; csv always has comm_ns."""
    from typer.testing import CliRunner

    from nsysql.cli.app import app
    _, path = ddp
    runner = CliRunner()
    table = runner.invoke(app, ["layers", str(path), "--cache-dir", str(tmp_path / "cache"), "--wide"])
    assert table.exit_code == 0, table.output
    assert table.stdout.splitlines()[1].split()[:5] == ["layer", "fprop", "bprop", "optim", "comm"]
    single = REPO / "fixtures" / "gpt-tiny-train-fp32" / "export.sqlite.xz"  # one GPU, no NCCL
    plain = runner.invoke(app, ["layers", str(single), "--cache-dir", str(tmp_path / "cache"), "--wide"])
    assert plain.exit_code == 0 and "comm" not in plain.stdout.splitlines()[1].split()
    csv = runner.invoke(app, ["layers", str(single), "--cache-dir", str(tmp_path / "cache"), "-f", "csv"])
    assert "comm_ns" in csv.stdout.splitlines()[0].split(",")
