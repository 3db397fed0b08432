"""The outside corpus (scripts/make_outside_corpus.py, built apart from scripts/make_bad_inputs.py): every case
through the command families in turn (two for a case that fails at once, one for a case that builds a cache), so
that each family meets a dozen cases and the module stays CI-fast; the script itself runs all seven on every case. Per run, the case's contract: the untouched export's result, one clean
`Error:` line, or the warning that names the problem; never a traceback, never a hang; nothing written in the
case's directory and nothing left in TMPDIR."""
from __future__ import annotations

import itertools
import signal
import sqlite3
import tempfile

import pytest
from typer.testing import CliRunner

import nsysql
from nsysql.cli.app import app

from conftest import REPO, load_script

# a cold build per case, ~75 cases: the longest module; dealt out first under xdist (conftest.py)
pytestmark = pytest.mark.heavy

corpus = load_script("scripts/make_outside_corpus.py")

FAMILIES = list(corpus.COMMANDS)
NAMES = ["_good"] + [c[0] for c in corpus.CASES] + list(corpus.EXTERNAL_CASES)
EXPECT = {"_good": "same", **{c[0]: c[1] for c in corpus.CASES}, **{n: v[1] for n, v in corpus.EXTERNAL_CASES.items()}}
HANG_S = 60


def _plan() -> dict[str, list[str]]:
    turn = itertools.cycle(FAMILIES)
    return {name: [next(turn) for _ in range(2 if EXPECT[name] == "error" else 1)] for name in NAMES}


PLAN = _plan()


class Hang(BaseException):
    """Raised by the watchdog; a BaseException, so the CLI's error boundary cannot turn it into an Error: line."""


def invoke(case, family: str, cache, monkeypatch, tmp):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))  # TMPDIR as tempfile sees it, for this run only
    if case.cwd is not None:
        monkeypatch.chdir(case.cwd)

    def hang(signum, frame):
        raise Hang(f"{case.name} / {family}: no end after {HANG_S} s")

    previous = signal.signal(signal.SIGALRM, hang)
    signal.alarm(HANG_S)
    try:
        return CliRunner().invoke(app, corpus.COMMANDS[family](case.arg) + ["--cache-dir", str(cache)],
                                  env={"COLUMNS": "100", "NO_COLOR": "1"}, catch_exceptions=False)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    root = tmp_path_factory.mktemp("outside")
    built = {c.name: c for c in corpus.build(root / "corpus")}
    yield built
    corpus.unlock(root)  # mode-000 files and read-only directories back to deletable


@pytest.fixture(scope="module")
def original(cases, tmp_path_factory):
    """The untouched export's stdout per family, for the cases that must give the same result."""
    good, cache = cases["_good"], tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as mp:
        return {f: corpus.neutral(invoke(good, f, cache, mp, tmp_path_factory.mktemp("tmp")).stdout, good)
                for f in FAMILIES}


def test_corpus_has_forty_cases_and_every_family_meets_many():
    assert len(corpus.CASES) >= 40 and len(set(NAMES)) == len(NAMES)
    met = [f for families in PLAN.values() for f in families]
    assert all(met.count(f) >= 10 for f in FAMILIES), {f: met.count(f) for f in FAMILIES}


@pytest.mark.parametrize("name", NAMES)
def test_case(cases, original, tmp_path, monkeypatch, name):
    if name not in cases:
        pytest.skip(f"{name}: its source export (../shared/samples) is not here")
    case = cases[name]
    before = corpus.listing(case.directory)
    for family in PLAN[name]:
        tmp = tmp_path / f"tmp-{family}"
        tmp.mkdir()
        res = invoke(case, family, tmp_path / "cache", monkeypatch, tmp)
        problem = corpus.verdict(case, res.exit_code, res.stdout, res.stderr, original[family])
        assert problem is None, f"{name} / {family}: {problem}\n{res.stderr}"
        assert not list(tmp.iterdir()), f"{name} / {family}: left in TMPDIR"
    assert corpus.listing(case.directory) == before, f"{name}: something was written in its directory"


def test_verdict_catches_each_breach():
    """The contract check itself: each way a run can break it is reported (a checker that passes all is no check)."""
    c = corpus.Case("c", "/x/run.sqlite", "error", "no such file")
    assert corpus.verdict(c, 1, "", "Error: /x/run.sqlite: no such file; give ...\n", None) is None
    assert "traceback" in corpus.verdict(c, 1, "", "Traceback (most recent call last):\nError: no such file\n", None)
    assert "exactly one" in corpus.verdict(c, 1, "", "Error: no such file\nError: again\n", None)
    assert "lacks" in corpus.verdict(c, 1, "", "Error: something else\n", None)
    assert "expected an error" in corpus.verdict(c, 0, "n\n1\n", "", None)
    same = corpus.Case("s", "/x/run.sqlite", "same")
    assert corpus.verdict(same, 0, "nsysql summary: /x/run.sqlite\nA\n", "", "A\n") is None
    assert "differs" in corpus.verdict(same, 0, "B\n", "", "A\n")
    assert "original's result" in corpus.verdict(same, 0, "A\n", "warning: x: y\n", "A\n")
    warn = corpus.Case("w", "/x/run.sqlite", "warn", "duplicate rows")
    assert "no warning" in corpus.verdict(warn, 0, "A\n", "", None)
    assert corpus.verdict(warn, 1, "", "warning: run.sqlite: R: 9 duplicate rows (...)\nError: cannot\n", None) is None
    assert "exit 2" in corpus.verdict(corpus.Case("k", "/x", "clean"), 2, "", "", None)


def test_repeated_string_ids_repeat_no_kernel(cases, original, tmp_path, monkeypatch):
    """Every StringIds row twice under other names used to repeat each kernel 8x (three name joins) and leave
    `kernels` running for good; each id is now read once (its first row, here the export's own), and the warning
    says which names may be wrong."""
    case = cases["stringids_renamed_twice"]
    res = invoke(case, "kernels", tmp_path / "cache", monkeypatch, tmp_path)
    assert res.exit_code == 0, res.stderr
    assert res.stdout == original["kernels"]  # the first row of each id is the export's own name
    assert any(l.startswith("warning:") and "StringIds:" in l and "may be wrong" in l for l in res.stderr.splitlines())


def test_sanity_screen_counts_what_the_exact_counts_count(cases, tmp_path):
    """nsysql/answers/sanity.py reads the cheap screen (analysis._sanity_screen) and runs the exact analysis.sanity only
    where the screen counts something, so the screen must never count 0 where the exact query does not: on the
    untouched export both are 0 everywhere, on the damaged ones they agree row by row."""
    names = ["_good", "end_before_start", "runtime_rows_twice", "some_kernels_twice"]
    if not all(n in cases for n in names):
        pytest.skip("the corpus's source export (../shared/samples) is not here")
    for name in names:
        with nsysql.open(cases[name].arg, cache_dir=tmp_path / name) as ex:
            screen, exact = ex.run("analysis._sanity_screen"), ex.run("analysis.sanity")
        assert screen.rows() == exact.rows(), name
        counted = exact.select("negative", "repeated", "duplicates").sum_horizontal().sum()
        assert (counted == 0) == (name == "_good"), name  # the damaged cases are damaged where the screen looks
        by_table = {r["table_name"]: (r["negative"], r["repeated"], r["duplicates"]) for r in screen.iter_rows(named=True)}
        for table, plain in plain_sanity(cases[name].arg).items():  # the same counts from SQLite itself
            assert by_table[table] == plain, (name, table)
    cpu_only = REPO / "fixtures" / "cpu-nvtx-osrt-nsys2022.4" / "export.sqlite.xz"  # no kernel, copy or set rows
    with nsysql.open(cpu_only, cache_dir=tmp_path / "cpu") as ex:
        assert ex.run("analysis._sanity_screen").rows() == ex.run("analysis.sanity").rows()


def plain_sanity(export) -> dict[str, tuple[int, int, int]]:
    """negative, repeated and duplicates of the kernel and CUDA call rows, counted by SQLite on the export itself
    (the markers `eventClass` 31/32 of OSRT_API play no part here)."""
    db = sqlite3.connect(f"file:{export}?mode=ro", uri=True)
    identity = {KERNEL_TABLE: 'deviceId, streamId, start, "end", correlationId',
                RUNTIME_TABLE: 'globalTid, start, "end", correlationId'}
    out = {}
    for table, name in ((KERNEL_TABLE, "kernel"), (RUNTIME_TABLE, "runtime")):
        rows, negative, ids = db.execute(f'SELECT COUNT(*), COUNT(*) FILTER (WHERE "end" < start), '
                                         f"COUNT(DISTINCT rowid) FROM {table}").fetchone()
        distinct = db.execute(f"SELECT COUNT(*) FROM (SELECT DISTINCT {identity[table]} FROM {table})").fetchone()[0]
        out[name] = (negative, rows - ids, rows - distinct)
    db.close()
    return out


KERNEL_TABLE, RUNTIME_TABLE = "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME"
