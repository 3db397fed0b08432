"""The reliability tests of the cache (issue 42), beside the corpus of bad inputs (tests/test_bad_inputs.py): the
cache tried the way trusted tools are tried. Concurrent first opens of different commands; damage anywhere in the
cache file; stored answers changed, swapped or another export's; `cache clear`/`prune` where removal fails; an
unwritable or full cache directory; a build lock held by a stopped process; a kill at several points of a cold
build; an input changed underneath with its mtime restored. Each: the right answer or one clear line, never a
traceback. The classes are the test units, so that `--dist loadscope` spreads them over the workers."""
from __future__ import annotations

import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

import nsysql
from nsysql.cli.app import app
from nsysql.sql import catalog
from nsysql.store import hygiene, importer
from nsysql.store import stored as answers

from conftest import FIXTURES

REPO = Path(__file__).resolve().parent.parent
EXPORT = FIXTURES / "gpt-tiny-train-fp32" / "export.sqlite.xz"
NSYSQL = [sys.executable, "-m", "nsysql.cli.app"]
ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def _env(tmp_path: Path, **more: str) -> dict:
    tmp = tmp_path / "tmp"
    tmp.mkdir(exist_ok=True)
    return {**os.environ, "TMPDIR": str(tmp), "COLUMNS": "100", "NSYSQL_AHEAD": "off", **more}


def _cli(args: list[str], **env: str):
    return CliRunner().invoke(app, args, env={"COLUMNS": "100", "NSYSQL_AHEAD": "off", **env})


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def _no_traceback(*texts: str) -> None:
    for text in texts:
        assert "Traceback" not in text, text


# -- 1. concurrent first opens ----------------------------------------------------------------------------------
# One long-lived process per command, each running it in-process (CliRunner) on the cache directory it reads on
# stdin: 4 processes open a cold export together 20 times without paying Python's start 80 times.
WORKER = """
import json, sys
from typer.testing import CliRunner
from nsysql.cli.app import app
args = json.loads(sys.argv[1])
print("ready", flush=True)
for line in sys.stdin:
    res = CliRunner().invoke(app, args + ["--cache-dir", line.strip()])
    crash = None if res.exception is None or isinstance(res.exception, SystemExit) else repr(res.exception)
    print(json.dumps({"code": res.exit_code, "out": res.stdout, "err": res.stderr, "crash": crash}), flush=True)
"""
CONCURRENT = [["summarize", str(EXPORT)], ["layers", str(EXPORT), "-f", "csv"],
              ["kernels", str(EXPORT), "-f", "csv"], ["critical-path", str(EXPORT), "-f", "csv"]]
ROUNDS = 20


def _quiet(err: str) -> list[str]:
    """stderr less the notes of a wait (shown only when a wait lasts 2 s, as on a loaded machine)."""
    return [line for line in err.splitlines() if not line.startswith("note: waiting for")]


@pytest.mark.heavy  # 80 cold first opens in 4 processes: the longest class: dealt out first under xdist (conftest.py)
class TestConcurrentFirstOpens:
    def test_four_commands_on_a_cold_export_twenty_times(self, tmp_path):
        env = _env(tmp_path, NSYSQL_BUILD_WORKERS="1")
        workers = [subprocess.Popen([sys.executable, "-c", WORKER, json.dumps(args)], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, text=True, env=env, cwd=REPO) for args in CONCURRENT]
        try:
            for w in workers:
                assert w.stdout.readline().strip() == "ready"

            def ask(chosen, cache: Path) -> list[dict]:
                for w in chosen:
                    w.stdin.write(f"{cache}\n")
                    w.stdin.flush()
                return [json.loads(w.stdout.readline()) for w in chosen]

            alone = [ask([w], tmp_path / "alone")[0] for w in workers]  # one after another, one cache
            for args, done in zip(CONCURRENT, alone):
                assert done["code"] == 0 and done["crash"] is None, (args, done["err"])
            for n in range(ROUNDS):
                together = ask(workers, tmp_path / f"round-{n}")
                for args, done, reference in zip(CONCURRENT, together, alone):
                    where = f"round {n + 1}/{ROUNDS}, {args[0]}: exit {done['code']}\n{done['err']}{done['crash']}"
                    assert done["code"] == 0 and done["crash"] is None, where
                    assert done["out"] == reference["out"], where
                    assert _quiet(done["err"]) == _quiet(reference["err"]), where
                cache = tmp_path / f"round-{n}"
                assert len(list(cache.glob("*.duckdb"))) == 1, "one cache built, not one per command"
                assert not list(cache.glob(".building-*"))
                shutil.rmtree(cache)
        finally:
            for w in workers:
                w.stdin.close()
            for w in workers:
                w.wait(timeout=60)


# -- 2. damage anywhere in the cache file ------------------------------------------------------------------------
def _same_rows(a: pl.DataFrame, b: pl.DataFrame) -> bool:
    """The same rows, in any order (a build on several threads writes some tables' rows in another order)."""
    return a.schema == b.schema and a.sort(a.columns).equals(b.sort(b.columns))


@pytest.mark.heavy  # 16 damaged caches rebuilt: dealt out first under xdist (conftest.py)
class TestDamageAnywhere:
    def test_each_sixteenth_of_the_file_damaged_is_built_again(self, tmp_path):
        """64 KiB of random bytes at the start of each 1/16th of the cache file in turn, its answers and facts
        removed: `nsysql parquet` reads every block of every table, and writes the sound cache's tables, with one
        warning (damage in a block no query reads needs no rebuild)."""
        cache = tmp_path / "cache"

        def tables(args: list[str], out: Path):
            done = _cli([*args, "--cache-dir", str(cache)])
            _no_traceback(done.output)
            files = sorted(out.rglob("*.parquet"))
            return done, {f.relative_to(out): pl.read_parquet(f) for f in files}

        sound, expected = tables(["parquet", str(EXPORT), "-o", str(tmp_path / "sound")], tmp_path / "sound")
        assert sound.exit_code == 0 and len(expected) > 20, sound.output
        (cache_file,) = cache.glob("*.duckdb")
        pristine = cache_file.read_bytes()
        rebuilt = 0
        for part in range(16):
            cache_file.write_bytes(pristine)
            answers.discard(cache_file)
            with cache_file.open("r+b") as f:
                f.seek(part * len(pristine) // 16)
                f.write(random.Random(part).randbytes(64 * 1024))
            out = tmp_path / f"part-{part}"
            done, got = tables(["parquet", str(EXPORT), "-o", str(out)], out)
            where = f"part {part}: exit {done.exit_code}\n{done.stderr}"
            assert done.exit_code == 0, where
            assert got.keys() == expected.keys() and all(_same_rows(got[k], expected[k]) for k in got), where
            told = _lines(done.stderr)
            if told:
                assert len(told) == 1 and told[0].startswith(f"warning: the cache of {EXPORT.name} was damaged ("), where
                assert told[0].endswith("; building it again"), where
                rebuilt += 1
            shutil.rmtree(out)
        assert rebuilt >= 12, f"only {rebuilt} of 16 damaged parts were found"

    def test_the_block_the_first_query_reads_damaged(self, tmp_path):
        """The issue's case: 64 KiB of random bytes over the block that holds the raw tables the export held, its
        answers and facts removed: summarize's first query (of nsysql_tables, for the sanity checks) reads it, and
        ran outside the guard, so every command failed with `IO Error: Corrupt database file` until `cache clear`."""
        import duckdb
        cache = tmp_path / "cache"
        args = ["summarize", str(EXPORT), "-f", "json", "--cache-dir", str(cache)]
        sound = _cli(args)
        assert sound.exit_code == 0, sound.output
        (cache_file,) = cache.glob("*.duckdb")
        con = duckdb.connect(str(cache_file), read_only=True)
        block, offset = con.execute("SELECT block_id, block_offset FROM pragma_storage_info('nsysql_tables') "
                                    "WHERE block_id >= 0 ORDER BY block_id LIMIT 1").fetchone()
        con.close()
        answers.discard(cache_file)
        with cache_file.open("r+b") as f:  # DuckDB's file: 3 headers of 4 KiB, then blocks of 256 KiB
            f.seek(3 * 4096 + block * 256 * 1024 + offset)
            f.write(random.Random(8).randbytes(64 * 1024))
        done = _cli(args)
        _no_traceback(done.output)
        assert done.exit_code == 0 and done.stdout == sound.stdout, done.stderr
        told = _lines(done.stderr)
        assert len(told) == 1 and "was damaged (IO Error: Corrupt database file" in told[0], told
        again = _cli(args)
        assert (again.exit_code, again.stdout, again.stderr) == (0, sound.stdout, "")

    def test_damaged_again_after_a_rebuild_is_one_line(self, tmp_path, monkeypatch):
        """A cache that is damaged again once built again (a failing disk) is said in one line, not rebuilt in a
        loop."""
        import duckdb

        from nsysql.store import store
        with nsysql.open(EXPORT, cache_dir=tmp_path) as ex:
            ex.steps()
        damaged = duckdb.IOException("IO Error: Corrupt database file: computed checksum 1 does not match stored "
                                     "checksum 2 in block at location 3")

        def always(self):
            raise damaged
        monkeypatch.setattr(store.Store, "_connect", always)
        answers.discard(next(tmp_path.glob("*.duckdb")))
        ex = nsysql.open(EXPORT, cache_dir=tmp_path)
        ex.on_notice = lambda line: None
        with pytest.raises(nsysql.NsysqlError, match="damaged again after it was built again") as raised:
            ex.steps()
        assert "\n" not in str(raised.value)
        ex.close()


# -- 3. stored answers: identity and checksum ----------------------------------------------------------------------
def _steps_file(cache_path: Path, query: str = "analysis.steps") -> Path:
    q = catalog.get(query)
    return answers.path(cache_path, q, q.bound_params(q.stated_defaults()))


@pytest.fixture(scope="module")
def sound(export_files, tmp_path_factory):
    """Two exports (plain copies, so that their caches are named in a directory of this class) with their caches
    and answers (summarize's, and steps'), and their summarize JSON."""
    where = tmp_path_factory.mktemp("answers")
    mine = shutil.copyfile(export_files["gpt-tiny-train-fp32"], where / "mine.sqlite")
    other = shutil.copyfile(export_files["gpt-tiny-forward"], where / "other.sqlite")
    cache = where / "sound"
    out = {}
    for p in (mine, other):
        done = _cli(["summarize", str(p), "-f", "json", "--cache-dir", str(cache)])
        assert done.exit_code == 0, done.output
        out[p] = done.stdout
    assert _cli(["steps", str(mine), "-f", "csv", "--cache-dir", str(cache)]).exit_code == 0
    assert out[mine] != out[other]
    return where, mine, other, out


class TestStoredAnswersChecked:
    @pytest.fixture()
    def two(self, sound):
        """A copy of the sound cache directory for one test (the caches are keyed by the exports' paths, which
        stay): (cache directory, mine, other, summarize JSON of each, each one's cache file)."""
        where, mine, other, out = sound
        cache = where / f"cache-{time.monotonic_ns()}"
        shutil.copytree(where / "sound", cache)
        paths = {}
        for p in (mine, other):
            with nsysql.open(p, cache_dir=cache) as ex:
                paths[p] = ex.cache_path
        yield cache, mine, other, out, paths
        shutil.rmtree(cache)

    def test_another_exports_cache_and_answers_under_this_name(self, two):
        cache, mine, other, out, paths = two
        shutil.copyfile(paths[other], paths[mine])
        shutil.rmtree(answers.directory(paths[mine]))
        shutil.copytree(answers.directory(paths[other]), answers.directory(paths[mine]))
        args = ["summarize", str(mine), "-f", "json", "--cache-dir", str(cache)]
        done = _cli(args)
        assert done.exit_code == 0 and done.stdout == out[mine], done.stderr
        told = _lines(done.stderr)
        assert len(told) == 1 and "not built from this export" in told[0], told
        again = _cli(args)
        assert (again.exit_code, again.stdout, again.stderr) == (0, out[mine], "")

    def test_another_exports_answers_under_this_name(self, two):
        """Only the answers folder is another export's (its cache is this one's): the answers are computed again."""
        cache, mine, other, out, paths = two
        shutil.rmtree(answers.directory(paths[mine]))
        shutil.copytree(answers.directory(paths[other]), answers.directory(paths[mine]))
        done = _cli(["summarize", str(mine), "-f", "json", "--cache-dir", str(cache)])
        assert done.exit_code == 0 and done.stdout == out[mine], done.stderr
        told = _lines(done.stderr)
        assert len(told) == 1 and "computed for another export" in told[0], told

    @pytest.mark.parametrize("query,column,change,command", [
        ("analysis.steps", "wall_ns", lambda v: v * 2, ["steps", "-f", "csv"]),
        ("analysis.step_stats", "mean_ns", lambda v: v / 2, ["summarize", "-f", "json"])])
    def test_a_value_changed_in_a_stored_answer(self, two, query, column, change, command):
        cache, mine, _, _, paths = two
        file = _steps_file(paths[mine], query)
        frame = pl.read_parquet(file)
        kept = pl.read_parquet_metadata(file)  # the record kept as it was: only the rows change
        edited = frame.with_columns(pl.when(pl.int_range(pl.len()) == 0).then(change(pl.col(column)))
                                    .otherwise(pl.col(column)).alias(column))
        assert not edited.equals(frame)
        edited.write_parquet(file, metadata=kept)
        reference = _cli([command[0], str(mine), *command[1:], "--no-cache"])
        done = _cli([command[0], str(mine), *command[1:], "--cache-dir", str(cache)])
        assert done.exit_code == 0 and done.stdout == reference.stdout, done.stderr
        told = _lines(done.stderr)
        assert len(told) == 1 and f"stored answer of {query} of mine.sqlite was changed" in told[0], told
        assert pl.read_parquet(file).equals(frame), "stored again as computed"
        edited.write_parquet(file, metadata=kept)
        q = catalog.get(query)
        with pytest.raises(answers.Mismatch, match="checksum"):
            answers.load(paths[mine], q, q.bound_params(q.stated_defaults()))

    def test_one_answer_copied_over_another(self, two):
        cache, mine, _, _, paths = two
        shutil.copyfile(_steps_file(paths[mine], "analysis.top_api"), _steps_file(paths[mine]))
        reference = _cli(["steps", str(mine), "-f", "csv", "--no-cache"])
        done = _cli(["steps", str(mine), "-f", "csv", "--cache-dir", str(cache)])
        assert done.exit_code == 0 and done.stdout == reference.stdout, done.stderr
        told = _lines(done.stderr)
        assert len(told) == 1 and "it is the answer of analysis.top_api" in told[0], told

    def test_a_changed_fact(self, two):
        """A fact kept beside the cache (the raw tables the export held) edited: read from the cache again."""
        cache, mine, _, _, paths = two
        file = answers.directory(paths[mine]) / "raw_tables.json"
        kept = json.loads(file.read_text())
        kept["fact"] = [t for t in kept["fact"] if t != "CUPTI_ACTIVITY_KIND_KERNEL"]
        file.write_text(json.dumps(kept))
        done = _cli(["kernels", str(mine), "-f", "csv", "--cache-dir", str(cache)])
        assert done.exit_code == 0 and done.stdout.count("\n") > 10, done.output
        told = _lines(done.stderr)
        assert len(told) == 1 and "stored fact 'raw_tables'" in told[0], told


# -- 4. cache clear / prune say what they removed and what they could not -------------------------------------------
class TestClearAndPruneAreHonest:
    @pytest.fixture()
    def cache(self, export_files, tmp_path):
        cache = tmp_path / "cache"
        for name in ("gpt-tiny-train-fp32", "gpt-tiny-forward"):
            with nsysql.open(export_files[name], cache_dir=cache) as ex:
                ex.steps()
        used = time.time() - 7200  # used 2 h ago: prune keeps what was used in the last minute
        for e in hygiene.entries(cache):
            os.utime(e.paths[0], (used, used))
        assert len(hygiene.entries(cache)) == 2
        return cache

    @staticmethod
    def _refuse(monkeypatch, only: str | None = None):
        """Removal fails with EACCES (for paths naming `only`, or all): what a read-only directory does to a user
        other than root, done this way so that it fails for root too."""
        real_unlink, real_rmdir = os.unlink, os.rmdir

        def refused(real):
            def call(path, *args, **kwargs):
                if only is None or only in os.fspath(path):
                    raise PermissionError(13, "Permission denied", os.fspath(path))
                return real(path, *args, **kwargs)
            return call
        monkeypatch.setattr(os, "unlink", refused(real_unlink))
        monkeypatch.setattr(os, "rmdir", refused(real_rmdir))

    @pytest.mark.parametrize("command", [["cache", "clear"], ["cache", "prune", "--cache-size", "0"]])
    def test_nothing_removable_is_an_error(self, cache, monkeypatch, command):
        before = sorted(p.name for p in cache.iterdir())
        self._refuse(monkeypatch)
        done = _cli(command + ["--cache-dir", str(cache)])
        monkeypatch.undo()
        assert done.exit_code == 1 and done.stdout == "", done.output
        (line,) = _lines(done.stderr)
        assert line.startswith("Error: could not remove any of the 2 entries") and "Permission denied" in line
        assert sorted(p.name for p in cache.iterdir()) == before

    def test_what_was_removed_and_what_was_not(self, cache, monkeypatch):
        kept = hygiene.entries(cache)[0]
        key = kept.name.rsplit("-", 1)[1].split(".")[0]
        self._refuse(monkeypatch, only=key)
        done = _cli(["cache", "clear", "--cache-dir", str(cache)])
        monkeypatch.undo()
        assert done.exit_code == 0, done.output
        assert done.stdout.startswith("removed 1 entries, ")
        (line,) = _lines(done.stderr)
        assert line.startswith("warning: could not remove 1 entries") and kept.name in line
        assert [e.name for e in hygiene.entries(cache)] == [kept.name]

    @pytest.mark.skipif(ROOT, reason="root ignores a directory's mode, so chmod cannot make removal fail; "
                                     "test_nothing_removable_is_an_error makes it fail for root too")
    def test_a_read_only_cache_directory(self, cache):
        before = sorted(p.name for p in cache.iterdir())
        os.chmod(cache, 0o555)
        try:
            done = subprocess.run(NSYSQL + ["cache", "clear", "--cache-dir", str(cache)], capture_output=True,
                                  text=True, timeout=120)
        finally:
            os.chmod(cache, 0o755)
        assert done.returncode == 1 and "could not remove any of the 2 entries" in done.stderr, done.stderr
        assert sorted(p.name for p in cache.iterdir()) == before


# -- 5. an unwritable or full cache directory: a private temporary cache, and the answer ----------------------------
def _fallback_warning(lines: list[str]) -> None:
    assert len(lines) == 1, lines
    line = lines[0]
    assert line.startswith("warning: cannot write the cache directory ") and "private temporary cache" in line
    for named in ("--cache-dir", "NSYSQL_CACHE_DIR", "--no-cache"):
        assert named in line, line


class TestUnwritableCacheDirectory:
    def test_a_cache_directory_that_cannot_be_made(self, tmp_path):
        """Its parent is a file (ENOTDIR even for root): the answer comes, from a private temporary cache that
        leaves nothing behind."""
        env = _env(tmp_path)
        reference = subprocess.run(NSYSQL + ["steps", str(EXPORT), "-f", "csv", "--no-cache"], env=env,
                                   capture_output=True, text=True, timeout=300)
        (tmp_path / "file").write_text("not a directory")
        done = subprocess.run(NSYSQL + ["steps", str(EXPORT), "-f", "csv", "--cache-dir", str(tmp_path / "file" / "c")],
                              env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0 and done.stdout == reference.stdout, done.stderr
        _fallback_warning(_lines(done.stderr))
        assert "Not a directory" in done.stderr
        assert list((tmp_path / "tmp").iterdir()) == [], "the private cache goes with the run"

    def test_a_full_cache_directory(self, tmp_path, monkeypatch):
        """The disk is full where the cache is built (DuckDB's CHECKPOINT fails), not in TMPDIR."""
        import duckdb
        cache = tmp_path / "cache"
        full = duckdb.IOException('IO Error: Could not write file "x": No space left on device')
        real = importer.connect

        class FullAtCheckpoint:
            def __init__(self, con):
                self._con = con

            def __getattr__(self, name):
                return getattr(self._con, name)

            def execute(self, sql, *args):
                if sql.strip().upper() == "CHECKPOINT":
                    raise full
                return self._con.execute(sql, *args)

        def connect(target, *args, **kwargs):
            con = real(target, *args, **kwargs)
            return FullAtCheckpoint(con) if Path(target).parent == cache else con
        reference = _cli(["steps", str(EXPORT), "-f", "csv", "--no-cache"])
        monkeypatch.setattr(importer, "connect", connect)
        done = _cli(["steps", str(EXPORT), "-f", "csv", "--cache-dir", str(cache)])
        assert done.exit_code == 0 and done.stdout == reference.stdout, done.output
        _fallback_warning(_lines(done.stderr))
        assert "No space left on device" in done.stderr
        assert not list(cache.glob("*.duckdb")) and not list(cache.glob(".building-*"))

    def test_an_unpacked_export_that_does_not_fit(self, tmp_path, monkeypatch):
        """The .xz export's copy cannot be written into the cache directory: the same fallback."""
        import tempfile
        cache = tmp_path / "cache"
        real = tempfile.mkstemp

        def mkstemp(*args, **kwargs):
            if Path(kwargs.get("dir") or ".") == cache:
                raise OSError(28, "No space left on device")
            return real(*args, **kwargs)
        reference = _cli(["steps", str(EXPORT), "-f", "csv", "--no-cache"])
        monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
        done = _cli(["steps", str(EXPORT), "-f", "csv", "--cache-dir", str(cache)])
        assert done.exit_code == 0 and done.stdout == reference.stdout, done.output
        _fallback_warning(_lines(done.stderr))

    @pytest.mark.skipif(ROOT, reason="root ignores a directory's mode: chmod cannot make it read-only "
                                     "(test_a_cache_directory_that_cannot_be_made fails for root too)")
    def test_a_read_only_cache_directory(self, tmp_path):
        cache = tmp_path / "ro"
        cache.mkdir()
        os.chmod(cache, 0o555)
        try:
            done = subprocess.run(NSYSQL + ["steps", str(EXPORT), "-f", "csv", "--cache-dir", str(cache)],
                                  env=_env(tmp_path), capture_output=True, text=True, timeout=300)
        finally:
            os.chmod(cache, 0o755)
        assert done.returncode == 0 and done.stdout, done.stderr
        _fallback_warning(_lines(done.stderr))

    def test_the_library_warns_and_answers(self, tmp_path):
        (tmp_path / "file").write_text("")
        with pytest.warns(UserWarning, match="`use_cache=False`"):
            ex = nsysql.open(EXPORT, cache_dir=tmp_path / "file" / "c")
        try:
            assert ex.steps().height > 0 and not ex.store.keeps_answers
        finally:
            ex.close()


# -- 6. a build lock held by a stopped process -----------------------------------------------------------------------
def _stopped_holder(cache: Path, env: dict) -> subprocess.Popen:
    """A `summarize` stopped (SIGSTOP) while it builds, holding the build lock: on a cold export its first build;
    on one that a report opened before (`cuda_gpu_kern_sum` reads no table built on first use), those tables."""
    holder = subprocess.Popen(NSYSQL + ["summarize", str(EXPORT), "--cache-dir", str(cache)], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and holder.poll() is None:
        if cache.is_dir() and any(p.name.startswith(f".building-{holder.pid}@") for p in cache.iterdir()):
            holder.send_signal(signal.SIGSTOP)
            return holder
        time.sleep(0.002)
    holder.kill()
    pytest.fail("the holder's build never started")


@pytest.mark.heavy  # stopped and resumed CLI processes: dealt out first under xdist (conftest.py)
class TestStoppedLockHolder:
    def test_a_waiter_names_the_holder_and_gives_up(self, tmp_path):
        """The issue's case: a summarize stopped while it adds the tables built on first use; `steps`, which reads
        one of them, waited with no limit, saying nothing on a pipe."""
        env = _env(tmp_path, NSYSQL_LOCK_STALL_S="3")
        cache = tmp_path / "cache"
        first = _cli(["report", "cuda_gpu_kern_sum", str(EXPORT), "--cache-dir", str(cache)])
        assert first.exit_code == 0, first.output
        holder = _stopped_holder(cache, env)
        try:
            started = time.monotonic()
            done = subprocess.run(NSYSQL + ["steps", str(EXPORT), "-f", "csv", "--cache-dir", str(cache)],
                                  env=env, capture_output=True, text=True, timeout=60)  # stderr: a pipe
            waited = time.monotonic() - started
            _no_traceback(done.stderr)
            assert done.returncode == 1 and done.stdout == "", done.stderr
            note, error = _lines(done.stderr)
            assert note.startswith(f"note: waiting for the cache of {EXPORT.name}: pid {holder.pid} (nsysql "
                                   f"summarize {EXPORT} ") and ", since " in note, note
            assert error.startswith(f"Error: gave up waiting for the cache of {EXPORT.name}: pid {holder.pid} "), error
            assert "is stopped (no progress for 3 s)" in error and f"kill {holder.pid}" in error, error
            assert error.endswith("run without the cache (--no-cache)"), error
            assert waited < 60, "a bounded wait"
            # the way out it offers works while the holder is still stopped
            alone = subprocess.run(NSYSQL + ["steps", str(EXPORT), "-f", "csv", "--no-cache"], env=env,
                                   capture_output=True, text=True, timeout=300)
            assert alone.returncode == 0 and alone.stdout, alone.stderr
        finally:
            holder.kill()  # a stopped process dies of SIGKILL too
            holder.wait(timeout=60)
        after = subprocess.run(NSYSQL + ["steps", str(EXPORT), "-f", "csv", "--cache-dir", str(cache)], env=env,
                               capture_output=True, text=True, timeout=300)
        assert after.returncode == 0 and after.stdout == alone.stdout and after.stderr == "", after.stderr
        assert not [p for p in cache.iterdir() if p.name.startswith(".building-")]

    def test_a_holder_that_resumes_is_waited_for(self, tmp_path):
        env = _env(tmp_path, NSYSQL_LOCK_STALL_S="30")
        cache = tmp_path / "cache"
        holder = _stopped_holder(cache, env)
        try:
            waiter = subprocess.Popen(NSYSQL + ["steps", str(EXPORT), "-f", "csv", "--cache-dir", str(cache)],
                                      env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            time.sleep(3)
            assert waiter.poll() is None, "it waits"
            holder.send_signal(signal.SIGCONT)
            out, err = waiter.communicate(timeout=300)
            assert holder.wait(timeout=300) == 0
        finally:
            holder.kill()
            holder.wait(timeout=60)
        assert waiter.returncode == 0 and out, err
        assert _lines(err) and all(line.startswith("note: waiting for the cache of") for line in _lines(err)), err
        assert len(list(cache.glob("*.duckdb"))) == 1

    def test_a_bad_stall_setting_is_one_line(self, tmp_path):
        env = _env(tmp_path, NSYSQL_LOCK_STALL_S="soon")
        done = subprocess.run(NSYSQL + ["steps", str(EXPORT), "--cache-dir", str(tmp_path / "c")], env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 1 and _lines(done.stderr) == [
            "Error: NSYSQL_LOCK_STALL_S='soon' is not a positive number of seconds; unset it for the default (60)"]

    def test_the_lock_says_who_holds_it(self, tmp_path):
        from nsysql.store import lock
        with lock.held(tmp_path / "a.answers", "the cache of x"):
            record = lock.holder(lock.lock_file(tmp_path / "a.answers"))
            assert record is not None and record["pid"] == os.getpid()
            assert lock.describe(record).startswith(f"pid {os.getpid()} (")
        assert lock.holder(lock.lock_file(tmp_path / "a.answers")) is None, "nobody holds it now"


# -- 7. the crash, disk-full and input-change cases -------------------------------------------------------------------
@pytest.fixture(scope="module")
def undisturbed() -> str:
    """summarize's JSON of EXPORT, from a cache of its own."""
    done = _cli(["summarize", str(EXPORT), "-f", "json", "--no-cache"])
    assert done.exit_code == 0, done.output
    return done.stdout


@pytest.mark.heavy  # a cold build killed at three points: dealt out first under xdist (conftest.py)
class TestCrashesAndChangedInputs:
    @pytest.mark.parametrize("point", ["locked", "building", "built"])
    def test_sigkill_at_a_point_of_a_cold_build(self, tmp_path, point, undisturbed):
        """SIGKILL once the lock is taken, while the cache is built, once it is in place (answers being written):
        the next run gives the same JSON as an undisturbed one and removes what the killed run left."""
        env = _env(tmp_path, NSYSQL_AHEAD="foreground")
        cache = tmp_path / "cache"
        proc = subprocess.Popen(NSYSQL + ["summarize", str(EXPORT), "-f", "json", "--cache-dir", str(cache)],
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            names = [p.name for p in cache.iterdir()] if cache.is_dir() else []
            if ((point == "locked" and any(n.endswith(".answers") for n in names)) or
                    (point == "building" and any(n.startswith(".building-") for n in names)) or
                    (point == "built" and any(n.endswith(".duckdb") for n in names))):
                break
            time.sleep(0.002)
        proc.kill()
        proc.wait(timeout=60)
        done = subprocess.run(NSYSQL + ["summarize", str(EXPORT), "-f", "json", "--cache-dir", str(cache)], env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0 and done.stdout == undisturbed, done.stderr
        assert not [p for p in cache.iterdir() if p.name.startswith((".building-", ".unpacking-"))]
        assert not list((tmp_path / "tmp").iterdir())

    def test_an_input_changed_with_its_mtime_restored(self, export_files, tmp_path):
        path = shutil.copyfile(export_files["gpt-tiny-train-fp32"], tmp_path / "run.sqlite")
        cache = tmp_path / "cache"
        count = "SELECT count(*) AS n FROM kernel"
        with nsysql.open(path, cache_dir=cache) as ex:
            before = ex.sql(count)["n"][0]
        st = path.stat()
        con = sqlite3.connect(path)
        con.execute("DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE rowid % 2 = 0")
        con.commit()
        con.close()
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
        with nsysql.open(path, cache_dir=cache) as ex:
            assert not ex.cache_hit
            assert ex.sql(count)["n"][0] < before
