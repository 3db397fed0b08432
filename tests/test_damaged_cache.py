"""A damaged cache file (a truncated copy, a disk error, a file overwritten) is built again from the export, with
one warning line, and the command's answer is the one a sound cache gives; the export itself is never touched."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import nsysql

NSYSQL = [sys.executable, "-m", "nsysql.cli.app"]
EXPORT = "gpt-tiny-forward"


def damage(path: Path, how: str) -> None:
    data = bytearray(path.read_bytes())
    n = len(data)
    if how == "checksum":  # every block after the headers overwritten: DuckDB's block checksums fail
        data[8192:n - 8192] = b"\x17" * (n - 16384)
    elif how == "header":
        data[:4096] = bytes(4096)
    elif how == "truncated":
        data = data[:n // 2]
    elif how == "empty":
        data = bytearray()
    path.write_bytes(bytes(data))


def run(args: list[str], cache: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, COLUMNS="100", NSYSQL_AHEAD="off", NSYSQL_CACHE_DIR=str(cache))
    return subprocess.run(NSYSQL + args, capture_output=True, text=True, env=env, timeout=300)


@pytest.fixture(scope="module")
def sound(export_files, tmp_path_factory):
    """(export, a sound cache file, its answers to the commands below)."""
    export = export_files[EXPORT]
    cache = tmp_path_factory.mktemp("sound-cache")
    outputs = {}
    for args in COMMANDS:
        done = run([*args, str(export)], cache)
        assert done.returncode == 0, done.stderr
        outputs[tuple(args)] = (done.stdout, done.stderr)  # layers -f csv says its coverage on stderr
    (cache_file,) = cache.glob("*.duckdb")
    return export, cache_file, outputs


COMMANDS = [["summarize"], ["report", "cuda_gpu_kern_sum", "-f", "csv"], ["layers", "-f", "csv"]]


@pytest.mark.parametrize("how", ["checksum", "header", "truncated", "empty"])
@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: a[0])
def test_a_damaged_cache_is_built_again(sound, tmp_path, how, args):
    export, good, outputs = sound
    before = hashlib.sha256(export.read_bytes()).hexdigest()
    cache = tmp_path / "cache"
    cache.mkdir()
    damaged = cache / good.name
    shutil.copyfile(good, damaged)  # no stored answers: the command has to read the cache file
    damage(damaged, how)
    done = run([*args, str(export)], cache)
    assert done.returncode == 0, done.stderr
    stdout, stderr = outputs[tuple(args)]
    assert done.stdout == stdout
    first, *rest = done.stderr.splitlines(keepends=True)
    assert first.startswith(f"warning: the cache of {export.name} was damaged (IO Error: ")
    assert first.endswith("; building it again\n") and "".join(rest) == stderr
    assert hashlib.sha256(export.read_bytes()).hexdigest() == before
    again = run([*args, str(export)], cache)  # the cache built again is sound: no warning the next time
    assert again.returncode == 0 and (again.stdout, again.stderr) == (stdout, stderr)


def test_the_library_warns_and_answers(sound, tmp_path):
    export, good, _ = sound
    reference = nsysql.open(export, cache_dir=good.parent).report("cuda_gpu_kern_sum")
    damaged = tmp_path / good.name
    shutil.copyfile(good, damaged)
    damage(damaged, "checksum")
    ex = nsysql.open(export, cache_dir=tmp_path)
    with pytest.warns(UserWarning, match="was damaged"):
        got = ex.report("cuda_gpu_kern_sum")
    assert got.equals(reference)
    ex.close()


def test_other_errors_are_not_taken_for_damage(sound, tmp_path):
    """A query's own error stays an error: nothing is rebuilt, the cache file stays."""
    export, good, _ = sound
    shutil.copyfile(good, tmp_path / good.name)
    done = run(["sql", str(export), "SELECT no_such_column FROM kernel"], tmp_path)
    assert done.returncode == 1 and "no_such_column" in done.stderr and "damaged" not in done.stderr
    assert (tmp_path / good.name).read_bytes() == good.read_bytes()


def test_another_exports_cache_is_built_again(tmp_path):
    """A cache file of another export put under this export's cache name is not served: the identity kept in the
    cache differs from the export's, so the cache is built again (one notice) and the answer is this export's."""
    import sqlite3

    from conftest import make_synthetic
    synthetic = make_synthetic()
    mine = synthetic.no_steps().write(tmp_path / "mine.sqlite")
    other = synthetic.two_ranks().write(tmp_path / "other.sqlite")
    count = "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL"
    expected = {p: sqlite3.connect(p).execute(count).fetchone()[0] for p in (mine, other)}
    assert expected[mine] != expected[other]
    cache = tmp_path / "cache"
    with nsysql.open(other, cache_dir=cache) as ex:
        assert ex.sql("SELECT count(*) AS n FROM kernel")["n"][0] == expected[other]
        foreign = ex.cache_path
    with nsysql.open(mine, cache_dir=cache) as ex:
        mine_cache = ex.cache_path
    shutil.copyfile(foreign, mine_cache)  # the other export's cache, under this export's name
    notices = []
    with nsysql.open(mine, cache_dir=cache) as ex:
        ex.on_notice = notices.append
        assert ex.cache_hit
        assert ex.sql("SELECT count(*) AS n FROM kernel")["n"][0] == expected[mine]
    assert len(notices) == 1 and "not built from this export" in notices[0], notices
    with nsysql.open(mine, cache_dir=cache) as ex:  # built again, it is kept: no notice the next time
        ex.on_notice = notices.append
        assert ex.sql("SELECT count(*) AS n FROM kernel")["n"][0] == expected[mine]
    assert len(notices) == 1
