"""The summary's bound line covers the analysed steps, and critical-path and what-if are kept with the export's
answers (issue 41): the line walks every analysed step up to critical_path.SUMMARY_BUDGET and names its sample past
it (`last 3 of 8 steps`, `last step of 8`); a second run reads the walk and the replay back without building the
graph, and says the missing-edge note once per export (again with --verbose)."""
from __future__ import annotations

import polars as pl
import pytest
from typer.testing import CliRunner

import nsysql
from nsysql.answers import cp_graph
from nsysql.answers import critical_path as cp
from nsysql.answers.summary import bound_of, bound_section
from nsysql.cli.app import app

runner = CliRunner()


@pytest.fixture(scope="module")
def plain(fixture_sqlite):
    """name -> the fixture's export as a plain .sqlite (tests/conftest.py)."""
    return fixture_sqlite


@pytest.mark.parametrize("name", ["gpt-decode-eager", "ddp-2gpu-torchrun", "cnn-dataloader-train"])
def test_the_bound_line_covers_every_analysed_step(name, plain, cache_dir):
    with nsysql.open(plain(name), cache_dir=cache_dir) as ex:
        bound = bound_section(ex)
        analysed = ex.run("analysis.steady_steps").filter(pl.col("analysed"))
        assert bound["steps"] == analysed.height, bound
        assert bound["line"].startswith("Bound by (critical path): "), bound


def test_a_sampled_bound_line_names_its_sample(plain, cache_dir):
    """On the 8 analysed steps of cnn-dataloader-train, budgets that hold some of them: the line names how many of
    how many, the plural right."""
    with nsysql.open(plain("cnn-dataloader-train"), cache_dir=cache_dir) as ex:
        analysed = cp.steps(ex)["step"].n_unique()
        assert analysed == 8
        seen = set()
        for budget in (1, 6000, cp.SUMMARY_BUDGET):
            comp = cp.composition(ex, budget=budget)
            items = cp.item_rows(ex, budget=budget)
            walked = comp["step"].n_unique()
            line = bound_of(comp, items, analysed)["line"]
            want = "" if walked == 8 else ", last step of 8" if walked == 1 else f", last {walked} of 8 steps"
            assert line.startswith(f"Bound by (critical path{want}): "), (budget, line)
            assert "1 steps" not in line
            seen.add(1 if walked == 1 else 8 if walked == 8 else 2)
        assert seen == {1, 2, 8}  # each form was checked


def test_a_second_run_reads_the_walk_and_the_replay_back(plain, cache_dir, monkeypatch):
    path = plain("cnn-pinned-launch-bound")
    with nsysql.open(path, cache_dir=cache_dir) as ex:
        first = (ex.critical_path(), ex.critical_path(items=True), ex.what_if(["range:dataloader=0"], matched=True))

    def no_graph(*_a, **_k):
        raise AssertionError("the graph was built again")
    monkeypatch.setattr(cp_graph, "build", no_graph)
    with nsysql.open(path, cache_dir=cache_dir) as ex:
        again = (ex.critical_path(), ex.critical_path(items=True), ex.what_if(["range:dataloader=0"], matched=True))
        for a, b in zip(first, again):
            assert a.equals(b)
        with pytest.raises(AssertionError, match="built again"):  # another replay is computed, not guessed
            ex.what_if(["range:dataloader=0.5"])


def test_the_missing_edge_note_is_said_once_per_export(plain, tmp_path):
    path = plain("bert-2layer-train")  # no CUDA event records: no cross-stream waits
    argv = ["critical-path", str(path), "--cache-dir", str(tmp_path / "cache")]
    said = [("note: no cross-stream waits" in runner.invoke(app, argv).output) for _ in range(2)]
    assert said == [True, False]
    assert "note: no cross-stream waits" in runner.invoke(app, [*argv, "--verbose"]).output
    res = runner.invoke(app, [*argv[:2], "--no-cache"])  # a throwaway cache keeps nothing: always said
    assert "note: no cross-stream waits" in res.output
