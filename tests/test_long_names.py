"""A 1 MiB NVTX range name (scripts/make_long_names.py): every command answers, because the routines that shorten
names for people cut a long text once, in one pass, before their per-character and per-component work (bounded
by construction: their inputs are checked here, not their time)."""
from __future__ import annotations

import pytest
from typer.testing import CliRunner

from nsysql.cli.app import app
from nsysql.present import plot, render

from conftest import load_script

MIB = 1 << 20


def _recording(monkeypatch, module, name: str, seen: list[int], most: int) -> None:
    """Record the number of characters `module.name` is given (a list of parts, or a text); more than `most`
    fails at once (the work that follows would not end in the test's lifetime)."""
    original = getattr(module, name)

    def spy(first, *args, **kwargs):
        seen.append(sum(map(len, first)) if isinstance(first, list) else len(first))
        assert seen[-1] <= most, f"{name} given {seen[-1]} characters"
        return original(first, *args, **kwargs)
    monkeypatch.setattr(module, name, spy)


@pytest.mark.parametrize("text", [
    "a" * MIB,                                # one component: shortened character by character before
    "forward_pass/" + "b" * MIB + "/attn",    # a long middle component
    "layer/" * (MIB // 6),                    # many components: dropped one by one before, each time joined
])
def test_path_shortening_works_on_a_bounded_text(monkeypatch, text):
    seen: list[int] = []
    _recording(monkeypatch, render, "_kept", seen, 1000)
    _recording(monkeypatch, render, "_fit_components", seen, 1000)
    short = render.shorten_path(text, 40)
    assert len(short) <= 40 and "…" in short
    assert short[:3] == text[:3]  # the start is kept
    assert max(seen, default=0) <= render.bounded(40)


def test_plot_labels_are_bounded():
    long = "forward_pass/" + "x" * MIB
    paths = [f"{long}/layer_{i}/model/attn" for i in range(3)] + ["c" * MIB, "optimizer_step"]
    labels = plot._unique_short_paths(paths, limit=60)
    assert all(len(label) <= 120 for label in labels)
    assert len(set(labels)) == len(labels)  # still told apart: by their numbered component
    assert labels[-1] == "optimizer_step"


@pytest.fixture(scope="module")
def long_export(tmp_path_factory):
    return load_script("scripts/make_long_names.py").build(tmp_path_factory.mktemp("long"))


def test_the_export_has_the_long_name(long_export):
    import sqlite3
    con = sqlite3.connect(long_export)
    lengths = [n for (n,) in con.execute("SELECT length(text) FROM NVTX_EVENTS WHERE length(text) >= ?", (MIB,))]
    con.close()
    assert lengths == [MIB] * 3


@pytest.mark.parametrize("args", [
    ["layers"], ["layers", "--depth", "2", "--merge-repeats"], ["summarize"], ["kernels", "--style", "pyprof"],
    ["steps"], ["report", "nvtx_sum"], ["diff"],
])
def test_commands_answer_with_short_lines(long_export, tmp_path_factory, args):
    cache = tmp_path_factory.getbasetemp() / "long-cache"
    exports = [str(long_export)] * (2 if args == ["diff"] else 1)
    cmd = args[:2] if args[0] == "report" else args[:1]
    res = CliRunner().invoke(app, [*cmd, *exports, *args[len(cmd):], "--cache-dir", str(cache)],
                             env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    long_lines = [line[:60] for line in res.output.splitlines() if len(line) > 80]
    assert args[0] == "report" or not long_lines  # NVIDIA's reports print names whole, as nsys does


def test_plot_layers_answers(long_export, tmp_path_factory, tmp_path):
    cache = tmp_path_factory.getbasetemp() / "long-cache"
    out = tmp_path / "layers.png"
    res = CliRunner().invoke(app, ["plot", "layers", str(long_export), "-o", str(out), "--cache-dir", str(cache)])
    assert res.exit_code == 0, res.output
    assert out.stat().st_size > 0
