"""Findings (`nsysql findings`, Export.findings(), queries/findings/*.sql).

Each rule fires on a real capture made to show its problem, with recoverable_ns equal to a plain recomputation
from the raw rows (tests/plainfindings.py: sqlite3, Python interval unions, written from the rules' headers),
and stays quiet on a real capture that does not have the problem.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from nsysql.answers import findings as F
from nsysql.sql import catalog

REPO = Path(__file__).resolve().parent.parent

# rule -> (capture where it fires, capture where it does not)
CASES = {
    "pageable_copy": ("cnn-dataloader-train", "gpt-tiny-train-fp32"),  # fp32 GPT: one 4 KB copy per step, below the floor
    "sync_in_step": ("cnn-dataloader-train", "cnn-pinned-train"),
    "gpu_idle_in_step": ("cnn-dataloader-train", "cnn-pinned-train"),
    "launch_bound": ("gpt-tiny-train-w18s3", "cnn-pinned-train"),
    "fp32_gemm": ("cnn-dataloader-train", "gpt-tiny-train-bf16"),
    "dataloader_wait": ("cnn-dataloader-train", "cnn-pinned-train"),  # workers keep ahead: the fetch is short
    "short_kernels": ("gpt-tiny-train-w18s3", "cnn-pinned-train"),
    "outlier_step": ("cnn-dataloader-train", "gpt-tiny-train-w18s3"),  # checkpoint steps / 3 even steps
    "exposed_comm": ("cnn-nccl-1gpu", "gpt-tiny-train-fp32"),
}


@pytest.fixture(scope="session")
def found(opened):
    """ident -> Export.findings() of that golden export, computed once."""
    done = {}

    def get(ident):
        if ident not in opened:
            pytest.fail(f"fixtures/{ident} is missing: the findings tests need it")
        if ident not in done:
            done[ident] = opened[ident].findings()
        return done[ident]
    return get


@pytest.fixture(scope="session")
def plain(export_files):
    """ident -> PlainFindings of that export, built once."""
    sys.path.insert(0, str(Path(__file__).parent))
    from plainfindings import PlainFindings
    done = {}

    def get(ident):
        if ident not in done:
            done[ident] = PlainFindings(export_files[ident])
        return done[ident]
    return get


def rows(df: pl.DataFrame, rule: str) -> list[dict]:
    return df.filter(pl.col("rule") == rule).to_dicts()


def plain_bounds(p, rule: str) -> list[int]:
    """The plain bound(s) of `rule` where it fires: one per process (per thread, stream or device for the rules
    that report those), sorted."""
    if rule == "gpu_idle_in_step":
        values = [ns for pid, ns in p.gpu_idle_in_step().items() if 100 * ns >= 10 * p.wall(pid)]
    elif rule == "sync_in_step":
        values = [ns for pid, ns in p.sync_in_step().items() if ns > 0 and 100 * ns >= 1 * p.wall(pid)]
    elif rule == "pageable_copy":
        values = [ns for pid, ns in p.pageable_copy().items() if ns > 0 and ns >= 10_000 * p.steps(pid)]
    elif rule == "fp32_gemm":
        values = [saved for gemm, busy, saved in p.fp32_gemm().values() if gemm > 0 and 100 * gemm >= 10 * busy]
    elif rule == "dataloader_wait":
        values = [ns for pid, ns in p.dataloader_wait().items() if ns > 0 and 100 * ns >= 1 * p.wall(pid)]
    else:
        values = list(getattr(p, rule)().values())
    return sorted(values)


@pytest.mark.parametrize("rule", list(CASES))
def test_rule_fires_with_the_plain_bound(rule, found, plain):
    ident = CASES[rule][0]
    got = rows(found(ident), rule)
    assert got, f"{rule} should fire on {ident}"
    expected = plain_bounds(plain(ident), rule)
    assert sorted(r["recoverable_ns"] for r in got) == expected
    for r in got:
        assert r["recoverable_ns"] > 0
        assert r["title"] and r["where"] and r["evidence"] and r["action"]
        assert r["where"].startswith(("step ", "steps ")), r["where"]
        wall = plain(ident).wall(next(iter(plain(ident).pids)))
        assert r["recoverable_pct"] == pytest.approx(100 * r["recoverable_ns"] / wall)


@pytest.mark.parametrize("rule", list(CASES))
def test_rule_quiet_without_the_problem(rule, found):
    ident = CASES[rule][1]
    assert not rows(found(ident), rule), f"{rule} should not fire on {ident}"


def test_gpu_idle_is_the_ceiling_of_the_idle_findings(found):
    """Every finding about idle time bounds a part of gpu_idle_in_step's idle time, per thread or stream."""
    df = found("cnn-dataloader-train")
    idle = rows(df, "gpu_idle_in_step")[0]["recoverable_ns"]
    for rule in ("sync_in_step", "dataloader_wait", "launch_bound", "short_kernels"):
        for r in rows(df, rule):
            assert r["recoverable_ns"] <= idle, rule
    assert sum(r["recoverable_ns"] for r in rows(df, "launch_bound")) <= idle  # gaps belong to one thread each


def test_where_and_evidence_name_the_cause(found):
    df = found("cnn-dataloader-train")
    (dl,) = rows(df, "dataloader_wait")
    assert "in dataloader" in dl["where"] and "thread python3" in dl["where"]
    (slow,) = rows(df, "outlier_step")
    assert "checkpoint +" in slow["evidence"]  # the checkpoint every 4 steps makes the slow steps
    (gemm,) = rows(df, "fp32_gemm")
    assert "f32f32" in gemm["where"]
    (sync,) = rows(df, "sync_in_step")
    assert "cudaStreamSynchronize" in sync["evidence"] and "log_loss" in sync["where"]
    (comm,) = rows(found("cnn-nccl-1gpu"), "exposed_comm")
    assert "oneRankReduce" in comm["where"]  # NCCL's one-rank kernel, found by its NCCL-domain launch range


def test_counts_in_the_texts_read_with_thousands_separators(found, plain):
    """A count of a thousand or more reads `1,304 launches`, as every table prints counts; the count itself comes
    from the plain walk of the raw rows."""
    walk = plain("cnn-dataloader-train")
    checked = 0
    for lb in rows(found("cnn-dataloader-train"), "launch_bound"):
        launches = sum(1 for _, c, _ in walk.launched() if f"({c['tid']})" in lb["where"])
        assert lb["evidence"].startswith(f"{launches:,} launches in ")
        checked += launches >= 1000
    assert checked  # the case this test is about: a thread with a thousand launches or more


def test_order_and_columns(found):
    for ident in ("cnn-dataloader-train", "gpt-tiny-train-fp32"):
        df = found(ident)
        assert list(df.columns) == list(F.FINDING_COLUMNS)
        assert df.schema == pl.Schema(F.FINDING_COLUMNS)
        keys = [(-r["recoverable_ns"], r["rule"]) for r in df.to_dicts()]
        assert keys == sorted(keys)
        assert set(df["rule"]) <= {q.name for q in F.rules()}


def test_every_rule_has_the_same_columns():
    queries = F.rules()
    assert {q.name for q in queries} >= {"pageable_copy", "gpu_idle_in_step", "straggler"}  # the folder, read
    for q in queries:
        assert [(c.name, c.type) for c in q.columns] == [
            ("rule", "VARCHAR"), ("title", "VARCHAR"), ("where", "VARCHAR"), ("evidence", "VARCHAR"),
            ("action", "VARCHAR"), ("recoverable_ns", "BIGINT"), ("recoverable_pct", "DOUBLE")], q.id
        assert "analysis.steady_steps" in q.requires, q.id
        assert "notes" in q.meta and "recoverable_ns" in q.sql.split("-- columns:")[0], q.id


def test_top_and_thresholds(opened):
    ex = opened["gpt-tiny-train-fp32"]
    everything = ex.findings()
    assert ex.findings(top=2).equals(everything.head(2))
    # a rule's threshold is a parameter of its SQL, with the header's default
    strict = ex.findings(min_idle_pct=99.9)
    assert "gpu_idle_in_step" in set(everything["rule"]) and "gpu_idle_in_step" not in set(strict["rule"])


def test_rules_without_their_data_are_skipped(tmp_path):
    """A CPU-only export (NVTX and OS runtime, no CUDA): no rule fails, none fires."""
    import nsysql
    path = REPO / "fixtures" / "cpu-nvtx-osrt-nsys2022.4" / "export.sqlite.xz"
    with nsysql.open(path, cache_dir=tmp_path) as ex:
        df = ex.findings()
    assert df.height == 0 and list(df.columns) == list(F.FINDING_COLUMNS)


def cli(*args, columns=80):
    env = dict(os.environ, COLUMNS=str(columns), NSYSQL_CACHE_DIR=os.environ.get("NSYSQL_CACHE_DIR", ""))
    done = subprocess.run([sys.executable, "-m", "nsysql.cli.app", *args], capture_output=True, text=True, env=env,
                          cwd=REPO)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_cli_json_is_the_list(export_files, found, cache_dir):
    out = cli("findings", str(export_files["cnn-dataloader-train"]), "--format", "json", "--cache-dir", str(cache_dir))
    items = json.loads(out)
    df = found("cnn-dataloader-train")
    assert [i["rule"] for i in items] == df["rule"].to_list()
    assert [i["recoverable_ns"] for i in items] == df["recoverable_ns"].to_list()
    for item in items:
        assert set(item) == {"rule", "title", "where", "evidence", "action", "recoverable_ns", "recoverable_pct",
                             "predicted_gain_ns"}
        assert isinstance(item["recoverable_ns"], int)
    top = json.loads(cli("findings", str(export_files["cnn-dataloader-train"]), "-f", "json", "--top", "3",
                         "--cache-dir", str(cache_dir)))
    assert top == items[:3]


def test_cli_table_fits_80_columns(export_files, found, cache_dir):
    out = cli("findings", str(export_files["cnn-dataloader-train"]), "--cache-dir", str(cache_dir))
    lines = out.splitlines()
    assert all(len(line) <= 80 for line in lines), max(lines, key=len)
    assert "Analysed steps 1-8 (8 of 8" in out.split("\n\n")[0]
    df = found("cnn-dataloader-train")
    for i, title in enumerate(df["title"], 1):  # numbered in order, each line beginning with its title
        assert any(line.startswith(f"{i}. {title.split()[0]} ") for line in lines), (i, title)
    assert out.count("   where: ") == df.height and out.count("   do: ") == df.height
    first = next(line for line in lines if line.startswith("1. "))
    assert first.startswith("1. GPU idle inside steps")
    from nsysql.core.units import duration  # 1.2496 s over 8 steps, then the replay's figure
    assert first.endswith(f"up to 1.25 s, what-if {duration(df['predicted_gain_ns'][0])}")


def test_cli_markdown_and_csv(export_files, found, cache_dir):
    path = str(export_files["gpt-tiny-train-fp32"])
    md = cli("findings", path, "-f", "markdown", "--cache-dir", str(cache_dir))
    assert md.count("\n1. **") == 1 and "   - where: " in md
    csv = cli("findings", path, "-f", "csv", "--cache-dir", str(cache_dir))
    assert csv.splitlines()[0] == ",".join(F.FINDING_COLUMNS)
    assert len(pl.read_csv(csv.encode())) == found("gpt-tiny-train-fp32").height


def test_cli_without_findings_says_so(tmp_path):
    path = REPO / "fixtures" / "cpu-nvtx-osrt-nsys2022.4" / "export.sqlite.xz"
    out = cli("findings", str(path), "--cache-dir", str(tmp_path))
    assert out.strip().splitlines()[-1] == "No findings: no rule fired on the analysed steps."
    assert json.loads(cli("findings", str(path), "-f", "json", "--cache-dir", str(tmp_path))) == []


def test_the_rules_are_the_files_of_the_findings_folder():
    from pathlib import Path
    folder = Path(catalog.__file__).resolve().parents[2] / "queries" / "findings"
    assert [q.id for q in F.rules()] == sorted(f"findings.{p.stem}" for p in folder.glob("*.sql"))


@pytest.mark.parametrize("case", ["kernel_without_runtime", "two_processes_same_correlation", "range_crossing_threads",
                                  "graph_launch", "no_cuda", "unterminated_range"])
def test_synthetic_edge_cases_run(case, tmp_path):
    """Edge cases no capture of ours has (a kernel without its launching call, two processes sharing correlation
    ids, no step ranges, a CUDA graph, no CUDA at all): every rule runs; windows without steps say so."""
    import nsysql

    from conftest import make_synthetic
    path = make_synthetic().CASES[case]().write(tmp_path / f"{case}.sqlite")
    with nsysql.open(path, cache_dir=tmp_path / "cache") as ex:
        df = ex.findings()
        steps = F.analysed_steps(ex)
    assert list(df.columns) == list(F.FINDING_COLUMNS)
    assert (df["recoverable_ns"] >= 0).all()
    if steps.height and steps["step"].max() == 0:
        assert all(w.startswith("all GPU activity (no steps)") for w in df["where"])


def test_two_ranks_findings_per_process(tmp_path):
    """Two processes with their own steps 1-3 at the same time (make_synthetic two_ranks, ranks of one job: NCCL
    on each): a rule that fires on both ranks is one finding whose bound is the larger of the two processes' plain
    bounds (no step of one rank mixed into the other's: steps are (pid, step)), naming both ranks."""
    import nsysql

    from conftest import make_synthetic
    from plainfindings import PlainFindings
    path = make_synthetic().two_ranks().write(tmp_path / "two_ranks.sqlite")
    with nsysql.open(path, cache_dir=tmp_path / "cache") as ex:
        df = ex.findings()
        late = ex.run("findings.straggler", min_wait_pct=5, min_ns_per_step=0)  # its noise floor is 100 µs a step
    p = PlainFindings(path)
    assert p.pids == {100, 200}
    (idle,) = rows(df, "gpu_idle_in_step")
    assert plain_bounds(p, "gpu_idle_in_step") == [750, 850] and idle["recoverable_ns"] == 850
    assert idle["where"] == "ranks 0, 1: steps 1-3, thread python3 (200)"
    assert "Also: rank 0: GPU idle inside steps" in idle["evidence"]
    for rule in ("sync_in_step", "dataloader_wait", "pageable_copy"):
        bounds = plain_bounds(p, rule)
        assert [r["recoverable_ns"] for r in rows(df, rule)] == ([max(bounds)] if bounds else [])
    # rank 1 (pid 200) arrives 200 ns late at each step's all-reduce; rank 0 waits 150 ns of it with no compute
    assert "straggler" not in set(df["rule"])
    straggler = late.row(0, named=True)
    assert straggler["rule"] == "straggler" and straggler["recoverable_ns"] == 3 * 150
    assert straggler["where"].startswith("rank 1 (pid 200, GPU 1), last in 3 of 3 analysed steps")
